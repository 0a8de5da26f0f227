#!/bin/sh
# What the run's journal (pipeline/journal.h) adds to each command an agent
# runs: a snapshot of the tree before and after every run_command, so a
# rollback knows what the command changed. Measured in a scripted
# `forgex run` against the mock model server on a FILES-file git
# repository: per run_command, the time from its tool_call event to its
# tool_result event, minus the command's own duration_ms (the same command
# run by the sandbox without the journal's snapshots). Also shown for
# comparison: `git status` on the same tree, the cheapest way git itself
# has to see what changed.
#
#   sh bench/journal.sh            FILES=2000 CMDS=10
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
FILES=${FILES:-2000}
CMDS=${CMDS:-10}
bin="$top/build/forgex"
mock="$top/build/mockllm"
[ -x "$bin" ] && [ -x "$mock" ] || { echo "build first: make all build/mockllm" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/forgex-bench.XXXXXX")
mock_pid=
cleanup() {
	[ -n "$mock_pid" ] && kill "$mock_pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
export HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/home/.config" GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
mkdir -p "$HOME" "$XDG_CONFIG_HOME/forgex"

python3 - "$tmp" "$FILES" "$CMDS" <<'PY'
import json, os, sys
tmp, n, cmds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
src = os.path.join(tmp, "work")
for i in range(n):
    d = os.path.join(src, "pkg%02d" % (i % 20))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "m%04d.py" % i), "w") as f:
        f.write("def f%d(x):\n    return x + %d\n" % (i, i))
def call(name, args):
    return {"tool_calls": [{"id": "c", "name": name, "arguments": args}]}
plan = {"summary": "s", "steps": [{"id": "1", "title": "t", "description": "d", "files": []}],
        "acceptance": ["a"]}
steps = [call("submit_plan", plan)]
steps += [call("run_command", {"argv": ["touch", "out%d.txt" % k]})
          for k in range(cmds)]
steps += [call("finish", {"summary": "x"}), call("finish", {"summary": "x"}),
          call("submit_verdict", {"verdict": "PASS", "reasons": ["ok"], "required_fixes": []})]
json.dump({"steps": steps}, open(os.path.join(tmp, "script.json"), "w"))
PY
(cd "$tmp/work" && git init -q && git add -A && git commit -qm init)
"$mock" --script "$tmp/script.json" --port-file "$tmp/port" >/dev/null &
mock_pid=$!
while [ ! -s "$tmp/port" ]; do sleep 0.01; done
cat > "$XDG_CONFIG_HOME/forgex/config.toml" <<TOML
[providers.default]
base_url = "http://127.0.0.1:$(cat "$tmp/port")/v1"
model = "bench"
api_key_env = "FORGEX_BENCH_NO_KEY"
[permissions]
mode = "auto"
TOML
(cd "$tmp/work" && "$bin" -q run "bench" >/dev/null 2>&1) || { echo "the run did not PASS" >&2; exit 1; }
python3 - "$tmp/work" <<'PY'
import glob, json, statistics, sys
work = sys.argv[1]
ev = [json.loads(l) for l in open(glob.glob(work + "/.forgex/runs/*/events.jsonl")[0])]
over, own = [], []
t_call = None
for e in ev:
    if e["type"] == "tool_call" and e.get("name") == "run_command":
        t_call = e["elapsed_ms"]
    elif e["type"] == "command" and t_call is not None:
        dur = e.get("duration_ms") or 0
    elif e["type"] == "tool_result" and e.get("name") == "run_command" and t_call is not None:
        total = e["elapsed_ms"] - t_call
        over.append(total - dur)
        own.append(dur)
        t_call = None
print("run_command calls            %8d" % len(over))
print("the command itself (median)  %8.1f ms" % statistics.median(own))
print("the journal's snapshots      %8.1f ms per command (median; before + after)" % statistics.median(over))
PY
start=$(date +%s%N)
for k in 1 2 3 4 5; do git -C "$tmp/work" status --porcelain >/dev/null; done
end=$(date +%s%N)
python3 -c "import sys; print('git status, same tree         %8.1f ms (mean of 5)' % ((int(sys.argv[2]) - int(sys.argv[1])) / 5e6))" "$start" "$end"
