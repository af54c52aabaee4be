#!/usr/bin/env bash
# The GPU-free code under sanitizers (issue 9): AddressSanitizer + UndefinedBehaviorSanitizer
# over every GPU-free test (the preload library's unit tests included, where the CUDA and NCCL
# headers exist), then ThreadSanitizer over the code that uses threads (bootstrap, preload).
# Builds without CUDA, so it runs on any machine. Usage: scripts/sanitize.sh [asan|tsan|all]
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
if [ "$what" = asan ] || [ "$what" = all ]; then
  echo "== ASan + UBSan (GPU-free build in build-asan)"
  cmake -S . -B build-asan -G Ninja -DCCO_ENABLE_CUDA=OFF -DCCO_ENABLE_ASAN=ON -DCCO_ENABLE_UBSAN=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build-asan
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -LE gpu
fi
if [ "$what" = tsan ] || [ "$what" = all ]; then
  echo "== TSan (bootstrap, preload unit tests, the measuring loop; in build-tsan)"
  cmake -S . -B build-tsan -G Ninja -DCCO_ENABLE_CUDA=OFF -DCCO_ENABLE_TSAN=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  # The bootstrap, the preload library's unit tests (its hook is called from many threads of the
  # host program; built where the CUDA and NCCL headers exist: every one there is) and the
  # measuring loop on thread ranks.
  tsan_tests='cco\.test\.(bootstrap|preload_|bench_engine)[a-z_0-9]*'
  cmake --build build-tsan --target $(cd build-tsan && ninja -t targets all |
    grep -oE "^$tsan_tests" | sort -u | tr '\n' ' ')
  TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build-tsan --output-on-failure -R "^$tsan_tests\$"
fi
