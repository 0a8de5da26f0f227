#!/bin/sh
# The repository map (`forgex map`) against `ctags -R` alone, in the same run:
#   1. a large real tree: SOURCE, a folder or a git directory (bare or not;
#      its HEAD is exported with `git archive`). Without SOURCE, a
#      generated tree of REAL_FILES (default 4800, the size of git.git)
#      stands in for it;
#   2. a generated tree of FILES (default 100000) C files in nested folders,
#      each defining functions and a struct and calling functions of other
#      files.
# For each tree, median wall time and peak RSS of RUNS (default 3) runs of:
#   ctags -R    `ctags --options=NONE -R --output-format=json -f - .`
#   cold        `forgex map --stats` with no cache (.forgex/map removed)
#   warm        the same with the cache, nothing changed
#   1 changed   after appending a line to one file
# and the budgets of DESIGN.md section 9: cold <= 1.5x ctags -R, warm <=
# 0.3 s on 100k files, one changed file <= 0.5 s, peak RSS <= 200 MB.
#
#   make && sh bench/map.sh [SOURCE]        FILES=N REAL_FILES=N RUNS=N
#
# The figures in bench/README.md were taken on a bare clone of git.git:
#   git clone --bare https://github.com/git/git git.git && sh bench/map.sh git.git
# forgex runs with the built-in configuration (XDG_CONFIG_HOME and HOME
# point at an empty folder), so ctags runs in the sandbox as for a user.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
FILES=${FILES:-100000}
REAL_FILES=${REAL_FILES:-4800}
RUNS=${RUNS:-3}
SOURCE=${1:-}
forgex="$top/build/forgex"

[ -x "$forgex" ] || { echo "map.sh: build first: make" >&2; exit 1; }
command -v ctags >/dev/null 2>&1 || { echo "map.sh: ctags is missing (apt-get install universal-ctags)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "map.sh: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/forgex-bench-map.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/home"
export XDG_CONFIG_HOME="$work/home" HOME="$work/home"

# gen DIR N: N C files in folders of 100
gen() {
	python3 - "$1" "$2" <<'EOF'
import os, random, sys
root, total = sys.argv[1], int(sys.argv[2])
random.seed(7)
words = ["count", "value", "buffer", "length", "next", "state", "flags", "index", "item", "node"]
for i in range(total):
    d = os.path.join(root, "mod%03d" % (i // 10000), "sub%03d" % (i // 100 % 100))
    if i % 100 == 0:
        os.makedirs(d, exist_ok=True)
    lines = ["#include \"common.h\"", "", "struct rec_%d {" % i]
    for w in random.sample(words, 3):
        lines.append("\tint %s;" % w)
    lines.append("};")
    for f in range(3):
        lines.append("")
        lines.append("int fn_%d_%d(struct rec_%d *r, int %s)" % (i, f, i, random.choice(words)))
        lines.append("{")
        for c in range(2):
            j = random.randrange(total)
            lines.append("\tr->%s += fn_%d_%d(0, %d);" % (random.choice(words), j, random.randrange(3), c))
        lines.append("\treturn r->%s;" % random.choice(words))
        lines.append("}")
    with open(os.path.join(d, "f%06d.c" % i), "w") as fh:
        fh.write("\n".join(lines) + "\n")
EOF
}

# run LABEL CMD...: RUNS runs; sets med (s) and rss (MB, the largest)
measure() {
	label=$1
	shift
	: > "$work/times"
	i=0
	while [ "$i" -lt "$RUNS" ]; do
		/usr/bin/time -f "%e %M" -o "$work/t1" "$@" > /dev/null 2> "$work/err" ||
			{ echo "map.sh: $label failed:" >&2; cat "$work/err" >&2; exit 1; }
		cat "$work/t1" >> "$work/times"
		i=$((i + 1))
	done
	med=$(sort -n "$work/times" | awk -v n="$RUNS" 'NR == int((n + 1) / 2) { print $1 }')
	rss=$(awk '$2 > m { m = $2 } END { printf "%.1f", m / 1024 }' "$work/times")
}

check() {	# check WHAT VALUE OP LIMIT
	if awk -v v="$2" -v l="$4" "BEGIN { exit !(v $3 l) }"; then echo "ok"; else echo "OVER BUDGET"; fi
}

bench_tree() {	# bench_tree NAME DIR [warm-budget]
	name=$1
	dir=$2
	cd "$dir"
	nfiles=$(find . -type f ! -path './.git/*' ! -path './.forgex/*' | wc -l)
	echo "-- $name: $nfiles files, $(du -sm --exclude=.git . | cut -f1) MB"
	measure "ctags -R" ctags --options=NONE -R --output-format=json -f - .
	ct=$med
	printf '  %-22s %7.2f s  %6.1f MB\n' "ctags -R" "$ct" "$rss"
	measure "cold" sh -c "rm -rf .forgex/map && exec '$forgex' map --stats"
	cold=$med
	crss=$rss
	grep -E '^(files|definitions|references):' "$work/err" | tr '\n' ' ' | sed 's/^/  /'
	echo
	printf '  %-22s %7.2f s  %6.1f MB  %.2fx ctags -R (budget 1.5x: %s)\n' "forgex map, cold" \
		"$cold" "$crss" "$(awk -v a="$cold" -v b="$ct" 'BEGIN { print a / b }')" \
		"$(check cold "$cold" "<=" "$(awk -v b="$ct" 'BEGIN { print 1.5 * b }')")"
	measure "warm" "$forgex" map --stats
	grep -q '^files: .* (\([0-9]*\) from the cache, 0 same content, 0 indexed' "$work/err" ||
		{ echo "map.sh: the warm run indexed files:" >&2; cat "$work/err" >&2; exit 1; }
	printf '  %-22s %7.3f s  %6.1f MB  (budget %s s: %s)\n' "forgex map, warm" "$med" "$rss" \
		"$3" "$(check warm "$med" "<=" "$3")"
	wrss=$rss
	f=$(find . -name '*.c' ! -path './.git/*' | sort | head -1)
	: > "$work/times"
	i=0
	while [ "$i" -lt "$RUNS" ]; do
		echo "int bench_changed_$i(void);" >> "$f"
		/usr/bin/time -f "%e %M" -o "$work/t1" "$forgex" map --stats > /dev/null 2> "$work/err"
		grep -q ' 1 indexed' "$work/err" ||
			{ echo "map.sh: one change indexed otherwise:" >&2; cat "$work/err" >&2; exit 1; }
		cat "$work/t1" >> "$work/times"
		i=$((i + 1))
	done
	med=$(sort -n "$work/times" | awk -v n="$RUNS" 'NR == int((n + 1) / 2) { print $1 }')
	rss=$(awk '$2 > m { m = $2 } END { printf "%.1f", m / 1024 }' "$work/times")
	printf '  %-22s %7.3f s  %6.1f MB  (budget 0.5 s: %s)\n' "forgex map, 1 changed" "$med" \
		"$rss" "$(check one "$med" "<=" 0.5)"
	peak=$(printf '%s\n%s\n%s\n' "$crss" "$wrss" "$rss" | sort -n | tail -1)
	printf '  %-22s %7.1f MB  (budget 200 MB: %s)\n' "peak RSS" "$peak" "$(check rss "$peak" "<=" 200)"
	cd "$top"
}

mkdir -p "$work/real"
if [ -z "$SOURCE" ]; then
	echo "map.sh: no SOURCE given: a generated tree of $REAL_FILES files stands in for a real one"
	gen "$work/real" "$REAL_FILES"
	realname="generated, $REAL_FILES files"
elif [ -d "$SOURCE/objects" ] && [ -f "$SOURCE/HEAD" ]; then
	git --git-dir="$SOURCE" archive HEAD | tar -x -C "$work/real"
	realname="$(basename "$(cd "$SOURCE/.." && pwd)") @ $(git --git-dir="$SOURCE" rev-parse --short HEAD)"
elif [ -d "$SOURCE/.git" ]; then
	git -C "$SOURCE" archive HEAD | tar -x -C "$work/real"
	realname="$(basename "$SOURCE") @ $(git -C "$SOURCE" rev-parse --short HEAD)"
elif [ -d "$SOURCE" ]; then
	cp -a "$SOURCE/." "$work/real/"
	realname="$(basename "$SOURCE")"
else
	echo "map.sh: '$SOURCE' is neither a folder nor a git directory" >&2
	exit 2
fi
git -C "$work/real" init -q
bench_tree "real tree ($realname)" "$work/real" 0.3

mkdir -p "$work/gen"
gen "$work/gen" "$FILES"
git -C "$work/gen" init -q
bench_tree "generated tree" "$work/gen" 0.3
