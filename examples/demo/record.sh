#!/bin/sh
# Record examples/demo/transcript.jsonl: run the whole pipeline on a fresh
# copy of examples/demo/project against the scripted mock model server
# (build/mockllm playing examples/demo/script.json: an Architect, a Builder,
# an Expert Coder whose first fix is wrong, a Supervisor who says FAIL, a
# repair, and a PASS), then keep the run's transcript.
#
#   make all build/mockllm && sh examples/demo/record.sh
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$top/build}
demo="$top/examples/demo"
work=$(mktemp -d "${TMPDIR:-/tmp}/forgex-demo-record.XXXXXX")
mock_pid=
cleanup() {
	[ -n "$mock_pid" ] && kill "$mock_pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

"$build/mockllm" --script "$demo/script.json" --port-file "$work/port" >/dev/null &
mock_pid=$!
i=0
while [ ! -s "$work/port" ]; do
	i=$((i + 1)); [ "$i" -lt 500 ] || { echo "mockllm did not start" >&2; exit 1; }
	sleep 0.01
done
port=$(cat "$work/port")

mkdir "$work/project"
cp "$demo/project/"*.py "$demo/project/.gitignore" "$work/project/"
cd "$work/project"
git init -q && git add -A && git -c user.name=demo -c user.email=demo@example.com commit -qm "demo project"
mkdir .forgex
cat > .forgex/config.toml <<TOML
[providers.default]
base_url = "http://127.0.0.1:$port/v1"
model = "demo-model"
api_key_env = "FORGEX_DEMO_NO_KEY"

[pipeline]
test_command = ["python3", "-B", "-m", "unittest", "-v"]
TOML
"$build/forgex" run "$(cat "$demo/request.txt")"
run=$(ls .forgex/runs | tail -n 1)
cp ".forgex/runs/$run/transcript.jsonl" "$demo/transcript.jsonl"
echo "recorded $(wc -l < "$demo/transcript.jsonl") exchanges into examples/demo/transcript.jsonl"
