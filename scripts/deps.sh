#!/bin/sh
# Install the Debian packages forgex needs that are missing.
#
#   scripts/deps.sh [build|test|fuzz|runners]...   (default: build test)
#
# runners: the real test runners the verification harness is tested
# against (go, pytest, cmake, meson, automake, node), then the npm ones through
# scripts/test-runners.sh.
#
# Idempotent and silent when nothing is missing. Installs with apt-get as
# root, through sudo otherwise; says clearly what to do when it cannot.
set -u

want_groups=${*:-build test}
missing=""
runners=0

need_pc() {	# need_pc PKG-CONFIG-NAME DEBIAN-PACKAGE
	if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists "$1" 2>/dev/null; then
		missing="$missing $2"
	fi
}

need_cmd() {	# need_cmd COMMAND DEBIAN-PACKAGE
	command -v "$1" >/dev/null 2>&1 || missing="$missing $2"
}

need_file() {	# need_file PATTERN DEBIAN-PACKAGE
	# shellcheck disable=SC2086
	set -- $1 "$2"
	[ -e "$1" ] || missing="$missing $2"
}

for g in $want_groups; do
	case $g in
	build)
		need_cmd cc gcc
		need_cmd make make
		need_cmd pkg-config pkg-config
		need_cmd git git
		need_pc libcurl libcurl4-openssl-dev
		need_pc jansson libjansson-dev
		need_pc libgit2 libgit2-dev
		need_pc zlib zlib1g-dev
		need_pc libseccomp libseccomp-dev
		need_pc libpcre2-8 libpcre2-dev
		need_pc libedit libedit-dev
		need_pc md4c libmd4c-dev
		need_cmd ctags universal-ctags
		;;
	test)
		need_pc cmocka libcmocka-dev
		need_cmd python3 python3
		need_file "/usr/lib/python3/dist-packages/jsonschema/__init__.py" python3-jsonschema	# tests/fixtures/k8s/validate.py
		need_cmd man man-db		# tests/e2e/install: man -l renders forgex(1)
		need_cmd zsh zsh		# ... and the completions parse in each shell
		need_cmd fish fish
		;;
	runners)
		need_cmd go golang-go
		need_file "/usr/lib/python3/dist-packages/pytest/__init__.py" python3-pytest
		need_cmd cmake cmake
		need_cmd meson meson
		need_cmd ninja ninja-build
		need_cmd automake automake
		need_cmd autoconf autoconf
		need_cmd node nodejs
		need_cmd npm npm
		runners=1
		;;
	fuzz)
		need_cmd clang clang
		need_file "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" libclang-rt-14-dev
		;;
	*)
		echo "deps.sh: unknown group '$g' (build, test, fuzz, runners)" >&2
		exit 2
		;;
	esac
done

# pkg-config itself may be what is missing; keep the list unique.
missing=$(printf '%s\n' $missing | sort -u | tr '\n' ' ')
npm_runners() {
	[ "$runners" = 1 ] || return 0
	sh "$(dirname "$0")/test-runners.sh" install
}
if [ -z "${missing% }" ]; then
	npm_runners
	exit $?
fi

echo "forgex: installing missing Debian packages:$missing" >&2
if [ "$(id -u)" = 0 ]; then
	as_root=""
elif command -v sudo >/dev/null 2>&1; then
	as_root="sudo"
else
	echo "forgex: cannot install packages: not root and sudo is not available." >&2
	echo "forgex: as root, run: apt-get install$missing" >&2
	exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "forgex: apt-get not found; install the equivalent of:$missing" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086
if ! $as_root apt-get update -qq >&2 ||
   ! $as_root apt-get install -y -qq --no-install-recommends $missing >&2; then
	echo "forgex: apt-get could not install:$missing" >&2
	exit 1
fi
npm_runners
