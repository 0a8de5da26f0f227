#!/bin/sh
# Run every benchmark script in bench/.
set -u
dir=$(dirname "$0")
for s in "$dir"/*.sh; do
	[ "$(basename "$s")" = run.sh ] && continue
	echo "== $(basename "$s")"
	sh "$s" || echo "(benchmark $(basename "$s") failed)"
	echo
done
