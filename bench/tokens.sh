#!/bin/sh
# What forgex sends a model: a scripted 40-turn `forgex ask` (39 tool
# calls — read_file, list_dir, search on a 40-file project — then the
# answer) against build/mockllm playing a llama.cpp server that reports an
# 8192-token window (GET /props). From the requests the mock recorded,
# byte for byte:
#   - bytes and estimated tokens (bytes / 4) of each request, and in total;
#   - the turns whose request does not begin with the previous one (the
#     previous less its closing "]}"): prefix-cache misses; the target is
#     compaction steps only, at most 1 turn in 10;
#   - the largest request against the window.
# Compared, in the same run, with the same script against a server that
# says nothing of its window and context_window = 1000000 (forgex before
# compaction: it only trimmed past 400,000 characters), and with peers'
# published first-turn sizes: the Codex CLI sends about 40 KB on its first
# turn; forgex's ask about 3 KB.
#
#   sh bench/tokens.sh            TURNS=40 WINDOW=8192
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
TURNS=${TURNS:-40}
WINDOW=${WINDOW:-8192}
bin="$top/build/forgex"
mock="$top/build/mockllm"
[ -x "$bin" ] && [ -x "$mock" ] || { echo "build first: make all build/mockllm" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/forgex-tokens.XXXXXX")
mock_pid=
cleanup() {
	[ -n "$mock_pid" ] && kill "$mock_pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
export HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/home/.config"
mkdir -p "$XDG_CONFIG_HOME/forgex" "$tmp/work"

python3 - "$tmp" "$TURNS" "$WINDOW" <<'PY'
import json, os, random, sys
tmp, turns, window = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(11)
work = os.path.join(tmp, "work")
files = []
for i in range(40):
    d = os.path.join(work, "src", "mod%d" % (i % 5))
    os.makedirs(d, exist_ok=True)
    p = os.path.join("src", "mod%d" % (i % 5), "f%02d.py" % i)
    with open(os.path.join(work, p), "w") as f:
        for k in range(rnd.randint(8, 45)):
            f.write("def handler_%d_%d(request, limit=%d):\n    return request.get(%d) or limit\n\n"
                    % (i, k, k, k))
    files.append(p)
def call(n, name, args):
    return {"tool_calls": [{"id": "call_%d" % n, "name": name, "arguments": args}]}
steps = []
for n in range(turns - 1):
    r = n % 4
    if r == 0:
        steps.append(call(n, "list_dir", {"path": "src/mod%d" % (n % 5)}))
    elif r == 1:
        steps.append(call(n, "search", {"pattern": "handler_%d_1\\b" % (n % 40)}))
    else:
        steps.append(call(n, "read_file", {"path": files[(n * 7) % 40]}))
steps.append({"text": "The handlers all return request.get(k) or the limit."})
for name, server in (("window", {"server": "llamacpp", "n_ctx": window}),
                     ("nowindow", {"server": "openai"})):
    s = dict(server)
    s["steps"] = steps
    # the summary a compaction step asks for, answered without taking a turn
    s["on_match"] = [{"body_contains": "You compress the record of a coding agent",
                      "text": "Listed the src/mod* folders and read most f*.py files: every "
                              "handler_N_K(request, limit=K) returns request.get(K) or limit. "
                              "Nothing changed. Left: answer the question."}]
    json.dump(s, open(os.path.join(tmp, "script-%s.json" % name), "w"))
PY

run() {	# NAME EXTRA_CONFIG
	rm -f "$tmp/port" "$tmp/log-$1.jsonl"
	"$mock" --script "$tmp/script-$1.json" --port-file "$tmp/port" --log "$tmp/log-$1.jsonl" \
		>/dev/null &
	mock_pid=$!
	while [ ! -s "$tmp/port" ]; do sleep 0.01; done
	cat > "$XDG_CONFIG_HOME/forgex/config.toml" <<TOML
[providers.default]
base_url = "http://127.0.0.1:$(cat "$tmp/port")/v1"
model = "mock-model"
api_key_env = "FORGEX_BENCH_NO_KEY"
max_retries = 0
$2
[agents.architect]
max_turns = $((TURNS + 5))
TOML
	(cd "$tmp/work" && "$bin" ask "What do the handlers return?" >"$tmp/out-$1" 2>"$tmp/err-$1") ||
		{ echo "forgex ask failed ($1):" >&2; cat "$tmp/err-$1" >&2; exit 1; }
	kill "$mock_pid" 2>/dev/null || true
	wait "$mock_pid" 2>/dev/null || true
	mock_pid=
}
run window ""
run nowindow "context_window = 1000000"

python3 - "$tmp" "$WINDOW" <<'PY'
import json, sys
tmp, window = sys.argv[1], int(sys.argv[2])
def load(name):
    reqs, sums = [], []
    for line in open("%s/log-%s.jsonl" % (tmp, name)):
        r = json.loads(line)
        if r["path"].endswith("/chat/completions"):
            (sums if r["step"] < -1 else reqs).append(r["raw"].encode())
    return reqs, sums
def report(name, title):
    reqs, sums = load(name)
    sizes = [len(r) for r in reqs]
    breaks = [i + 1 for i in range(1, len(reqs))
              if not (reqs[i - 1].endswith(b"]}") and reqs[i].startswith(reqs[i - 1][:-2]))]
    total = sum(sizes)
    print("%s: %d requests" % (title, len(reqs)))
    print("  turn   bytes  ~tokens  begins with the previous")
    for i, n in enumerate(sizes):
        print("  %4d  %6d  %7d  %s" % (i + 1, n, n // 4,
              "-" if i == 0 else ("no (compaction)" if i + 1 in breaks else "yes")))
    print("  total: %d bytes, ~%d tokens; first request %d bytes" % (total, total // 4, sizes[0]))
    if sums:
        print("  summaries asked at compaction: %d requests, %d bytes (not in the total)"
              % (len(sums), sum(len(x) for x in sums)))
    print("  prefix breaks: %d of %d turns %s" % (len(breaks), len(reqs), breaks))
    big = max(sizes)
    print("  largest request: %d bytes, ~%d tokens = %.0f%% of the %d-token window"
          % (big, big // 4, 100.0 * (big / 4) / window, window))
    print()
    return total, len(breaks), big
a = report("window", "forgex, server reports %d tokens (llama.cpp /props)" % window)
b = report("nowindow", "forgex without a window (context_window = 1000000: no compaction)")
print("summary (estimated tokens = bytes / 4)")
print("  %-44s %10s %8s %14s" % ("", "total", "misses", "largest"))
print("  %-44s %10d %8d %8d (%d%%)" % ("forgex, 8k window", a[0] // 4, a[1], a[2] // 4,
      100 * (a[2] // 4) // window))
print("  %-44s %10d %8d %8d (%d%%)" % ("forgex, no window (overflows the model)", b[0] // 4,
      b[1], b[2] // 4, 100 * (b[2] // 4) // window))
print("  peers, first turn: Codex CLI ~40 KB (~10000 tokens); forgex ask ~3 KB")
PY
