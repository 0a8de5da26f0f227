#!/usr/bin/env python3
"""A pre_tool hook: no agent writes under migrations/; a person does.

    [[hooks.pre_tool]]
    matcher = "write_file|edit_file|delete_file|move_file|apply_patch"
    command = ["python3", "examples/hooks/no_migrations.py"]

forgex gives the hook the call as one JSON object on stdin (event, run_id,
workspace, role, tool, arguments). Exit 2 blocks the call; what the hook
writes on stderr is the reason the model is told.
"""
import json
import sys

call = json.load(sys.stdin)
args = call.get("arguments", {})
paths = [args.get(k, "") for k in ("path", "from", "to")]
# apply_patch names its files inside the patch text
for line in args.get("input", args.get("patch", "")).splitlines():
    for mark in ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "):
        if line.startswith(mark):
            paths.append(line[len(mark):].strip())
for p in paths:
    if p.replace("\\", "/").lstrip("./").startswith("migrations/"):
        sys.stderr.write(f"{p}: migrations are written by a person, not by the {call['role']}; "
                         "describe the schema change in your summary instead\n")
        sys.exit(2)
