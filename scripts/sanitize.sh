#!/usr/bin/env bash
# The GPU-free code under sanitizers (issue 9), built with clang from the presets in
# CMakePresets.json: AddressSanitizer + UndefinedBehaviorSanitizer over every GPU-free test (the
# preload library's unit tests included, where the CUDA and NCCL headers exist) in build-fuzz, the
# tree scripts/fuzz.sh then fuzzes in without building again; ThreadSanitizer over the code that
# uses threads (bootstrap, preload, the measuring loop, the trace reader) in build-tsan. Builds
# without CUDA, so it runs on any machine with clang (scripts/setup.sh installs it).
# Usage: scripts/sanitize.sh [asan|tsan|all]
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
case "$what" in asan | tsan | all) ;; *) echo "usage: scripts/sanitize.sh [asan|tsan|all]" >&2; exit 2 ;; esac
if ! command -v clang++ >/dev/null; then
  echo "sanitize: clang++ not found (Debian: apt-get install clang libclang-rt-14-dev; scripts/setup.sh does)" >&2
  exit 2
fi
jobs=${SANITIZE_BUILD_JOBS:-$(nproc)}
if [ "$what" = asan ] || [ "$what" = all ]; then
  echo "== ASan + UBSan (GPU-free clang build in build-fuzz, preset 'sanitize')"
  cmake --preset sanitize >/dev/null
  cmake --build build-fuzz --parallel "$jobs"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-fuzz --output-on-failure -LE gpu --parallel "$jobs"
fi
if [ "$what" = tsan ] || [ "$what" = all ]; then
  echo "== TSan (bootstrap, preload unit tests, the measuring loop, the trace reader; clang build in build-tsan, preset 'tsan')"
  cmake --preset tsan >/dev/null
  # The bootstrap, the preload library's unit tests (its hook is called from many threads of the
  # host program; built where the CUDA and NCCL headers exist: every one there is) and the
  # measuring loop on thread ranks.
  tsan_tests='cco\.test\.(bootstrap|preload_|bench_engine|trace_model)[a-z_0-9]*'
  cmake --build build-tsan --parallel "$jobs" --target $(cd build-tsan && ninja -t targets all |
    grep -oE "^$tsan_tests" | sort -u | tr '\n' ' ')
  TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build-tsan --output-on-failure -R "^$tsan_tests\$" \
    --parallel "$jobs"
fi
