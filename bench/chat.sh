#!/bin/sh
# forgex's own cost per turn of an interactive session (`forgex chat`), and
# peak RSS, for a scripted session of TURNS turns (each: read a file, edit
# it, answer: three model calls) piped into one `forgex chat` against the
# mock model server (build/mockllm), on a FILES-file git repository.
# "Own cost" is everything except waiting for the model: wall time minus
# the model calls' duration_ms from the session's events.jsonl, divided by
# the turns. It holds, per turn, the workspace lock, the checkpoint before
# the turn, the journal, the edit's diff, the events, the transcript and
# saving the conversation.
# Compared with: the same turns as one `forgex chat --continue MESSAGE`
# process each (how a script would drive forgex without a session open),
# in the same run. Also: start-up to the prompt, from fork to the prompt
# on a pseudo-terminal (the session's banner, config, the model server's
# preflight on 127.0.0.1 and the line editor), median of 5 per run
# (budget: under 50 ms, issue 22).
# Budget: none of its own in DESIGN.md; a turn's own cost should stay well
# under a model call's (hundreds of ms), and RSS under the 20 MB of a run.
#
#   sh bench/chat.sh            RUNS=3 TURNS=10 FILES=500
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${RUNS:-3}
TURNS=${TURNS:-10}
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
mkdir -p "$HOME/.config/forgex"

python3 - "$tmp" "$FILES" "$TURNS" <<'PY'
import json, os, random, sys
tmp, n, turns = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(7)
src = os.path.join(tmp, "src")
for i in range(n):
    d = os.path.join(src, "pkg%02d" % (i % 10))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "m%03d.py" % i), "w") as f:
        for k in range(rnd.randint(10, 60)):
            f.write("def f%d_%d(x):\n    return x + %d\n\n" % (i, k, k))
with open(os.path.join(src, "app.py"), "w") as f:
    f.write("VERSION = 0\n")
def call(name, args):
    return {"tool_calls": [{"id": "c", "name": name, "arguments": args}]}
steps = []
for t in range(turns):
    steps += [call("read_file", {"path": "app.py"}),
              call("edit_file", {"path": "app.py", "old_string": "VERSION = %d" % t,
                                 "new_string": "VERSION = %d" % (t + 1)}),
              {"text": "Bumped to %d." % (t + 1)}]
json.dump({"steps": steps}, open(os.path.join(tmp, "script.json"), "w"))
with open(os.path.join(tmp, "input"), "w") as f:
    for t in range(turns):
        f.write("bump the version (%d)\n" % t)
    f.write("/exit\n")
PY

start_mock() {
	rm -f "$tmp/port"
	"$mock" --script "$tmp/script.json" --port-file "$tmp/port" >/dev/null &
	mock_pid=$!
	while [ ! -s "$tmp/port" ]; do sleep 0.01; done
	cat > "$HOME/.config/forgex/config.toml" <<TOML
[providers.default]
base_url = "http://127.0.0.1:$(cat "$tmp/port")/v1"
model = "bench"
api_key_env = "FORGEX_BENCH_NO_KEY"
[sandbox]
backend = "none"
TOML
}

stop_mock() {
	kill "$mock_pid"; wait "$mock_pid" 2>/dev/null || true; mock_pid=
}

fresh_repo() {
	rm -rf "$tmp/work" && cp -r "$tmp/src" "$tmp/work"
	(cd "$tmp/work" && git init -q && git add -A && git commit -qm init)
}

# Model time of every session of the work tree, in ms.
model_ms() {
	python3 - "$tmp/work" <<'PY'
import glob, json, sys
total = 0
for p in glob.glob(sys.argv[1] + "/.forgex/sessions/*/events.jsonl"):
    for l in open(p):
        e = json.loads(l)
        if e["type"] == "model_call":
            total += e.get("duration_ms", 0)
print(total)
PY
}

results="$tmp/results"
: > "$results"
i=0
while [ "$i" -lt "$RUNS" ]; do
	i=$((i + 1))
	# one session, every message piped in
	fresh_repo
	start_mock
	s=$(date +%s%N)
	(cd "$tmp/work" && /usr/bin/time -f '%M' -o "$tmp/rss" "$bin" -q chat < "$tmp/input" \
		> "$tmp/out" 2>&1) || { cat "$tmp/out" >&2; echo "session $i failed" >&2; exit 1; }
	e=$(date +%s%N)
	stop_mock
	grep -q "VERSION = $TURNS" "$tmp/work/app.py" || { echo "session $i did not finish" >&2; exit 1; }
	one_wall=$(( (e - s) / 1000000 )); one_model=$(model_ms); one_rss=$(cat "$tmp/rss")

	# the alternative: one process per message, --continue each time
	fresh_repo
	start_mock
	s=$(date +%s%N)
	t=0
	while [ "$t" -lt "$TURNS" ]; do
		if [ "$t" -eq 0 ]; then set -- chat; else set -- chat --continue; fi
		(cd "$tmp/work" && "$bin" -q "$@" "bump the version ($t)" < /dev/null > "$tmp/out" 2>&1) ||
			{ cat "$tmp/out" >&2; echo "message $t failed" >&2; exit 1; }
		t=$((t + 1))
	done
	e=$(date +%s%N)
	stop_mock
	grep -q "VERSION = $TURNS" "$tmp/work/app.py" || { echo "run $i did not finish" >&2; exit 1; }
	many_wall=$(( (e - s) / 1000000 )); many_model=$(model_ms)
	echo "$one_wall $one_model $one_rss $many_wall $many_model" >> "$results"
done
# start-up to the prompt on a pseudo-terminal, then Ctrl-D
fresh_repo
start_mock
python3 - "$bin" "$tmp/work" "$RUNS" > "$tmp/startup" <<'PY'
import os, pty, re, select, statistics, sys, time
binary, work, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
prompt = re.compile(rb"forgex>(\x1b\[m)? ")
times = []
for _ in range(5 * runs):
    t0 = time.monotonic()
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(work)
        os.environ["TERM"] = "xterm"
        os.execv(binary, [binary, "chat"])
    out = b""
    while not prompt.search(out):
        r, _, _ = select.select([fd], [], [], 10)
        if not r:
            sys.exit("no prompt within 10 s: %r" % out[-200:])
        out += os.read(fd, 4096)
    times.append((time.monotonic() - t0) * 1000)
    os.write(fd, b"\x04")
    try:
        while os.read(fd, 4096):
            pass
    except OSError:
        pass
    os.waitpid(pid, 0)
print("%.1f %.1f" % (statistics.median(times), min(times)))
PY
stop_mock
python3 - "$results" "$TURNS" "$FILES" "$(cat "$tmp/startup")" <<'PY'
import statistics, sys
rows = [list(map(int, l.split())) for l in open(sys.argv[1])]
turns, files = int(sys.argv[2]), int(sys.argv[3])
one = [(r[0] - r[1]) / turns for r in rows]
many = [(r[3] - r[4]) / turns for r in rows]
print("runs %d; %d turns of 3 model calls each; %d-file repository" % (len(rows), turns, files))
print("one session: forgex's own time per turn       %7.1f ms (median; min %.1f)" % (statistics.median(one), min(one)))
print("one process per message (--continue each):    %7.1f ms (median; min %.1f)" % (statistics.median(many), min(many)))
print("peak RSS of the session                      %7.1f MB (max)" % (max(r[2] for r in rows) / 1024.0))
med, low = map(float, sys.argv[4].split())
print("start-up to the prompt (pty)                 %7.1f ms (median; min %.1f; budget 50)" % (med, low))
PY
