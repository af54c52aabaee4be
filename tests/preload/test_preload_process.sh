#!/usr/bin/env bash
# libcco_preload.so in real processes, GPU-free: what it exports and links, that it does no harm
# where there is no GPU, dlsym's RTLD_NEXT, and the whole path cudart takes (dlopen libcuda,
# dlsym cuGetProcAddress_v2, cuGetProcAddress, launch) against a fake libcuda.so.1.
set -u
lib=${CCO_PRELOAD_LIB:?}
fakedir=${CCO_FAKE_CUDA_DIR:?}
app=${CCO_FAKE_APP:?}
probe=${CCO_PROBE_MAIN:?}
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset CCO_DISABLE CCO_POLICY CCO_PLAN CCO_STATS CCO_VERBOSE CCO_PRIORITY_METHOD

# --- exports and dependencies ---------------------------------------------------------------
want="cuGetProcAddress cuGetProcAddress_v2 cuLaunchKernel cuLaunchKernelEx cuLaunchKernelEx_ptsz cuLaunchKernel_ptsz dlsym ncclAllGather ncclAllReduce ncclAlltoAll ncclBcast ncclBroadcast ncclGather ncclGroupEnd ncclGroupSimulateEnd ncclGroupStart ncclRecv ncclReduce ncclReduceScatter ncclScatter ncclSend"
got=$(nm -D --defined-only "$lib" | awk 'NF == 3 {print $3}' | sort | tr '\n' ' ' | sed 's/ $//')
[ "$got" = "$want" ] || fail "exported symbols differ:
  got:  $got
  want: $want"
if ldd "$lib" | grep -qE 'libcuda|libnccl|libcudart|libstdc\+\+|libgcc_s'; then
  fail "the library must link none of libcuda, libnccl, libcudart, libstdc++, libgcc_s: $(ldd "$lib" | tr '\n' ' ')"
fi

# --- no harm in processes without a GPU -------------------------------------------------------
for cmd in "true" "sh -c 'echo hello >/dev/null'" "python3 -c 'import ctypes, ctypes.util; ctypes.util.find_library(\"m\")'"; do
  out=$(env LD_PRELOAD="$lib" CCO_STATS=1 sh -c "$cmd" 2>&1)
  rc=$?
  [ $rc = 0 ] || fail "'$cmd' under the library exited $rc: $out"
  [ -z "$out" ] || fail "'$cmd' under the library printed: $out"
done
out=$(env LD_PRELOAD="$lib" CCO_STATS=2 true 2>&1)
echo "$out" | grep -q '^cco-preload: stats pid=[0-9]* seen=0 (no kernel launch reached the library)$' \
  || fail "CCO_STATS=2 with no launch: '$out'"

# --- dlsym ----------------------------------------------------------------------------------
plain=$("$probe" 2>&1)
echo "$plain" | grep -q '^rtld_next=2$' || fail "probe without the library: $plain"
pre=$(env LD_PRELOAD="$lib" "$probe" 2>&1)
echo "$pre" | grep -q '^rtld_next=2$' || fail "dlsym(RTLD_NEXT) from a later library lost its caller: $pre"
echo "$pre" | grep -q '^malloc=1$' || fail "dlsym(RTLD_DEFAULT, malloc): $pre"
echo "$pre" | grep -q '^missing=1$' || fail "dlsym of a missing symbol: $pre"
echo "$pre" | grep -q '^cuLaunchKernel default=1 next=1 same=1$' || fail "dlsym of our own export: $pre"

# --- the driver path, end to end, against a fake libcuda ---------------------------------------
run_app() {  # run_app ENV...: the fake app's output (stdout) and stderr in $tmp/err
  env LD_LIBRARY_PATH="$fakedir" "$@" "$app" 2>"$tmp/err"
}
expect_line() {  # expect_line OUTPUT LABEL PATTERN
  echo "$1" | grep -qE "^$3\$" || fail "$2: no line '$3' in:
$1"
}
untouched() {  # untouched OUTPUT LABEL: every launch as the program asked
  local o=$1 l=$2
  expect_line "$o" "$l" "gemm-legacy variant=0 shmem=0 attrs=0 priority=1 launches=1"
  expect_line "$o" "$l" "gemm-ptsz variant=1 shmem=0 .*"
  expect_line "$o" "$l" "gemm-ex variant=2 shmem=0 attrs=0 .*"
  expect_line "$o" "$l" "nccl-ex variant=2 shmem=0 attrs=0 priority=1 .*"
  expect_line "$o" "$l" "gemm-direct variant=0 shmem=0 .*"
}

out=$(run_app)
expect_line "$out" "no library" "gpa ours=0"
expect_line "$out" "no library" "launch ours=0"
expect_line "$out" "no library" "v1 gpa ours=0 launch ours=0 same=1"
untouched "$out" "no library"

pad=115713  # sm_90, 256 threads x 32 registers: 8 -> 1 block per SM (tests/preload/test_hook.cpp)
out=$(run_app LD_PRELOAD="$lib" CCO_POLICY=shape+priority:1 CCO_STATS=1)
l="shape+priority:1"
expect_line "$out" "$l" "gpa ours=1"
expect_line "$out" "$l" "gpa-of-gpa ours=1"
expect_line "$out" "$l" "launch ours=1"
expect_line "$out" "$l" "same-wrapper=1"
expect_line "$out" "$l" "v1 gpa ours=1 launch ours=1 same=1"
expect_line "$out" "$l" "gemm-legacy variant=0 shmem=$pad attrs=0 priority=1 launches=1"
expect_line "$out" "$l" "gemm-ptsz variant=1 shmem=$pad attrs=0 priority=1 launches=2"
expect_line "$out" "$l" "ctxless-legacy variant=0 shmem=$pad .*"
expect_line "$out" "$l" "gemm-small-grid variant=0 shmem=0 .*"
expect_line "$out" "$l" "gemm-ex variant=2 shmem=$pad attrs=0 .*"
expect_line "$out" "$l" "gemm-ex-ptsz variant=3 shmem=$pad .*"
expect_line "$out" "$l" "gemm-ex-cooperative variant=2 shmem=0 attrs=1 .*"
expect_line "$out" "$l" "nccl-ex variant=2 shmem=0 attrs=1 priority=-5 .*"
expect_line "$out" "$l" "gemm-direct variant=0 shmem=$pad .*"
grep -qE '^cco-preload: stats pid=[0-9]+ policy=shape\+priority:1 method=launch-attr seen=9 shaped=6 passed=3 nccl=1 nccl_prioritised=1 .*skip.cooperative=1 skip.small-grid=1' "$tmp/err" \
  || fail "stats line: $(cat "$tmp/err")"
[ "$(grep -c . "$tmp/err")" = 1 ] || fail "expected only the stats line on stderr: $(cat "$tmp/err")"

out=$(run_app LD_PRELOAD="$lib" CCO_POLICY=shape:model CCO_VERBOSE=1)
expect_line "$out" "shape:model" "gemm-legacy variant=0 shmem=45569 .*"  # 8 -> 4 blocks per SM
grep -q "cco-preload: kernel my_gemm_k(float\*, float\*, int): 256 threads, 32 regs, 0+0 B smem: 8 blocks/SM -> 4 with dynamic 45569 B (k=4)" "$tmp/err" \
  || fail "verbose line: $(cat "$tmp/err")"

out=$(run_app LD_PRELOAD="$lib" CCO_DISABLE=1 CCO_POLICY=shape:1 CCO_STATS=1)
expect_line "$out" "CCO_DISABLE=1" "gpa ours=0"
expect_line "$out" "CCO_DISABLE=1" "launch ours=0"
untouched "$out" "CCO_DISABLE=1"
[ ! -s "$tmp/err" ] || fail "CCO_DISABLE=1 printed: $(cat "$tmp/err")"

out=$(run_app LD_PRELOAD="$lib" CCO_POLICY=off)
expect_line "$out" "off" "gpa ours=1"
untouched "$out" "off"

out=$(run_app LD_PRELOAD="$lib" CCO_POLICY=fast)
untouched "$out" "a bad policy"
[ "$(grep -c . "$tmp/err")" = 1 ] && grep -q "^cco-preload: warning: CCO_POLICY: unknown policy 'fast'.*; running unshaped$" "$tmp/err" \
  || fail "a bad policy must give exactly one warning: $(cat "$tmp/err")"

echo '{"schema": "ccoverlap.plan", "schema_version": "1.0.0", "shaping": {"default": 0}}' >"$tmp/bad.json"
out=$(run_app LD_PRELOAD="$lib" CCO_PLAN="$tmp/bad.json")
untouched "$out" "a bad plan"
grep -q "^cco-preload: warning: CCO_PLAN: plan $tmp/bad.json: shaping.default: must be >= 1 (blocks per SM), got 0; running unshaped$" "$tmp/err" \
  || fail "a bad plan: $(cat "$tmp/err")"

cat >"$tmp/plan.json" <<'JSON'
{"schema": "ccoverlap.plan", "schema_version": "1.0.0", "policy": "rules",
 "shaping": {"default": 1, "rules": [{"kernel": "*my_gemm*", "pad": "1K"}], "denylist": ["ctxless*"]},
 "priority": {"nccl": "default"}}
JSON
out=$(run_app LD_PRELOAD="$lib" CCO_PLAN="$tmp/plan.json")
expect_line "$out" "plan rules" "gemm-legacy variant=0 shmem=1024 .*"
expect_line "$out" "plan rules" "ctxless-legacy variant=0 shmem=0 .*"
expect_line "$out" "plan rules" "nccl-ex variant=2 shmem=0 attrs=0 priority=1 .*"

out=$(run_app LD_PRELOAD="$lib" CCO_POLICY=shape:1 CCO_STATS=maybe)
expect_line "$out" "bad CCO_STATS" "gemm-legacy variant=0 shmem=$pad .*"
grep -q "warning: CCO_STATS='maybe' is not 0, 1 or 2; statistics are off" "$tmp/err" || fail "bad CCO_STATS: $(cat "$tmp/err")"

[ $fails = 0 ] && echo "preload process tests: all passed" || echo "preload process tests: $fails failed"
[ $fails = 0 ]
