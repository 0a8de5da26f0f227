#!/bin/sh
# Native sandbox spawn overhead (DESIGN.md section 9: under 2 ms added to
# spawning /bin/true).
#
#   sh bench/sandbox.sh [RUNS]      (default 200; BUILD=build)
#
# Builds bench/sandbox_spawn.c against $BUILD/libforgex.a and runs, in the
# same process and run: plain fork + execve + waitpid of /bin/true, then
# /bin/true through the executor with the "none" and "native" backends,
# native without the UNIX socket guard, and native with network = true
# (the egress proxy's bridge in the sandbox: issue 20's budget is +3 ms
# without network and +10 ms with), printing the median of RUNS runs of
# each and what the executor adds.
# BENCH_BREAKDOWN=1 also prints native without each of its namespaces.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
runs=${1:-200}
pkgs="libcurl jansson libgit2 libseccomp libpcre2-8"

cd "$top"
make --no-print-directory "$BUILD/libforgex.a" >/dev/null
mkdir -p "$BUILD/bench"
# shellcheck disable=SC2046
${CC:-cc} -std=c11 -D_GNU_SOURCE -O2 -g -Isrc -include src/base/banned.h \
	$(pkg-config --cflags $pkgs) -o "$BUILD/bench/sandbox_spawn" \
	bench/sandbox_spawn.c "$BUILD/libforgex.a" $(pkg-config --libs $pkgs)

ws=$(mktemp -d "${TMPDIR:-/tmp}/forgex-bench.XXXXXX")
trap 'rm -rf "$ws"' EXIT
cd "$ws"
# no user or project configuration may change what is measured
XDG_CONFIG_HOME="$ws/xdg" HOME="$ws" "$top/$BUILD/bench/sandbox_spawn" "$runs"
