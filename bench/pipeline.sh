#!/bin/sh
# forgex's own cost per agent turn, and peak RSS, for a scripted 20-turn
# `forgex run` against the mock model server (build/mockllm) on a
# 500-file git repository. "Own cost" is everything except waiting for the
# model and for commands: wall time of the whole run, minus the model
# calls' duration_ms and the commands' duration_ms from events.jsonl,
# divided by the model turns. Process start, configuration, checkpoints,
# diffs, tool work, events and the transcript all count as forgex's own.
# Also shown: the same inside the agent loops alone (agent_start to
# agent_end), which leaves out the per-run costs (start-up, the sandbox
# set-up, the checkpoints between stages).
# Targets (DESIGN.md section 9): under 1 ms per turn; peak RSS under 20 MB.
#
#   sh bench/pipeline.sh            RUNS=5 FILES=500
#
# Two sets of runs: each on a fresh repository (the map's index built from
# nothing in every run), and each with the map's cache of an earlier run
# kept, as for a user's later runs.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${RUNS:-5}
FILES=${FILES:-500}
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
mkdir -p "$HOME"

python3 - "$tmp" "$FILES" <<'PY'
import json, os, random, sys
tmp, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(7)
src = os.path.join(tmp, "src")
for i in range(n):
    d = os.path.join(src, "pkg%02d" % (i % 10))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "m%03d.py" % i), "w") as f:
        for k in range(rnd.randint(10, 60)):
            f.write("def f%d_%d(x):\n    return x + %d\n\n" % (i, k, k))
with open(os.path.join(src, "app.py"), "w") as f:
    f.write("VERSION = '1.0'\n\n\ndef greet(name):\n    return 'hi ' + name\n")
def call(name, args):
    return {"tool_calls": [{"id": "c", "name": name, "arguments": args}]}
plan = {"summary": "bump", "steps": [{"id": "1", "title": "bump", "description": "bump",
        "files": ["app.py"]}], "acceptance": ["version is 1.1"]}
steps = [call("list_dir", {"path": "pkg00"}), call("read_file", {"path": "app.py"}),
         call("search", {"pattern": "VERSION"}), call("read_file", {"path": "pkg01/m001.py"}),
         call("git_status", {}), call("submit_plan", plan)]                          # 6
steps += [call("read_file", {"path": "app.py"}),
          call("edit_file", {"path": "app.py", "old_string": "'1.0'", "new_string": "'1.1'"}),
          call("edit_file", {"path": "app.py", "old_string": "'hi '", "new_string": "'hello '"}),
          call("read_file", {"path": "app.py"}), call("git_diff", {}),
          call("search", {"pattern": "greet"}), call("list_dir", {"path": "pkg02"}),
          call("finish", {"summary": "bumped"})]                                    # 8
steps += [call("git_diff", {}), call("read_file", {"path": "app.py"}),
          call("finish", {"summary": "fine"})]                                      # 3
steps += [call("git_diff", {}), call("read_file", {"path": "app.py"}),
          call("submit_verdict", {"verdict": "PASS", "reasons": ["done"], "required_fixes": []})]  # 3
json.dump({"steps": steps}, open(os.path.join(tmp, "script.json"), "w"))
PY

# run_all MODE: RUNS runs, results in $tmp/results.MODE. MODE "fresh": a new
# repository each time (the map's index is built from nothing: ctags on
# every file); "cached": the same, with the map's cache of an earlier run
# copied in (as for a user's second run: the files' keys differ, their
# contents do not, so nothing goes to ctags).
run_all() {
mode=$1
results="$tmp/results.$mode"
: > "$results"
i=0
while [ "$i" -lt "$RUNS" ]; do
	i=$((i + 1))
	rm -rf "$tmp/work" && cp -r "$tmp/src" "$tmp/work"
	(cd "$tmp/work" && git init -q && git add -A && git commit -qm init)
	if [ "$mode" = cached ]; then
		mkdir -p "$tmp/work/.forgex"
		cp -r "$tmp/mapcache" "$tmp/work/.forgex/map"
	fi
	rm -f "$tmp/port"
	"$mock" --script "$tmp/script.json" --port-file "$tmp/port" >/dev/null &
	mock_pid=$!
	while [ ! -s "$tmp/port" ]; do sleep 0.01; done
	# the provider in the user's file: a project file's base_url counts only once trusted
	mkdir -p "$XDG_CONFIG_HOME/forgex"
	cat > "$XDG_CONFIG_HOME/forgex/config.toml" <<TOML
[providers.default]
base_url = "http://127.0.0.1:$(cat "$tmp/port")/v1"
model = "bench"
api_key_env = "FORGEX_BENCH_NO_KEY"
TOML
	start=$(date +%s%N)
	(cd "$tmp/work" && /usr/bin/time -f "%M" -o "$tmp/rss" "$bin" -q run "bump the version" >"$tmp/out" 2>&1) ||
		{ echo "run $i did not PASS:" >&2; tail -20 "$tmp/out" >&2; exit 1; }
	end=$(date +%s%N)
	kill "$mock_pid"; wait "$mock_pid" 2>/dev/null || true; mock_pid=
	[ -d "$tmp/mapcache" ] || cp -r "$tmp/work/.forgex/map" "$tmp/mapcache"
	[ -n "${KEEP_EVENTS:-}" ] && cp "$tmp"/work/.forgex/runs/*/events.jsonl "$KEEP_EVENTS" || true
	python3 - "$tmp/work" "$start" "$end" "$(cat "$tmp/rss")" >> "$results" <<'PY'
import glob, json, sys
work, start, end, rss = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ev = [json.loads(l) for l in open(glob.glob(work + "/.forgex/runs/*/events.jsonl")[0])]
model = sum(e.get("duration_ms", 0) for e in ev if e["type"] == "model_call")
cmds = sum(e.get("duration_ms", 0) or 0 for e in ev if e["type"] == "command")
turns = sum(1 for e in ev if e["type"] == "model_call")
wall = (end - start) / 1e6
# inside the agent loops only: agent_start to agent_end, less the model calls
loop = 0
t0 = None
for e in ev:
    if e["type"] == "agent_start":
        t0 = e["elapsed_ms"]
    elif e["type"] == "agent_end" and t0 is not None:
        loop += e["elapsed_ms"] - t0
print(json.dumps({"wall": wall, "model": model, "cmds": cmds, "turns": turns, "rss_kb": rss,
                  "loop": loop - model - cmds}))
PY
done
}

report() {
python3 - "$tmp/results.$1" "$2" <<'PY'
import json, statistics, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
own = [(r["wall"] - r["model"] - r["cmds"]) / r["turns"] for r in rs]
rss = max(r["rss_kb"] for r in rs) / 1024.0
t = rs[0]["turns"]
print("-- %s" % sys.argv[2])
print("runs %d, %d model turns each" % (len(rs), t))
print("wall per run (median)        %8.1f ms" % statistics.median(r["wall"] for r in rs))
print("  waiting for the model      %8.1f ms" % statistics.median(r["model"] for r in rs))
print("  waiting for commands       %8.1f ms" % statistics.median(r["cmds"] for r in rs))
print("forgex's own time per turn   %8.2f ms (median, whole run: start-up, set-up and checkpoints included)" % statistics.median(own))
print("  of which in the agent loop %8.2f ms per turn (median; target < 1 ms: tools, events, transcript)" %
      statistics.median(r["loop"] / r["turns"] for r in rs))
print("peak RSS                     %8.1f MB (max; target < 20 MB)" % rss)
PY
}

run_all fresh
run_all cached
uptime
report fresh "a fresh repository each run (the map's index built from nothing)"
report cached "the map's cache of an earlier run kept (a user's later runs)"
