#!/bin/sh
# Run every test suite and count test cases across all of them.
#
#   BUILD=build sh tests/run.sh SUITE...
#
# Each SUITE is a cmocka program; it runs with TAP output and its "ok" and
# "not ok" lines are counted. A suite that crashes or prints no plan counts
# as one failure. Then, when ../shared/testdata/toml-test is present, the
# TOML compliance corpus runs against $BUILD/toml-decode and its cases are
# counted too. The last line is "N passed, N failed"; the exit status is
# non-zero when anything failed.
set -u

BUILD=${BUILD:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
passed=0
failed=0
failures=""
log=$(mktemp "${TMPDIR:-/tmp}/forgex-tests.XXXXXX")
trap 'rm -f "$log"' EXIT

export FORGEX_BIN="$top/$BUILD/forgex"
export FORGEX_MOCKLLM="$top/$BUILD/mockllm"
export FORGEX_TOP="$top"
export CMOCKA_MESSAGE_OUTPUT=TAP
# The npm test runners (scripts/test-runners.sh) live under the real home;
# each test program gets a home of its own (tests/helpers/testutil.h).
export FORGEX_TEST_RUNNERS="${FORGEX_TEST_RUNNERS:-$HOME/.cache/forgex-test-runners}"
# Tests must not see the developer's own configuration or keys. Every test
# program also gives itself (and so every forgex it starts) a temporary
# HOME, XDG_CONFIG_HOME, XDG_STATE_HOME and XDG_CACHE_HOME before main()
# (tests/helpers/testutil.h); TU_KEEP_HOME=1 keeps the real ones.
export XDG_CONFIG_HOME="$top/$BUILD/test-xdg"
# ... nor fill the developer's cache (forgex keeps test-run caches there).
export XDG_CACHE_HOME="$top/$BUILD/test-cache"
unset OPENAI_API_KEY GROQ_API_KEY
for v in $(env | sed -n 's/^\(FORGEX_[A-Z0-9_]*\)=.*/\1/p'); do
	case $v in FORGEX_BIN|FORGEX_MOCKLLM|FORGEX_TOP|FORGEX_TEST_RUNNERS) ;; *) unset "$v" ;; esac
done

for t in "$@"; do
	name=${t#"$BUILD"/tests/}
	"$t" >"$log" 2>&1
	rc=$?
	# cmocka prints a skipped test as "not ok N # SKIP": neither passed nor failed
	s=$(grep -c -E '^(not )?ok [0-9]+.*# SKIP' "$log")
	p=$(grep -v -E '# SKIP' "$log" | grep -c '^ok ')
	f=$(grep -v -E '# SKIP' "$log" | grep -c '^not ok ')
	plan=$(grep -c '^1\.\.[0-9]' "$log")
	if [ "$plan" -eq 0 ] || { [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; }; then
		f=$((f + 1))
		echo "FAIL $name: exited with status $rc"
		tail -n 30 "$log" | sed 's/^/    /'
		failures="$failures $name"
	elif [ "$f" -gt 0 ]; then
		echo "FAIL $name: $f failed"
		grep -v -E '# SKIP' "$log" | grep -B2 -A12 '^not ok ' | sed 's/^/    /' | head -n 80
		failures="$failures $name"
	else
		if [ "$s" -gt 0 ]; then
			echo "ok   $name ($p, $s skipped)"
			grep -E '# SKIP' "$log" | sed 's/^/    /'
		else
			echo "ok   $name ($p)"
		fi
	fi
	passed=$((passed + p))
	failed=$((failed + f))
done

corpus="$top/../shared/testdata/toml-test"
runner="$top/../shared/tools/toml-test-run"
if [ -d "$corpus" ] && [ -x "$runner" ]; then
	"$runner" -- "$top/$BUILD/toml-decode" >"$log" 2>&1
	last=$(tail -n 1 "$log")
	p=$(echo "$last" | sed -n 's/^\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed$/\1/p')
	f=$(echo "$last" | sed -n 's/^\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed$/\2/p')
	if [ -z "$p" ]; then
		echo "FAIL toml-test: the runner did not finish"
		tail -n 20 "$log" | sed 's/^/    /'
		p=0 f=1
	elif [ "$f" -ne 0 ]; then
		echo "FAIL toml-test: $f failed"
		grep -i -E 'fail' "$log" | head -n 30 | sed 's/^/    /'
	else
		echo "ok   toml-test corpus ($p)"
	fi
	passed=$((passed + p))
	failed=$((failed + f))
else
	echo "skip toml-test corpus: ../shared/testdata/toml-test is absent"
fi

[ -z "$failures" ] || echo "failed suites:$failures"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
