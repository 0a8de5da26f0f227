#!/bin/sh
# Run every test suite and count test cases across all of them.
#
#   BUILD=build sh tests/run.sh SUITE...
#
# Each SUITE is a program printing TAP (a cmocka program, or a fuzz replay
# program from tests/fuzz/replay.c); its "ok" and "not ok" lines are counted.
# A suite that crashes or prints no plan counts as one failure. Then, when
# ../shared/testdata/toml-test is present, the TOML compliance corpus runs
# against $BUILD/toml-decode and its cases are counted too. The last line is
# "N passed, N failed"; the exit status is non-zero when anything failed.
#
# Suites run in parallel, TEST_JOBS at a time (default: twice the number
# of cores). Each one's output goes to a file of its own and the report is
# printed in the order the suites were given, each as soon as it and those
# before it are done, so the log reads as if they had run one by one. The
# longest start first: how long each took is kept in $BUILD/test-times for
# the next time (before there is one, the SLOW list below orders them).
# A suite named in SHARDS runs as that many programs at once, each with
# TEST_SHARD=k/n in its environment (tests/helpers/testutil.h: tu_shard()
# keeps every n-th test), and is reported as one suite. See tests/README.md.
set -u

BUILD=${BUILD:-build}
top=$(cd "$(dirname "$0")/.." && pwd)

# The suites known to be long, longest first (used when $BUILD/test-times
# is missing), and those split into shards (name:count).
SLOW="e2e/batch e2e/runners e2e/pipeline e2e/mcp e2e/tty e2e/checkpoint e2e/hooks
e2e/chat unit/vcs/checkpoint unit/sandbox/backend_native e2e/gate e2e/attacks
unit/context/index e2e/map unit/tools/fs unit/sandbox/native_network
unit/sandbox/native_attacks e2e/rollback"
SHARDS="e2e/pipeline:6 e2e/runners:3 e2e/tty:3 e2e/chat:2 e2e/mcp:2 e2e/hooks:2 e2e/faults:4"

# Most suites spend their time waiting (on the mock, child processes,
# timeouts), so twice as many as there are cores keep the cores busy.
jobs=${TEST_JOBS:-$((2 * $(nproc 2>/dev/null || echo 1)))}
case $jobs in '' | *[!0-9]* | 0) jobs=1 ;; esac

work=$(mktemp -d "${TMPDIR:-/tmp}/forgex-tests.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

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
# A python3 that is a version manager's shim (pyenv's is a shell script
# starting some twenty processes per call) costs more than most tests:
# the interpreter it resolves to comes first on PATH instead.
case $(command -v python3 2>/dev/null) in
*/shims/python3)
	py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
	[ -x "$py" ] && PATH="${py%/*}:$PATH" && export PATH
	;;
esac
unset OPENAI_API_KEY GROQ_API_KEY TEST_SHARD
for v in $(env | sed -n 's/^\(FORGEX_[A-Z0-9_]*\)=.*/\1/p'); do
	case $v in FORGEX_BIN|FORGEX_MOCKLLM|FORGEX_TOP|FORGEX_TEST_RUNNERS) ;; *) unset "$v" ;; esac
done

# Python's standard library compiled once for all the suites, as Python
# leaves it in a bytecode prefix: tu_seed_bytecode() (tests/helpers/
# testutil.h) copies it into the cache of each project a test makes, as a
# user's earlier test run would have left it (some 160 projects would each
# compile unittest again: a third of the suite's CPU). The scratch
# project's own part is taken out again.
seed_bytecode() {
	d="$work/py-seed"
	mkdir -p "$d/src" || return 0
	printf 'import unittest\n\n\nclass T(unittest.TestCase):\n    def test_one(self):\n        self.assertEqual(1, 1)\n' \
		>"$d/src/test_seed.py"
	(unset PYTHONDONTWRITEBYTECODE; cd "$d/src" &&
		PYTHONPYCACHEPREFIX="$d/pycache" python3 -m unittest -q) >/dev/null 2>&1 || return 0
	p=$(cd "$d/src" && pwd -P) || return 0
	rm -rf "$d/pycache$p"
	p=${p%/*}
	while [ -n "$p" ] && rmdir "$d/pycache$p" 2>/dev/null; do p=${p%/*}; done
	# tu_seed_bytecode() links these files into many caches: none may change
	find "$d/pycache" -type f -exec chmod a-w {} + 2>/dev/null
	[ -d "$d/pycache" ] && FORGEX_TEST_PYCACHE="$d/pycache" && export FORGEX_TEST_PYCACHE
	return 0
}
command -v python3 >/dev/null 2>&1 && seed_bytecode

corpus="$top/../shared/testdata/toml-test"
runner="$top/../shared/tools/toml-test-run"
times="$top/$BUILD/test-times"

# ------------------------------------------------------------ the jobs
# Suite i (1..nsuites) has name_i, path_i ("toml" for the TOML corpus),
# left_i (its jobs not yet done) and jobs_i (its jobs in shard order, as
# "j:shard" words); job j has suite_j and the line "weight j i shard" in
# $work/jobs, where shard is k/n or "-". The shell keeps this itself: a
# helper process or two per job and a dozen per suite cost a second or
# two of CPU per run and held up the start of the next suite.

nsuites=0
njobs=0
: >"$work/keys"
for t in "$@"; do
	nsuites=$((nsuites + 1))
	name=${t#"$BUILD"/tests/}
	eval "name_$nsuites=\$name path_$nsuites=\$t"
	n=1
	for s in $SHARDS; do
		[ "${s%:*}" = "$name" ] && n=${s#*:}
	done
	eval "left_$nsuites=$n jobs_$nsuites="
	k=1
	while [ "$k" -le "$n" ]; do
		njobs=$((njobs + 1))
		if [ "$n" -gt 1 ]; then sh="$k/$n" key="$name#$k/$n"; else sh=- key=$name; fi
		echo "$key $njobs $nsuites $sh" >>"$work/keys"
		eval "suite_$njobs=$nsuites jobs_$nsuites=\"\$jobs_$nsuites $njobs:$sh\""
		k=$((k + 1))
	done
done
toml_suite=0
if [ -d "$corpus" ] && [ -x "$runner" ]; then
	nsuites=$((nsuites + 1))
	njobs=$((njobs + 1))
	toml_suite=$nsuites
	eval "name_$nsuites=toml-test path_$nsuites=toml left_$nsuites=1 jobs_$nsuites=$njobs:-"
	eval "suite_$njobs=$nsuites"
	echo "toml-test $njobs $nsuites -" >>"$work/keys"
fi
# The weight of each job: its seconds in $BUILD/test-times, else (not
# timed yet) a known-slow suite as a long one, in the SLOW list's order.
[ -f "$times" ] && old_times=$times || { old_times="$work/no-times" && : >"$old_times"; }
awk -v slow="$SLOW" '
	BEGIN {
		n = split(slow, s, /[ \t\n]+/)
		for (i = 1; i <= n; i++)
			if (s[i] != "" && !(s[i] in rank))
				rank[s[i]] = 100 - i
	}
	FILENAME == ARGV[1] { if ($2 ~ /^[0-9]+$/ && !($1 in w)) w[$1] = $2; next }
	{
		if ($1 in w)
			x = w[$1]
		else {
			b = $1
			sub(/#.*/, "", b)
			x = (b in rank) ? rank[b] : 0
		}
		print x, $2, $3, $4
	}' "$old_times" "$work/keys" >"$work/jobs"

# ---------------------------------------------------------- reporting
passed=0
failed=0
failures=""

report_toml() {
	log="$work/$1.out"
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
}

# The TAP of one job counted: "passed failed skipped plans". cmocka prints
# a skipped test as "not ok N # SKIP": neither passed nor failed.
count_tap() {
	awk '/# SKIP/ { if (/^(not )?ok [0-9]+.*# SKIP/) s++ }
	     !/# SKIP/ && /^ok / { p++ }
	     !/# SKIP/ && /^not ok / { f++ }
	     /^1\.\.[0-9]/ { n++ }
	     END { print p + 0, f + 0, s + 0, n + 0 }' "$1"
}

report_suite() {	# $1: suite index
	eval "name=\$name_$1 js_all=\$jobs_$1"
	all="$work/s$1.log"
	p=0 f=0 s=0 crashed=0
	for js in $js_all; do
		j=${js%%:*} sh=${js#*:}
		log="$work/$j.out"
		read -r rc <"$work/$j.rc"
		set -- $(count_tap "$log")
		p=$((p + $1)) f=$((f + $2)) s=$((s + $3))
		if [ "$4" -eq 0 ] || { [ "$rc" -ne 0 ] && [ "$2" -eq 0 ]; }; then
			crashed=$((crashed + 1))
			if [ "$sh" = - ]; then
				echo "FAIL $name: exited with status $rc"
			else
				echo "FAIL $name (shard $sh): exited with status $rc"
			fi
			tail -n 30 "$log" | sed 's/^/    /'
		fi
	done
	if [ "$f" -gt 0 ] || [ "$s" -gt 0 ]; then
		: >"$all"
		for js in $js_all; do
			cat "$work/${js%%:*}.out" >>"$all"
		done
	fi
	if [ "$crashed" -gt 0 ]; then
		f=$((f + crashed))
		failures="$failures $name"
	elif [ "$f" -gt 0 ]; then
		echo "FAIL $name: $f failed"
		grep -v -E '# SKIP' "$all" | grep -B2 -A12 '^not ok ' | sed 's/^/    /' | head -n 80
		failures="$failures $name"
	elif [ "$s" -gt 0 ]; then
		echo "ok   $name ($p, $s skipped)"
		grep -E '# SKIP' "$all" | sed 's/^/    /'
	else
		echo "ok   $name ($p)"
	fi
	passed=$((passed + p))
	failed=$((failed + f))
}

next=1
flush() {	# report every suite from $next on that is done
	while [ "$next" -le "$nsuites" ]; do
		eval "l=\$left_$next"
		[ "$l" -eq 0 ] || break
		if [ "$next" -eq "$toml_suite" ]; then
			eval "tj=\$jobs_$next"
			report_toml "${tj%%:*}"
		else
			report_suite "$next"
		fi
		next=$((next + 1))
	done
}

# ------------------------------------------------------------- running
# A FIFO holds one token per free slot: "start" at first, then the number
# of each job as it ends. Taking a token before starting a job keeps at
# most $jobs running, and says which one finished; the next job starts
# before the finished one's suite is reported.
mkfifo "$work/slots" || exit 2
exec 3<>"$work/slots"
k=0
while [ "$k" -lt "$jobs" ]; do
	echo start >&3
	k=$((k + 1))
done

done_one() {	# $1: the token read
	[ "$1" = start ] && return
	eval "di=\$suite_$1"
	eval "left_$di=\$((left_$di - 1))"
	finished=$((finished + 1))
}

started=0
finished=0
sort -k1,1nr -k2,2n "$work/jobs" | awk '{ print $2, $3, $4 }' >"$work/order"
while read -r job suite shard; do
	read -r tok <&3
	done_one "$tok"
	eval "prog=\$path_$suite"
	(
		out="$work/$job.out"
		begin=$(date +%s)
		if [ "$prog" = toml ]; then
			"$runner" -- "$top/$BUILD/toml-decode" >"$out" 2>&1 3>&-
		elif [ "$shard" = - ]; then
			"$prog" >"$out" 2>&1 3>&-
		else
			TEST_SHARD=$shard "$prog" >"$out" 2>&1 3>&-
		fi
		echo $? >"$work/$job.rc"
		# wall seconds, then the CPU seconds (user + system) of the
		# program and every child it waited for, from the shell's `times`
		# (a builtin's redirection runs it in this shell, not a child)
		times >"$work/$job.cpu"
		echo "$(($(date +%s) - begin)) $(awk 'NR == 2 {
			n = split($0, f, /[ms ]+/); c = 0
			for (i = 1; i + 1 <= n; i += 2) c += f[i] * 60 + f[i + 1]
			printf "%.1f", c }' "$work/$job.cpu")" >"$work/$job.time"
		echo "$job" >&3
	) &
	started=$((started + 1))
	flush
done <"$work/order"
while [ "$finished" -lt "$started" ]; do
	read -r tok <&3
	done_one "$tok"
	flush
done
wait
exec 3>&-
[ -n "$toml_suite" ] && [ "$toml_suite" -ne 0 ] || echo "skip toml-test corpus: ../shared/testdata/toml-test is absent"

# How long each job took, for the order of the next run (the suites not
# run this time keep their old figures).
if [ -d "$top/$BUILD" ]; then
	while read -r w j i sh; do
		eval "name=\$name_$i"
		if [ "$sh" = - ]; then key=$name; else key="$name#$sh"; fi
		echo "$key $(cat "$work/$j.time")"
	done <"$work/jobs" >"$work/times"
	[ -f "$times" ] || : >"$times"
	awk '{ n = $1; sub(/#.*/, "", n) }
	     NR == FNR { seen[n] = 1; print; next } !(n in seen)' "$work/times" "$times" \
		>"$times.tmp" && mv "$times.tmp" "$times"
fi

[ -z "$failures" ] || echo "failed suites:$failures"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
