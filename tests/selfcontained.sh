#!/bin/sh
# The repository speaks of itself only: no tracked file names the folder
# this checkout lives in (or a parent of it), the home folder of the
# person running the check, or the tools of the environment the project
# was built in. Run by `make test` as a suite of three TAP cases.
#
#   sh tests/selfcontained.sh
#
# System folders (/tmp, /usr, /home itself, ...) are never taken for a
# parent of the checkout: a clone under /tmp must not make every /tmp in
# the sandbox docs an error. Lines that must name such a path anyway go in
# the allow list below as FILE:TEXT (fixed strings).
set -u

top=$(cd "$(dirname "$0")/.." && pwd -P)
self=tests/selfcontained.sh
allow='
bench/pipeline.sh:"$tmp"/work/
'

files=$(mktemp "${TMPDIR:-/tmp}/forgex-selfcheck.XXXXXX")
hits=$(mktemp "${TMPDIR:-/tmp}/forgex-selfcheck.XXXXXX")
trap 'rm -f "$files" "$hits"' EXIT

if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
	git -C "$top" ls-files >"$files"
else
	(cd "$top" && find . -path ./build -prune -o -type f -print | sed 's|^\./||') >"$files"
fi
grep -v -x -F "$self" "$files" >"$files.x" && mv "$files.x" "$files"

# A folder that every Linux machine has is not this machine's.
is_system() {
	case $1 in
	/ | /tmp | /var | /var/tmp | /home | /usr | /usr/local | /usr/src | /opt | /srv | /mnt | /media | /run | /proc | /dev)
		return 0 ;;
	esac
	return 1
}

# ERE for an absolute path as a whole path: not a longer name's prefix
# ("/work" must not match "/workspace"), not inside another path ("/tmp/work").
as_path() {
	printf '(^|[^A-Za-z0-9_./~-])%s([/"'"'"'`:;,) ]|$)' \
		"$(printf '%s' "$1" | sed 's/[].[^$*+?(){}|\\]/\\&/g')"
}

patterns=""
p=$top
while ! is_system "$p"; do
	patterns="$patterns$(as_path "$p")
"
	p=$(dirname "$p")
done
home_patterns=""
for h in "${HOME:-}" "$(getent passwd "$(id -u)" 2>/dev/null | cut -d: -f6)"; do
	[ -n "$h" ] && ! is_system "$h" && home_patterns="$home_patterns$(as_path "$h")
"
done
# The build environment's own tools and the folders they leave.
tool_patterns='\.mirror/
\.library/
find_repos
find_string
find_files
`fetch` tool
fetch tool
duplicates --change
'

n=0
failed=0
check() {	# check DESCRIPTION PATTERNS
	n=$((n + 1))
	: >"$hits"
	if [ -n "$2" ]; then
		printf '%s' "$2" | grep -v '^$' >"$hits.pat"
		(cd "$top" && tr '\n' '\0' <"$files" |
			xargs -0 grep -I -n -H -E -f "$hits.pat" -- 2>/dev/null) >"$hits.all"
		rm -f "$hits.pat"
		while IFS= read -r line; do
			skip=0
			while IFS= read -r a; do
				[ -z "$a" ] && continue
				f=${a%%:*} t=${a#*:}
				case $line in "$f:"*"$t"*) skip=1 ;; esac
			done <<EOF
$allow
EOF
			[ $skip -eq 0 ] && printf '%s\n' "$line" >>"$hits"
		done <"$hits.all"
		rm -f "$hits.all"
	fi
	if [ -s "$hits" ]; then
		echo "not ok $n - $1"
		sed 's/^/#   /' "$hits" | head -n 40
		failed=$((failed + 1))
	else
		echo "ok $n - $1"
	fi
}

echo "1..3"
check "no tracked file names the checkout's folder or its parents" "$patterns"
check "no tracked file names the home folder" "$home_patterns"
check "no tracked file names the build environment's tools" "$tool_patterns"
[ $failed -eq 0 ]
