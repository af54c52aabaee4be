#!/usr/bin/env bash
# check_tree.py fails when the tree breaks its rules: a copy of the tree, broken one way at a time,
# must give exit 1 and the line that names the break (a check that cannot fail proves nothing).
# Usage: test_check_tree.sh SOURCE_ROOT
set -uo pipefail
root=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
fresh() {
  rm -rf "$tmp/t" && mkdir "$tmp/t"
  for p in README.md CHANGELOG.md docs examples scripts src tests; do cp -r "$root/$p" "$tmp/t/"; done
}
expect() {  # expect WHAT PATTERN: check_tree.py on the broken copy exits 1 with a line matching PATTERN
  out=$(python3 "$tmp/t/tests/repo/check_tree.py" "$tmp/t" 2>&1)
  rc=$?
  [ "$rc" = 1 ] || fail "$1: exit $rc, want 1 ($out)"
  echo "$out" | grep -qE "$2" || fail "$1: no line matching '$2' in: $out"
  echo "ok: $1: $(echo "$out" | grep -E "$2" | head -1)"
}
fresh
out=$(python3 "$tmp/t/tests/repo/check_tree.py" "$tmp/t") || fail "the unbroken copy: $out"

fresh  # the core includes the lab
echo '#include "bench/options.hpp"' >>"$tmp/t/src/core/model/types.hpp"
expect "core includes lab" '^tree: src/core/model/types.hpp: includes bench/, which src/core/model may not'
fresh  # the core includes a GPU header
echo '#include <cuda_runtime.h>' >>"$tmp/t/src/core/plan/plan.hpp"
expect "GPU header in the core" '^tree: src/core/plan/plan.hpp: a GPU library header in the GPU-free core'
fresh  # an area outside the layers
mkdir -p "$tmp/t/src/misc" && touch "$tmp/t/src/misc/x.cpp"
expect "folder outside the layers" '^tree: src/misc: not a layer'
fresh  # folder names one letter apart
mkdir -p "$tmp/t/tests/core/workloads"
expect "names one letter apart" '^tree: tests/: folders workload/ and workloads/, names one letter apart'
fresh  # an env name spelled outside env_names.hpp
echo 'const char* k = "CCO_POLICY";' >>"$tmp/t/src/app/cli/main.cpp"
expect "env name spelled twice" '^tree: src/app/cli/main.cpp:[0-9]+: "CCO_POLICY" spelled here'
fresh  # a comment names a page that does not exist
echo '// the commands: docs/INSTALL.md' >>"$tmp/t/src/app/cli/main.cpp"
expect "a dangling page name" '^tree: src/app/cli/main.cpp:[0-9]+: names docs/INSTALL.md, which does not exist'
echo "check_tree.py fails on each broken copy"
