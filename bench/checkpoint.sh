#!/bin/sh
# Cost of `forgex checkpoint create` on a 10,000-file git repository, cold
# (no shadow repository yet: every file is hashed) and warm (nothing
# changed: the stat cache answers), against `git add -A && git write-tree`
# on a copy of the same repository in the same run. Also: warm with a few
# files changed, `forgex diff` on an unchanged tree, and a folder that is
# not a git repository (cold there stores every file). And the stat cache:
# after `touch` of every file (or `cp -a` of the workspace, or a branch
# switch) the first checkpoint must read every file, the second none;
# "touched, 2nd create" is the figure that shows whether the cache was
# refreshed (before forgex refreshed it, it cost as much as the first).
# Target (DESIGN.md section 9 style): warm create under 200 ms.
#
#   sh bench/checkpoint.sh            FILES=10000 RUNS=11 COLD_RUNS=5
#   FORGEX=/path/to/other/forgex sh bench/checkpoint.sh   (compare a build)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
FILES=${FILES:-10000}
RUNS=${RUNS:-11}
COLD_RUNS=${COLD_RUNS:-5}
bin="${FORGEX:-$top/build/forgex}"
[ -x "$bin" ] || { echo "build first: make" >&2; exit 1; }
timer="$top/build/bench/medtime"
mkdir -p "$top/build/bench"
if [ ! -x "$timer" ] || [ "$top/bench/medtime.c" -nt "$timer" ]; then
	cc -O2 -std=c11 -D_GNU_SOURCE -o "$timer" "$top/bench/medtime.c"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/forgex-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# git and libgit2 see neither the user's config nor a global ignore file
export HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/home/.config" GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
mkdir -p "$HOME"

# FILES files of 200-2000 bytes in 100 folders two levels deep, committed.
make_tree() {
	python3 - "$1" "$FILES" <<'EOF'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(42)
for i in range(n):
    d = os.path.join(root, "pkg%02d" % (i % 10), "mod%02d" % ((i // 10) % 10))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "file%05d.c" % i), "w") as f:
        f.write("/* file %d */\n" % i)
        f.write("".join("int v%d_%d = %d;\n" % (i, k, rnd.randrange(10**6))
                        for k in range(rnd.randrange(10, 100))))
EOF
}

repo="$tmp/repo"
mkdir -p "$repo"
make_tree "$repo"
printf 'build/\n*.o\n' > "$repo/.gitignore"
(cd "$repo" && git init -q && git config gc.auto 0 && git add -A && git commit -q -m init && git gc -q)
cp -a "$repo" "$tmp/gitcopy"
mkdir -p "$tmp/plain"
make_tree "$tmp/plain"
# forgex fsyncs what it writes (git add does not by default): start from a
# clean page cache so no run pays for writing back this script's set-up
sync

# ms of one run of "$@" in the current folder
ms() {
	a=$(date +%s%N)
	"$@" >/dev/null 2>&1
	b=$(date +%s%N)
	echo $(( (b - a) / 1000 ))
}

# median of COLD_RUNS runs, each after `reset` (a shell command)
cold_median() {
	reset=$1
	shift
	i=0
	: > "$tmp/times"
	while [ $i -lt "$COLD_RUNS" ]; do
		sh -c "$reset"
		ms "$@" >> "$tmp/times"
		i=$((i + 1))
	done
	[ -n "${VERBOSE:-}" ] && tr '\n' ' ' < "$tmp/times" >&2 && echo >&2
	sort -n "$tmp/times" | awk '{ v[NR] = $1 } END { printf "%.3f", v[int((NR + 1) / 2)] / 1000 }'
}

echo "$FILES files; warm: median of $RUNS runs, cold: median of $COLD_RUNS runs"
printf '%-48s %12s\n' "what" "median ms"

cd "$repo"
t=$(cold_median "rm -rf .forgex" "$bin" checkpoint create -m cold)
printf '%-48s %12s\n' "forgex checkpoint create, cold (git repo)" "$t"
cd "$tmp/gitcopy"
t=$(cold_median "rm -f .git/index" sh -c 'git add -A && git write-tree')
printf '%-48s %12s\n' "git add -A && git write-tree, no index" "$t"

cd "$repo"
"$bin" checkpoint create -m prime >/dev/null
"$timer" "$RUNS" "$bin" checkpoint create -m warm | sed 's/^[^ ]* /forgex checkpoint create, warm (git repo)/' |
	awk '{ printf "%-48s %12s\n", "forgex checkpoint create, warm (git repo)", $(NF-1) }'
cd "$tmp/gitcopy"
git add -A && git write-tree >/dev/null
"$timer" "$RUNS" sh -c 'git add -A && git write-tree' |
	awk '{ printf "%-48s %12s\n", "git add -A && git write-tree, warm", $(NF-1) }'

cd "$repo"
for f in pkg00/mod00/file00000.c pkg03/mod04/file00043.c pkg09/mod09/file09999.c; do
	[ -f "$f" ] && echo "/* edit */" >> "$f"
done
echo new > new-file.txt
"$bin" checkpoint create -m edits >/dev/null
"$timer" "$RUNS" sh -c 'echo "/* $(date +%N) */" >> pkg05/mod05/file00055.c && "$0" checkpoint create -m edit' "$bin" |
	awk '{ printf "%-48s %12s\n", "forgex checkpoint create, 1 file changed", $(NF-1) }'
"$timer" "$RUNS" "$bin" diff |
	awk '{ printf "%-48s %12s\n", "forgex diff (a few files changed)", $(NF-1) }'

cd "$repo"
"$bin" checkpoint create -m settle >/dev/null
find pkg* -type f -exec touch {} +
sleep 1
t1=$(ms "$bin" checkpoint create -m touched1)
t2=$(ms "$bin" checkpoint create -m touched2)
t3=$(ms "$bin" checkpoint create -m touched3)
printf '%-48s %12s\n' "forgex checkpoint create, all touched, 1st" "$(echo "$t1" | awk '{ printf "%.3f", $1 / 1000 }')"
printf '%-48s %12s\n' "forgex checkpoint create, all touched, 2nd" "$(echo "$t2" | awk '{ printf "%.3f", $1 / 1000 }')"
printf '%-48s %12s\n' "forgex checkpoint create, all touched, 3rd" "$(echo "$t3" | awk '{ printf "%.3f", $1 / 1000 }')"
cp -a "$repo" "$tmp/copied"
cd "$tmp/copied"
sleep 1
t1=$(ms "$bin" checkpoint create -m copied1)
t2=$(ms "$bin" checkpoint create -m copied2)
printf '%-48s %12s\n' "forgex checkpoint create, after cp -a, 1st" "$(echo "$t1" | awk '{ printf "%.3f", $1 / 1000 }')"
printf '%-48s %12s\n' "forgex checkpoint create, after cp -a, 2nd" "$(echo "$t2" | awk '{ printf "%.3f", $1 / 1000 }')"

cd "$tmp/plain"
t=$(cold_median "rm -rf .forgex" "$bin" checkpoint create -m cold)
printf '%-48s %12s\n' "forgex checkpoint create, cold (not git)" "$t"
"$bin" checkpoint create -m prime >/dev/null
"$timer" "$RUNS" "$bin" checkpoint create -m warm |
	awk '{ printf "%-48s %12s\n", "forgex checkpoint create, warm (not git)", $(NF-1) }'

cd "$repo"
echo "shadow repository: $(du -sh .forgex/checkpoints | cut -f1) for $(ls .forgex/checkpoints/objects | wc -l) object folders (git repo, after all runs)"
echo "target: warm create under 200 ms"
