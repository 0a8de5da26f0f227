#!/bin/sh
# The JavaScript test runners the end-to-end tests run for real (mocha,
# Jest 25 and 29, Vitest 3, size-limit), installed from the npm registry
# into a cache folder, never into the repository.
#
#   scripts/test-runners.sh install      install what is missing
#   scripts/test-runners.sh path NAME    print NAME's program, or say why not (exit 1)
#
# NAME is mocha, jest25, jest29, vitest or size-limit. The folder is
# $FORGEX_TEST_RUNNERS, else ~/.cache/forgex-test-runners (not $XDG_CACHE_HOME,
# which the test suite points at its build folder).
set -u

dir=${FORGEX_TEST_RUNNERS:-$HOME/.cache/forgex-test-runners}

spec() {	# spec NAME -> "folder packages... bin"
	case $1 in
	mocha) echo "mocha-10 mocha@10 mocha" ;;
	jest25) echo "jest-25 jest@25 jest" ;;
	jest29) echo "jest-29 jest@29 jest" ;;
	vitest) echo "vitest-3 vitest@3 vitest" ;;
	size-limit) echo "size-limit-11 size-limit@11 @size-limit/file@11 @size-limit/esbuild@11 size-limit" ;;
	*) return 1 ;;
	esac
}

bin_of() {	# bin_of NAME
	# shellcheck disable=SC2046
	set -- $(spec "$1")
	folder=$1
	shift $(($# - 1))
	echo "$dir/$folder/node_modules/.bin/$1"
}

install_one() {	# install_one NAME
	# shellcheck disable=SC2046
	set -- $(spec "$1")
	folder=$1
	shift
	n=$#
	pkgs=""
	while [ "$n" -gt 1 ]; do pkgs="$pkgs $1"; shift; n=$((n - 1)); done
	[ -x "$dir/$folder/node_modules/.bin/$1" ] && return 0
	mkdir -p "$dir/$folder" || return 1
	[ -f "$dir/$folder/package.json" ] || echo '{"private": true}' >"$dir/$folder/package.json"
	# shellcheck disable=SC2086
	(cd "$dir/$folder" && npm install --no-audit --no-fund --loglevel=error $pkgs) >&2
}

case ${1:-} in
install)
	if ! command -v npm >/dev/null 2>&1; then
		echo "test-runners: npm is not installed; the JavaScript runner tests will skip" >&2
		exit 0
	fi
	status=0
	for name in mocha jest25 jest29 vitest size-limit; do
		install_one "$name" || { echo "test-runners: could not install $name" >&2; status=1; }
	done
	exit $status
	;;
path)
	if ! spec "${2:-}" >/dev/null; then
		echo "test-runners: unknown runner '${2:-}'" >&2
		exit 2
	fi
	b=$(bin_of "$2")
	if [ ! -x "$b" ]; then
		echo "$2 is not installed in $dir (run: scripts/test-runners.sh install)"
		exit 1
	fi
	echo "$b"
	;;
*)
	echo "usage: scripts/test-runners.sh install | path NAME" >&2
	exit 2
	;;
esac
