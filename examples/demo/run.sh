#!/bin/sh
# make demo: the whole pipeline on a fresh copy of examples/demo/project,
# with every model answer replayed from examples/demo/transcript.jsonl (no
# model, no key, no network). The tests really run and the replayed edits
# really fix the bug; the demo fails unless forgex ends PASS and the
# project's tests pass afterwards.
#
#   sh examples/demo/run.sh [DIR]   (DIR: where to copy the project; default a
#                                    new temporary folder, kept for a look)
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$top/build}
demo="$top/examples/demo"
work=${1:-$(mktemp -d "${TMPDIR:-/tmp}/forgex-demo.XXXXXX")}

mkdir -p "$work"
cp "$demo/project/"*.py "$demo/project/.gitignore" "$work/"
cd "$work"
git init -q && git add -A &&
	git -c user.name=demo -c user.email=demo@example.com commit -qm "demo project"
mkdir -p .forgex
cat > .forgex/config.toml <<TOML
# The demo: every model answer comes from a recorded transcript.
[providers.default]
type = "replay"
transcript = "$demo/transcript.jsonl"
replay_mode = "lenient"     # test timings differ from the recording
model = "demo-model"

[pipeline]
test_command = ["python3", "-B", "-m", "unittest", "-v"]
TOML
echo "forgex demo in $work"
echo "request: $(cat "$demo/request.txt")"
echo
status=0
"$build/forgex" run "$(cat "$demo/request.txt")" || status=$?
echo
if [ "$status" -ne 0 ]; then
	echo "demo: forgex run exited with status $status (expected 0, PASS)" >&2
	exit 1
fi
echo "The project's tests after the run:"
python3 -m unittest 2>&1 | tail -n 3
echo
echo "What changed:"
git --no-pager diff --stat
echo
echo "Look around: cd $work && forgex log last"
