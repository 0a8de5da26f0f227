#!/bin/sh
# The layer order of DESIGN.md section 1, checked on every include of src/:
# a file includes only headers of its own folder or of a layer below it,
# and no service includes another service. Run by `make test` as a suite
# of two TAP cases.
#
#   sh tests/layers.sh
#
# Bottom up: base, config, ws, the services (llm, mcp, sandbox, vcs,
# verify: one capability each, side by side), context, tools, agents,
# pipeline, batch, cli.
set -u

top=$(cd "$(dirname "$0")/.." && pwd)

rank() {
	case $1 in
	base) echo 0 ;;
	config) echo 1 ;;
	ws) echo 2 ;;
	llm | mcp | sandbox | vcs | verify) echo 3 ;;
	context) echo 4 ;;
	tools) echo 5 ;;
	agents) echo 6 ;;
	pipeline) echo 7 ;;
	batch) echo 8 ;;
	cli) echo 9 ;;
	*) echo "" ;;
	esac
}

up=""
unknown=""
for f in $(cd "$top" && find src -name '*.[ch]' | sort); do
	from=$(echo "$f" | cut -d/ -f2)
	rf=$(rank "$from")
	if [ -z "$rf" ]; then
		unknown="$unknown$f: folder '$from' has no place in the layer order
"
		continue
	fi
	for to in $(sed -n 's|^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z_]*\)/.*|\1|p' "$top/$f" | sort -u); do
		[ "$to" = "$from" ] && continue
		rt=$(rank "$to")
		if [ -z "$rt" ]; then
			unknown="$unknown$f: includes '$to/', which has no place in the layer order
"
		elif [ "$rt" -gt "$rf" ]; then
			up="$up$f ($from) includes $to/, a layer above
"
		elif [ "$rt" -eq "$rf" ]; then
			up="$up$f ($from) includes $to/, another service
"
		fi
	done
done

echo "1..2"
if [ -n "$unknown" ]; then
	echo "not ok 1 - every folder of src/ has a place in the layer order"
	printf '%s' "$unknown" | sed 's/^/#   /'
else
	echo "ok 1 - every folder of src/ has a place in the layer order"
fi
if [ -n "$up" ]; then
	echo "not ok 2 - no include runs up a layer or sideways between services"
	printf '%s' "$up" | sed 's/^/#   /'
else
	echo "ok 2 - no include runs up a layer or sideways between services"
fi
[ -z "$unknown$up" ]
