#!/usr/bin/env python3
"""A tiny MCP server over stdio: the team's notes, searchable by the agents.

    [mcp_servers.notes]
    command = "python3"
    args = ["examples/mcp/notes_server.py"]
    env = { NOTES_DIR = "docs" }

It answers the MCP lifecycle (initialize, then notifications/initialized),
tools/list and tools/call, one JSON-RPC message per line on stdin/stdout.
Anything for a person goes to stderr (forgex keeps it in the run folder).
"""
import json
import os
import sys

NOTES = os.environ.get("NOTES_DIR", ".")
TOOLS = [{
    "name": "search_notes",
    "description": "Find the lines of the notes (*.md) that contain a word.",
    "inputSchema": {"type": "object", "properties": {"word": {"type": "string"}},
                    "required": ["word"]},
    "annotations": {"readOnlyHint": True},
}]


def search(word):
    hits = []
    for root, _, files in os.walk(NOTES):
        for name in sorted(files):
            if name.endswith(".md"):
                path = os.path.join(root, name)
                with open(path, errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        if word.lower() in line.lower():
                            hits.append(f"{path}:{n}: {line.rstrip()}")
    return "\n".join(hits[:50]) or f"no note mentions {word!r}"


def answer(msg):
    method, params = msg.get("method"), msg.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "notes", "version": "1.0"}}
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call" and params.get("name") == "search_notes":
        word = (params.get("arguments") or {}).get("word", "")
        return {"content": [{"type": "text", "text": search(word)}]}
    raise LookupError(method)


for line in sys.stdin:
    if not line.strip():
        continue
    msg = json.loads(line)
    if "id" not in msg:
        continue  # a notification: nothing to answer
    try:
        reply = {"jsonrpc": "2.0", "id": msg["id"], "result": answer(msg)}
    except LookupError as e:
        reply = {"jsonrpc": "2.0", "id": msg["id"],
                 "error": {"code": -32601, "message": f"unknown method {e}"}}
    print(json.dumps(reply), flush=True)
