#!/bin/sh
# The `search` tool against ripgrep on large trees, in the same run:
#   1. a copy of /usr/include (thousands of real C headers),
#   2. a generated tree of FILES (default 20000) source files in nested
#      folders with nested .gitignore files, negations, hidden files,
#      binary files and CRLF lines, made a git repository so that ripgrep
#      reads the ignore files too.
# For each literal pattern: the sorted outputs must be identical (the run
# fails otherwise), and the median wall time of RUNS (default 5) runs of
# each is printed with the ratio search/rg. Budget (DESIGN.md section 9):
# within 1.5x of ripgrep, same results.
#
#   make && sh bench/search.sh          FILES=N RUNS=N to change the sizes
#
# ripgrep is run as `rg -n --hidden --no-ignore-global --no-config
# -g '!.git' -F PATTERN .`: the search tool searches hidden files, skips
# .git, and does not read the global git excludes (see tools/search.h).
# Outputs go to files, not /dev/null (ripgrep stops early on /dev/null).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
FILES=${FILES:-20000}
RUNS=${RUNS:-5}
PKGS="libcurl jansson libgit2 libseccomp libpcre2-8"

command -v rg >/dev/null 2>&1 || { echo "search.sh: ripgrep is missing (apt-get install ripgrep)" >&2; exit 1; }
[ -f "$top/build/libforgex.a" ] || { echo "search.sh: build first: make" >&2; exit 1; }
mkdir -p "$top/build/bench"
helper="$top/build/bench/fx-search"
if [ ! -x "$helper" ] || [ "$top/bench/fx-search.c" -nt "$helper" ] ||
   [ "$top/build/libforgex.a" -nt "$helper" ]; then
	# shellcheck disable=SC2046,SC2086
	cc -O2 -std=c11 -D_GNU_SOURCE -I"$top/src" $(pkg-config --cflags $PKGS) \
		-o "$helper" "$top/bench/fx-search.c" "$top/build/libforgex.a" \
		$(pkg-config --libs $PKGS) -lpthread
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/forgex-bench-search.XXXXXX")
trap 'rm -rf "$work"' EXIT

# 1. real headers
mkdir -p "$work/include"
cp -a /usr/include/. "$work/include/"
git -C "$work/include" init -q

# 2. a generated tree
python3 - "$work/gen" "$FILES" <<'EOF'
import os, random, sys
root, total = sys.argv[1], int(sys.argv[2])
random.seed(1)
words = ["needle", "static", "inline", "return 0;", "TODO", "int", "void", "struct",
         "the", "value", "caf\u00e9", "x", "buffer", "#include <stdio.h>", "{", "}",
         "for (i = 0; i < n; i++)", "if (err)", "goto out;", "unsigned long"]
dirs = ["src", "lib", "include", "build", "docs", "test", ".hidden", "vendor", "gen",
        "core", "util", "net", "fs", "mm", "drivers"]
names = ["main.c", "util.h", "notes.txt", "debug.log", "keep.log", "a.o", "README.md",
         "x.py", "data.json", "run.sh", "out.tmp", "list.c", "map.c", "io.c", "parse.c"]
rules = ["*.log", "!keep.log", "build/", "/docs", "*.o", "gen/**", "*.tmp", "vendor",
         "!*.c", "**/test/*.py", ".hidden/", "*.json", "[ab]*", "!include/"]
made = 0
folders = [""]
while made < total:
    base = random.choice(folders)
    d = os.path.join(base, random.choice(dirs)) if len(base.split("/")) < 6 else base
    os.makedirs(os.path.join(root, d), exist_ok=True)
    if d not in folders:
        folders.append(d)
        if random.random() < 0.15:
            with open(os.path.join(root, d, ".gitignore"), "w") as f:
                f.write("\n".join(random.sample(rules, random.randint(1, 3))) + "\n")
    for _ in range(random.randint(1, 12)):
        path = os.path.join(root, d, "%d-%s" % (made, random.choice(names)))
        lines = []
        for _ in range(random.randint(5, 120)):
            lines.append(" ".join(random.choice(words) for _ in range(random.randint(0, 9))))
        eol = "\r\n" if random.random() < 0.05 else "\n"
        data = (eol.join(lines) + eol).encode()
        if random.random() < 0.02:
            data = data[:100] + b"\0" + data[100:]
        with open(path, "wb") as f:
            f.write(data)
        made += 1
EOF
git -C "$work/gen" init -q

now() { date +%s%N; }

# median of the RUNS wall times of "$@" (output to $out), in ms
median() {
	i=0
	: > "$work/times"
	while [ $i -lt "$RUNS" ]; do
		t0=$(now)
		"$@" > "$work/run.out" 2>/dev/null || true
		t1=$(now)
		echo $(( (t1 - t0) / 1000 )) >> "$work/times"
		i=$((i + 1))
	done
	sort -n "$work/times" | awk '{ a[NR] = $1 } END { printf "%.1f", a[int((NR + 1) / 2)] / 1000 }'
}

fail=0
printf '%-10s %-16s %9s %10s %10s %7s\n' tree pattern lines "rg ms" "search ms" ratio
for tree in include gen; do
	cd "$work/$tree"
	n=$(find . -type f -not -path './.git/*' | wc -l)
	for pat in needle "static inline" "return 0;" TODO "#include" zzzz_nowhere "caf$(printf '\303\251')"; do
		rg -n --hidden --no-ignore-global --no-config -g '!.git' -F -- "$pat" . 2>/dev/null |
			sed 's|^\./||' | grep -av ': WARNING: stopped searching binary file' |
			LC_ALL=C sort > "$work/rg.txt" || true
		"$helper" "$pat" 2>/dev/null | LC_ALL=C sort > "$work/fx.txt" || true
		lines=$(wc -l < "$work/fx.txt")
		if ! cmp -s "$work/rg.txt" "$work/fx.txt"; then
			echo "DIFFERENT results for '$pat' on $tree:" >&2
			diff "$work/rg.txt" "$work/fx.txt" | head -n 10 >&2
			fail=1
		fi
		rg_ms=$(median rg -n --hidden --no-ignore-global --no-config -g '!.git' -F -- "$pat" .)
		fx_ms=$(median "$helper" "$pat")
		ratio=$(awk -v a="$fx_ms" -v b="$rg_ms" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
		printf '%-10s %-16s %9s %10s %10s %7s\n' "$tree" "$pat" "$lines" "$rg_ms" "$fx_ms" "$ratio"
	done
	echo "($tree: $n files)"
done
echo "budget: within 1.5x of ripgrep, same results (DESIGN.md section 9)"
[ $fail -eq 0 ] || { echo "search.sh: results differ from ripgrep" >&2; exit 1; }
