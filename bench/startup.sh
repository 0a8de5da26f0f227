#!/bin/sh
# Start-up cost of forgex against `true` and `git --version`, median of
# RUNS runs each, measured by a small C timer (fork+exec+wait, no shell in
# the loop). Target (DESIGN.md section 9): forgex --version under 2 ms.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${RUNS:-200}
bin="$top/build/forgex"
[ -x "$bin" ] || { echo "build first: make" >&2; exit 1; }
timer="$top/build/bench/medtime"
mkdir -p "$top/build/bench"
if [ ! -x "$timer" ] || [ "$top/bench/medtime.c" -nt "$timer" ]; then
	cc -O2 -std=c11 -D_GNU_SOURCE -o "$timer" "$top/bench/medtime.c"
fi
ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
mkdir -p "$ws/.forgex"
printf '[permissions]\nmode = "auto"\n' > "$ws/.forgex/config.toml"
cd "$ws"
printf '%-34s %12s %12s\n' "command" "median ms" "p90 ms"
"$timer" "$RUNS" true
"$timer" "$RUNS" git --version
"$timer" "$RUNS" "$bin" --version
"$timer" "$RUNS" "$bin" config show
"$timer" "$RUNS" "$bin" policy check -- ls -la
# the same start-up with libcurl and libgit2 loaded (commands that need them)
"$timer" "$RUNS" "$top/build/forgex-core" --version
echo "budget: forgex --version and forgex policy check under 2 ms (DESIGN.md section 9)"
