#!/usr/bin/env bash
# Applies .clang-format to every C++/CUDA source in the tree. `--check` fails if anything would change.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=(-i)
[ "${1:-}" = "--check" ] && mode=(--dry-run -Werror)
git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh' | xargs -r clang-format "${mode[@]}"
