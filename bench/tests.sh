#!/bin/sh
# How long `make test` of this tree takes, and its ratio to a baseline.
#
#   sh bench/tests.sh [BASELINE_SECONDS]     (or TESTS_BASELINE=SECONDS)
#
# Builds first (not timed), then times `make test` once (TEST_JOBS as set
# in the environment, else tests/run.sh's default) and prints, from
# $BUILD/test-times, the critical path (the longest suite or shard), the
# sum of all suites' wall seconds and their CPU seconds, with the load
# average before and after: on a shared machine the wall time moves with
# the others' load, the critical path and the sums much less. With a
# baseline, the wall time's ratio to it. The old tree cannot be fetched
# from here: time it yourself in the same sitting (a clone at the old
# commit, built, `time make test`) and pass its seconds; tests/README.md
# ("Measuring") says how the issue-19 figure was taken.
set -u
cd "$(dirname "$0")/.." || exit 2
BUILD=${BUILD:-build}
base=${1:-${TESTS_BASELINE:-}}
case $base in '' | *[!0-9.]*) base= ;; esac

make -j"$(nproc 2>/dev/null || echo 2)" >/dev/null || exit 2
load() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null; }
before=$(load)
log=$(mktemp "${TMPDIR:-/tmp}/forgex-bench-tests.XXXXXX") || exit 2
start=$(date +%s)
make test >"$log" 2>&1
rc=$?
wall=$(($(date +%s) - start))
after=$(load)
tail -n 1 "$log"
# what failed, with the part of its output run.sh shows
[ "$rc" -eq 0 ] || { awk '/^FAIL/ { p = 1; print; next } /^    / && p { print; next } { p = 0 }' \
	"$log" | head -n 200; echo "(make test failed: status $rc)"; }
rm -f "$log"

echo "wall clock:    ${wall} s  (TEST_JOBS=${TEST_JOBS:-default}; load average $before before, $after after)"
if [ -f "$BUILD/test-times" ]; then
	sort -k2,2nr "$BUILD/test-times" | awk '
		NR == 1 { printf "critical path: %s s  (%s)\n", $2, $1 }
		{ w += $2; c += $3; n++ }
		END { printf "sum of suites: %d s wall, %.0f s CPU, over %d jobs\n", w, c, n }'
	echo "longest jobs:  $(sort -k2,2nr "$BUILD/test-times" | head -n 6 | awk '{ printf "%s %s  ", $1, $2 }')"
fi
if [ -n "$base" ]; then
	awk -v w="$wall" -v b="$base" 'BEGIN { printf "baseline:      %s s; this tree %.0f%% of it\n", b, 100 * w / b }'
fi
exit "$rc"
