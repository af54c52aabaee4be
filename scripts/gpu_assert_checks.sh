#!/usr/bin/env bash
# One GPU: the asserting CTest entries of the preload GPU tests, run as CTest runs them (on the
# staged build), and the same with the library's effect removed (--policy off), where they must
# fail: evidence that the assertions can fail. Also the occupancy test (its summary now asserts
# that comparisons ran) and the launch-rate benchmark. Usage: BUILD=build-gpu scripts/gpu_assert_checks.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_env.sh
source scripts/gpu_logs.sh
stages=all
gt="$B/tests/cco.test.gpu_preload"
say "# gpu_assert_checks $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
check() {  # NAME WANT(pass|fail) CMD...
  local name=$1 want=$2; shift 2
  timeout 240 "$@" >"$O/$name.log" 2>&1
  local rc=$? got=pass
  [ $rc = 0 ] || got=fail
  say "== $name: rc=$rc ($got, wanted $want) $(grep -E '^\[  (PASSED|FAILED|SKIPPED) |^GPU tests:|^SKIPPED' "$O/$name.log" | tr '\n' ' ')"
  grep -E 'Failure|cco-probe' "$O/$name.log" | head -6 | tee -a "$O/summary.txt"
}
check shaped pass "$cco" run --policy shape:2 -- env CCO_TEST_EXPECT_BLOCKS=2 "$gt" --gtest_filter='-*Priority*:*CommunicationWindow*'
check shaped_broken fail "$cco" run --policy off -- env CCO_TEST_EXPECT_BLOCKS=2 "$gt" --gtest_filter='-*Priority*:*CommunicationWindow*'
check priority pass "$cco" run --policy priority -- env CCO_TEST_EXPECT_PRIORITY=1 "$gt" --gtest_filter='*Priority*'
check priority_broken fail "$cco" run --policy off -- env CCO_TEST_EXPECT_PRIORITY=1 "$gt" --gtest_filter='*Priority*'
check window pass env CCO_TEST_REQUIRE_WINDOW=1 "$cco" run --policy shape+priority:model@overlap -- "$gt" --gtest_filter=PreloadGpu.CommunicationWindow
check all_skipped skip "$gt" --gtest_filter=PreloadGpu.CommunicationWindow
check occupancy pass "$B/tests/cco.test.gpu_occupancy_live"
check occupancy_summary_alone fail "$B/tests/cco.test.gpu_occupancy_live" --gtest_filter='*Summary*'
check launch_rate pass "$B/tests/cco.bench.launch_rate"
say "# done $(date -u +%FT%TZ)"
