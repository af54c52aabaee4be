#!/usr/bin/env bash
# Copies what the GPU machines run (cco, the preload library, the GPU test binaries) from a build
# into build-gpu/ (git-ignored), small enough to carry: `run` with carry ["build-gpu"] and
# BUILD=build-gpu. Usage: scripts/stage_gpu.sh [BUILD_DIR]
# TESTS=GLOB stages only the test binaries whose names (after "cco.test.") match GLOB, e.g.
# TESTS=none for `scripts/gpu.sh multi` (cco and the libraries only): a whole staging (about
# 58 MB) and the tree together pass the device tool's 64 MiB carry.
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:-build}
rm -rf build-gpu
mkdir -p build-gpu/src/app/cli build-gpu/src/inject/preload build-gpu/src/inject/nccl_tuner build-gpu/tests
cp "$src/src/app/cli/cco" build-gpu/src/app/cli/
mkdir -p build-gpu/src/inject/startup && cp "$src/src/inject/startup/sitecustomize.py" build-gpu/src/inject/startup/
cp "$src/src/inject/preload/libcco_preload.so" build-gpu/src/inject/preload/ 2>/dev/null || true
cp "$src/src/inject/nccl_tuner/libcco_tuner.so" build-gpu/src/inject/nccl_tuner/ 2>/dev/null || true
tests=${TESTS:-*}
for t in "$src"/tests/cco.test.gpu_* "$src/tests/cco.test.bootstrap_store"; do  # the latter: its real-torchrun case
  # shellcheck disable=SC2053  # $tests is a glob on purpose
  if [[ -e $t && ${t##*/cco.test.} == $tests ]]; then cp "$t" build-gpu/tests/; fi
done
if [ "$tests" = '*' ]; then
  cp "$src"/tests/cco.bench.launch_rate build-gpu/tests/ 2>/dev/null || true
  cp "$src/tests/libcco_segv_backtrace.so" build-gpu/tests/ 2>/dev/null || true
fi
du -sh build-gpu
