#!/usr/bin/env bash
# The test command: every test in ./build (GPU tests skip with a message where there is no GPU).
# Builds first if needed. Extra arguments go to ctest (e.g. -L model, -LE gpu).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
[ -f "$build/build.ninja" ] || { echo "no build in $build: run scripts/setup.sh first" >&2; exit 2; }
cmake --build "$build"
rc=0
ctest --test-dir "$build" --output-on-failure "$@" || rc=$?
# A build that leaves tests out says which and why (tests/CMakeLists.txt writes the list).
[ -f "$build/tests/not_built.txt" ] && cat "$build/tests/not_built.txt"
exit $rc
