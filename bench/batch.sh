#!/bin/sh
# forgex batch: tasks per minute at -j 1, 2 and 4 against the mock model
# server (build/mockllm, a script that answers every role at once, so any
# number of tasks may talk to it), and forgex's own overhead per task: the
# batch's set-up and tear-down of a task's tree (the mirror, the worktree
# made and removed, the run folder moved, the result written: the
# results' overhead_seconds), the run itself excluded, against `git
# worktree add --detach` + `git worktree remove --force` alone on the same
# mirror in the same run. Making a passing task's patch (`git add -N` and
# `git diff`, the results' patch_seconds) is shown apart: git alone makes
# none.
# Target (issue 23): the overhead within 2x of the git commands alone.
#
#   sh bench/batch.sh            TASKS=8 RUNS=20
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
TASKS=${TASKS:-8}
RUNS=${RUNS:-20}
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
export HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/home/.config" XDG_CACHE_HOME="$tmp/cache"
export GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
mkdir -p "$HOME/.config/forgex"

# a repository whose add() is wrong, and a model that fixes it in every task
mkdir "$tmp/repo"
printf 'def add(a, b):\n    return a - b\n' > "$tmp/repo/calc.py"
printf 'import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n' > "$tmp/repo/test_calc.py"
printf '__pycache__/\n' > "$tmp/repo/.gitignore"
git -C "$tmp/repo" init -q && git -C "$tmp/repo" add -A && git -C "$tmp/repo" commit -qm init
commit=$(git -C "$tmp/repo" rev-parse HEAD)
cat > "$tmp/script.json" <<'JSON'
{"on_match": [
 {"body_contains": "You are the Supervisor", "tool_calls": [{"id": "sv", "name": "submit_verdict", "arguments": {"verdict": "PASS", "reasons": ["ok"], "required_fixes": []}}]},
 {"body_contains": "You are the Expert Coder", "tool_calls": [{"id": "ex", "name": "finish", "arguments": {"summary": "done"}}]},
 {"body_contains": "bx-edit-1", "tool_calls": [{"id": "bf", "name": "finish", "arguments": {"summary": "done"}}]},
 {"body_contains": "You are the Builder", "tool_calls": [{"id": "bx-edit-1", "name": "edit_file", "arguments": {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}}]},
 {"body_contains": "You are the Architect", "tool_calls": [{"id": "ar", "name": "submit_plan", "arguments": {"summary": "Fix add", "steps": [{"id": "1", "title": "fix", "description": "a + b", "files": ["calc.py"]}], "acceptance": ["ok"]}}]}
], "steps": []}
JSON
"$mock" --script "$tmp/script.json" --port-file "$tmp/port" >/dev/null 2>&1 &
mock_pid=$!
i=0
while [ ! -s "$tmp/port" ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i + 1)); done
port=$(cat "$tmp/port")
cat > "$HOME/.config/forgex/config.toml" <<EOF2
[providers.default]
base_url = "http://127.0.0.1:$port/v1"
model = "mock-model"
api_key_env = "FX_BENCH_NO_KEY"
max_retries = 0
[permissions]
mode = "auto"
[pipeline]
test_command = ["python3", "-m", "unittest"]
EOF2
i=0
: > "$tmp/tasks.jsonl"
while [ $i -lt "$TASKS" ]; do
	printf '{"id": "t%02d", "repo": "repo", "commit": "%s", "request": "make add add"}\n' \
		$i "$commit" >> "$tmp/tasks.jsonl"
	i=$((i + 1))
done

now() { python3 -c 'import time; print(time.monotonic())'; }

echo "forgex batch, $TASKS tasks on the mock (each a whole forgex run):"
for j in 1 2 4; do
	t0=$(now)
	"$bin" -q batch "$tmp/tasks.jsonl" -j $j --out "$tmp/out-$j" >/dev/null 2>&1 || true
	t1=$(now)
	python3 - "$tmp/out-$j/results.jsonl" "$t0" "$t1" $j <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
wall = float(sys.argv[3]) - float(sys.argv[2])
passed = sum(l["status"] == "PASS" for l in lines)
print("  -j %s: %5.1f tasks/min (%d tasks, %d PASS, %.1f s)" % (sys.argv[4],
      60 * len(lines) / wall, len(lines), passed, wall))
PY
done

# the overhead per task, from the -j 1 batch (no contention between tasks)
mirror=$(ls -d "$tmp/cache/forgex/mirrors/"*.git | head -n 1)
t0=$(now)
i=0
while [ $i -lt "$RUNS" ]; do
	git -C "$mirror" worktree add --quiet --detach "$tmp/wt" "$commit"
	git -C "$mirror" worktree remove --force --force "$tmp/wt"
	i=$((i + 1))
done
t1=$(now)
python3 - "$tmp/out-1/results.jsonl" "$t0" "$t1" "$RUNS" <<'PY'
import json, statistics, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
own = statistics.median(l["overhead_seconds"] for l in lines) * 1000
patch = statistics.median(l.get("patch_seconds", 0) for l in lines) * 1000
run = statistics.median(l["seconds"] for l in lines) * 1000
git = (float(sys.argv[3]) - float(sys.argv[2])) / int(sys.argv[4]) * 1000
print("overhead per task (median of %d): %.1f ms (the run itself: %.0f ms; "
      "the patch of a passing task: %.1f ms more)" % (len(lines), own, run, patch))
print("git worktree add + remove alone (mean of %s): %.1f ms" % (sys.argv[4], git))
print("ratio: %.2fx (target: within 2x)" % (own / git))
PY
