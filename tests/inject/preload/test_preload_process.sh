#!/usr/bin/env bash
# libcco_preload.so in real processes, GPU-free: what it exports and links, that it does no harm
# where there is no GPU, dlsym's RTLD_NEXT, and the whole path cudart takes (dlopen libcuda,
# dlsym cuGetProcAddress_v2, cuGetProcAddress, launch) against a fake libcuda.so.1, and
# CCO_TRACE against a fake libcupti.so.13 (CCO_FAKE_CUPTI; those checks are skipped without it).
set -u
lib=${CCO_PRELOAD_LIB:?}
fakedir=${CCO_FAKE_CUDA_DIR:?}
app=${CCO_FAKE_APP:?}
probe=${CCO_PROBE_MAIN:?}
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset CCO_DISABLE CCO_POLICY CCO_PLAN CCO_STATS CCO_VERBOSE CCO_PRIORITY_METHOD CCO_TRACE CCO_TRACE_PID CCO_CUPTI_LIB
unset RANK OMPI_COMM_WORLD_RANK SLURM_PROCID LOCAL_RANK FAKE_CUPTI FAKE_CUPTI_DEVICES FAKE_CUPTI_DROPPED FAKE_CUPTI_VERSION CCO_NVTX
unset CCO_TRACE_CALLS CCO_TRACE_LAUNCH_TIMES
fakecupti=${CCO_FAKE_CUPTI:-}
cco=${CCO_BIN:-}

# --- exports and dependencies ---------------------------------------------------------------
want="InitializeInjectionNvtx2 cco_api_version cco_config_index cco_last_error cco_policy_get cco_policy_set cco_stats cco_step_mark cuCtxSynchronize cuEventRecord cuEventRecordWithFlags cuEventRecordWithFlags_ptsz cuEventRecord_ptsz cuEventSynchronize cuGetProcAddress cuGetProcAddress_v2 cuLaunchKernel cuLaunchKernelEx cuLaunchKernelEx_ptsz cuLaunchKernel_ptsz cuLibraryUnload cuModuleUnload cuStreamSynchronize cuStreamSynchronize_ptsz cuStreamWaitEvent cuStreamWaitEvent_ptsz cublasDgemmStridedBatched cublasDgemmStridedBatched_64 cublasDgemm_v2 cublasDgemm_v2_64 cublasGemmBatchedEx cublasGemmBatchedEx_64 cublasGemmEx cublasGemmEx_64 cublasGemmStridedBatchedEx cublasGemmStridedBatchedEx_64 cublasGetSmCountTarget cublasHgemm cublasHgemmStridedBatched cublasHgemmStridedBatched_64 cublasHgemm_64 cublasLtMatmul cublasLtMatmulAlgoGetHeuristic cublasSetSmCountTarget cublasSgemmEx cublasSgemmEx_64 cublasSgemmStridedBatched cublasSgemmStridedBatched_64 cublasSgemm_v2 cublasSgemm_v2_64 dlsym ncclAllGather ncclAllReduce ncclAlltoAll ncclBcast ncclBroadcast ncclGather ncclGroupEnd ncclGroupSimulateEnd ncclGroupStart ncclRecv ncclReduce ncclReduceScatter ncclScatter ncclSend"
got=$(nm -D --defined-only "$lib" | awk 'NF == 3 {print $3}' | sort | tr '\n' ' ' | sed 's/ $//')
[ "$got" = "$want" ] || fail "exported symbols differ:
  got:  $got
  want: $want"
if ldd "$lib" | grep -qE 'libcuda|libnccl|libcudart|libstdc\+\+|libgcc_s'; then
  fail "the library must link none of libcuda, libnccl, libcudart, libstdc++, libgcc_s: $(ldd "$lib" | tr '\n' ' ')"
fi

# No static initialiser of ccoverlap's own: code of the library can run before its initialisers do
# (a library of the program that reaches the driver from its constructor), and an initialiser
# running late would undo it (the cause of the traced programs' crash at exit on H200). The
# statically linked C++ runtime's own (*.cc) are fine: nothing of ours depends on their order.
ours=$(nm "$lib" | sed -n 's/.* _GLOBAL__sub_I_\(.*\)$/\1/p' | grep -v '\.cc$' | tr '\n' ' ')
[ -z "$ours" ] || fail "the library has dynamic initialisers of its own (make those globals constinit): $ours"

# --- no harm in processes without a GPU -------------------------------------------------------
for cmd in "true" "sh -c 'echo hello >/dev/null'" "python3 -c 'import ctypes, ctypes.util; ctypes.util.find_library(\"m\")'"; do
  out=$(env LD_PRELOAD="$lib" CCO_STATS=1 sh -c "$cmd" 2>&1)
  rc=$?
  [ $rc = 0 ] || fail "'$cmd' under the library exited $rc: $out"
  [ -z "$out" ] || fail "'$cmd' under the library printed: $out"
done
out=$(env LD_PRELOAD="$lib" CCO_TRACE="$tmp/never.json" sh -c 'echo hello >/dev/null' 2>&1)
[ -z "$out" ] && [ ! -e "$tmp/never.json" ] || fail "CCO_TRACE in a process without CUDA: '$out'"
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
# The same checks on the library compiled without optimisation (a Debug build: no sibling calls),
# where only the assembly entry of dlsym keeps RTLD_NEXT's meaning (x86-64 builds make it).
lib_o0=${CCO_PRELOAD_LIB_O0:-}
if [ -n "$lib_o0" ]; then
  pre=$(env LD_PRELOAD="$lib_o0" "$probe" 2>&1)
  echo "$pre" | grep -q '^rtld_next=2$' || fail "-O0 build: dlsym(RTLD_NEXT) from a later library lost its caller: $pre"
  echo "$pre" | grep -q '^malloc=1$' || fail "-O0 build: dlsym(RTLD_DEFAULT, malloc): $pre"
  echo "$pre" | grep -q '^cuLaunchKernel default=1 next=1 same=1$' || fail "-O0 build: dlsym of our own export: $pre"
fi

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

pad=115713  # sm_90, 256 threads x 32 registers: 8 -> 1 block per SM (tests/inject/preload/test_hook.cpp)
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

# A GEMM SM budget that no cuBLAS call reached (this program has none): one warning at exit.
out=$(run_app LD_PRELOAD="$lib" CCO_POLICY=sm-target:100 CCO_STATS=1)
grep -q "warning: the plan sets a GEMM SM target, but no cuBLAS/cuBLASLt call reached the library" "$tmp/err" ||
  fail "sm-target without cuBLAS: no warning: $(cat "$tmp/err")"
grep -qE "^cco-preload: stats .* gemm_calls=0 gemm_sm_targeted=0( |$)" "$tmp/err" ||
  fail "sm-target without cuBLAS: no gemm fields in the statistics: $(cat "$tmp/err")"
out=$(run_app LD_PRELOAD="$lib" CCO_POLICY=shape:model CCO_VERBOSE=1)
expect_line "$out" "shape:model" "gemm-legacy variant=0 shmem=45569 .*"  # 8 -> 4 blocks per SM
grep -q "cco-preload: kernel my_gemm_k(float\*, float\*, int): 256 threads, 32 regs, 0+0 B smem: 8 blocks/SM -> 4 with dynamic 45569 B (k=4)" "$tmp/err" \
  || fail "verbose line: $(cat "$tmp/err")"

# The default policy (priority): NCCL's launch prioritised, every compute launch as asked, also
# after the NCCL launch (whose event never completes in the fake driver).
out=$(run_app LD_PRELOAD="$lib" CCO_STATS=1)
l="default policy"
expect_line "$out" "$l" "gemm-legacy variant=0 shmem=0 attrs=0 priority=1 launches=1"
expect_line "$out" "$l" "gemm-ex variant=2 shmem=0 attrs=0 .*"
expect_line "$out" "$l" "nccl-ex variant=2 shmem=0 attrs=1 priority=-5 .*"
expect_line "$out" "$l" "gemm-direct variant=0 shmem=0 .*"
grep -qE '^cco-preload: stats pid=[0-9]+ policy=priority .*shaped=0 ' "$tmp/err" || fail "default policy stats: $(cat "$tmp/err")"

out=$(run_app LD_PRELOAD="$lib" CCO_DISABLE=1 CCO_POLICY=shape:1 CCO_STATS=1)
expect_line "$out" "CCO_DISABLE=1" "gpa ours=0"
expect_line "$out" "CCO_DISABLE=1" "launch ours=0"
untouched "$out" "CCO_DISABLE=1"
[ ! -s "$tmp/err" ] || fail "CCO_DISABLE=1 printed: $(cat "$tmp/err")"

# fork after the library started: the child passes through, no hang, no parent's counts.
out=$(timeout 20 env LD_LIBRARY_PATH="$fakedir" LD_PRELOAD="$lib" CCO_POLICY=shape:1 CCO_STATS=1 FAKE_APP_FORK=1 "$app" 2>"$tmp/err")
expect_line "$out" "fork: the child's launch" "child-gemm variant=0 shmem=0 .*"
expect_line "$out" "fork: the child exits" "child exit=0"
expect_line "$out" "fork: the parent still shapes" "gemm-direct variant=0 shmem=115713 .*"
[ "$(grep -c 'stats pid=' "$tmp/err")" = 1 ] || fail "fork: one stats line (the parent's) expected: $(cat "$tmp/err")"

# A module (library) unloaded and its function (kernel) handle reused for an NCCL kernel: the
# cached "shape my_gemm_k" decision must not be applied to it. Plainly, both launches are
# untouched; under shape:1 the same handles were shaped before the unloads.
out=$(run_app CCO_POLICY=shape:1 FAKE_APP_UNLOAD=1)
expect_line "$out" "unload, no library" "unload ours=0 0"
out=$(run_app LD_PRELOAD="$lib" CCO_POLICY=shape:1 CCO_STATS=1 FAKE_APP_UNLOAD=1)
expect_line "$out" "unload" "unload ours=1 1"
expect_line "$out" "unload: shaped before" "gemm-legacy variant=0 shmem=$pad .*"
expect_line "$out" "unload: shaped before" "ctxless-legacy variant=0 shmem=$pad .*"
expect_line "$out" "unload: the reused function handle" "module-unload=0 reused-function variant=0 shmem=0 .*"
expect_line "$out" "unload: the reused kernel handle" "library-unload=0 reused-kernel variant=0 shmem=0 .*"

if [ -n "$lib_o0" ]; then
  out=$(run_app LD_PRELOAD="$lib_o0" CCO_POLICY=shape:1 FAKE_APP_UNLOAD=1)
  expect_line "$out" "-O0 build" "launch ours=1"
  expect_line "$out" "-O0 build" "gemm-legacy variant=0 shmem=$pad .*"
  expect_line "$out" "-O0 build: the reused function handle" "module-unload=0 reused-function variant=0 shmem=0 .*"
fi

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

# --- the compute SM budget against a fake libcublas.so.13 ------------------------------------------
blasapp=${CCO_FAKE_BLAS_APP:-}
if [ -n "$blasapp" ]; then
  blas_run() { env LD_LIBRARY_PATH="$fakedir:$(dirname "$blasapp")/fakecublas" "$@" "$blasapp" 2>"$tmp/err"; }
  out=$(blas_run)
  expect_line "$out" "blas, no library" "gemm status=0 target=0 get=0"
  out=$(blas_run LD_PRELOAD="$lib" CCO_POLICY=off)
  expect_line "$out" "blas, off" "gemm status=0 target=0 get=0"
  # The fake device has 132 SMs: the plan's 100 while the GEMM runs; the program reads its own 0;
  # its own stricter 50 is kept.
  out=$(blas_run LD_PRELOAD="$lib" CCO_POLICY=sm-target:100 CCO_STATS=1)
  expect_line "$out" "sm-target:100" "gemm status=0 target=100 get=0"
  expect_line "$out" "sm-target:100" "gemm-own target=50 get=50"
  grep -qE "^cco-preload: stats .* gemm_calls=2 gemm_sm_targeted=1( |$)" "$tmp/err" || fail "sm-target stats: $(cat "$tmp/err")"
  out=$(blas_run LD_PRELOAD="$lib" CCO_POLICY=sm-target:-32)
  expect_line "$out" "sm-target:-32" "gemm status=0 target=100 get=0"
  out=$(blas_run LD_PRELOAD="$lib" CCO_POLICY=sm-target:500)
  expect_line "$out" "sm-target:500" "gemm status=0 target=0 get=0"
  grep -q "warning: gemm.sm_target 500 is out of range for a 132-SM device" "$tmp/err" || fail "out of range: $(cat "$tmp/err")"
  # No collective: the launch-order window is closed, nothing changes.
  out=$(blas_run LD_PRELOAD="$lib" CCO_POLICY=sm-target:100@overlap)
  expect_line "$out" "sm-target:100@overlap" "gemm status=0 target=0 get=0"
  out=$(blas_run LD_PRELOAD="$lib" CCO_POLICY=sm-target:100 CCO_DISABLE=1)
  expect_line "$out" "blas, CCO_DISABLE=1" "gemm status=0 target=0 get=0"
  # A rotation switches the SM budget between steps (marked here): one warm-up step under 'off',
  # then the A B B A rounds. The program always reads its own value back; each configuration
  # counts its own GEMMs.
  out=$(blas_run LD_PRELOAD="$lib" CCO_COMPARE=off,sm-target:100 CCO_WARMUP_STEPS=1 FAKE_BLAS_STEPS=9 CCO_STATS=1)
  want="0:0:0 1:0:0 2:1:100 3:1:100 4:0:0 5:0:0 6:1:100 7:1:100 8:0:0"
  got=$(printf '%s\n' "$out" | sed -n 's/^step \([0-9]*\) mark=0 config=\([0-9]*\) target=\([0-9]*\) get=0$/\1:\2:\3/p' | tr '\n' ' ')
  [ "$got" = "$want " ] || fail "sm-target rotation: want '$want', got '$got' from: $out"
  grep -qE "^cco-preload: stats .* policy=off .* gemm_calls=5 gemm_sm_targeted=0( |$)" "$tmp/err" || fail "rotation stats (off): $(cat "$tmp/err")"
  grep -qE "^cco-preload: stats .* policy=sm-target:100 .* gemm_calls=4 gemm_sm_targeted=4( |$)" "$tmp/err" || fail "rotation stats (sm-target): $(cat "$tmp/err")"
  # Without a comparison the configuration index is 0 (the program's plan).
  out=$(blas_run LD_PRELOAD="$lib" CCO_POLICY=sm-target:100 FAKE_BLAS_STEPS=1)
  expect_line "$out" "one plan" "step 0 mark=2 config=0 target=100 get=0"
fi

# --- steps from NVTX ranges (CCO_STEP_NVTX, the library as NVTX's injection) ----------------------
nvtxapp=${CCO_FAKE_NVTX_APP:-}
if [ -n "$nvtxapp" ]; then
  libabs=$(readlink -f "$lib")
  nvtx_run() { env LD_LIBRARY_PATH="$fakedir" LD_PRELOAD="$lib" NVTX_INJECTION64_PATH="$libabs" "$@" "$nvtxapp" 2>"$tmp/err"; }
  steps_of() {  # FILE: "SOURCE N CONFIGS" of a step file
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["source"], len(d["steps"]), "".join(str(s["config"]) for s in d["steps"]))' "$1"
  }
  if command -v python3 >/dev/null; then
    mkdir -p "$tmp/nvtx1" "$tmp/nvtx2" "$tmp/nvtx3"
    # Each start of "train_step" is a step (5 marks: 4 complete steps); "forward" is none. NVTX's
    # nesting levels are kept.
    out=$(nvtx_run CCO_STEP_NVTX=train_step CCO_STEPS_DIR="$tmp/nvtx1" FAKE_NVTX_STEPS=5)
    expect_line "$out" "nvtx levels" "step 4 levels=0,1"
    got=$(steps_of "$(ls "$tmp"/nvtx1/steps-*.json | head -1)")
    [ "$got" = "marker 4 0000" ] || fail "nvtx steps: '$got' ($(cat "$tmp/err"))"
    # They drive a rotation like ccoverlap.step(): A B B A ... from the first step (no warm-up).
    nvtx_run CCO_STEP_NVTX='train_*' CCO_COMPARE=off,shape:1 CCO_WARMUP_STEPS=0 CCO_STEPS_DIR="$tmp/nvtx2" FAKE_NVTX_STEPS=9 >/dev/null
    got=$(steps_of "$(ls "$tmp"/nvtx2/steps-*.json | head -1)")
    [ "$got" = "marker 8 01100110" ] || fail "nvtx rotation: '$got' ($(cat "$tmp/err"))"
    # Without CCO_STEP_NVTX the library declines the injection: NVTX stays idle (its own answer).
    out=$(nvtx_run CCO_STEPS_DIR="$tmp/nvtx3" FAKE_NVTX_STEPS=2)
    expect_line "$out" "nvtx declined" "step 1 levels=-2,-2"
    [ -z "$(ls "$tmp"/nvtx3)" ] || [ "$(steps_of "$(ls "$tmp"/nvtx3/steps-*.json | head -1)")" = "none 0 " ] || fail "nvtx declined: steps were found"
  fi
fi

# --- CCO_TRACE ---------------------------------------------------------------------------------
# CUPTI that cannot be loaded: one warning, the program runs (shaped) and exits as it would.
out=$(run_app LD_PRELOAD="$lib" CCO_POLICY=shape+priority:1 CCO_TRACE="$tmp/t.json" CCO_CUPTI_LIB=/nonexistent/libcupti.so.13 FAKE_APP_EXIT=7)
rc=$?
[ $rc = 7 ] || fail "no CUPTI: the program's exit status changed to $rc"
expect_line "$out" "trace, no CUPTI" "gemm-legacy variant=0 shmem=$pad attrs=0 priority=1 launches=1"
expect_line "$out" "trace, no CUPTI" "nccl-ex variant=2 shmem=0 attrs=1 priority=-5 .*"
[ "$(grep -c . "$tmp/err")" = 1 ] && grep -q "^cco-preload: warning: CCO_TRACE: tracing disabled: cannot load CUPTI from '/nonexistent/libcupti.so.13': .*; the program runs untraced$" "$tmp/err" \
  || fail "no CUPTI must give exactly one warning: $(cat "$tmp/err")"
[ ! -e "$tmp/t.json" ] || fail "no CUPTI: a trace file was written"
# A bad pattern set by hand: one warning, untraced.
out=$(run_app LD_PRELOAD="$lib" CCO_TRACE="$tmp/t_%d.json" CCO_CUPTI_LIB=/nonexistent/libcupti.so.13)
[ $? = 0 ] && [ "$(grep -c . "$tmp/err")" = 1 ] && grep -q "^cco-preload: warning: CCO_TRACE='$tmp/t_%d.json' has an unknown placeholder %d (known: %p pid, %r rank, %% a %); not tracing$" "$tmp/err" \
  || fail "bad CCO_TRACE pattern: $(cat "$tmp/err")"

if [ -z "$fakecupti" ] || [ ! -e "$fakecupti" ]; then
  echo "note: no fake libcupti (CCO_FAKE_CUPTI); the CCO_TRACE checks with CUPTI are skipped"
else
  export CCO_CUPTI_LIB=$fakecupti
  # In use by a profiler, or too old: one warning each, untraced, exit status kept.
  out=$(run_app LD_PRELOAD="$lib" CCO_POLICY=shape+priority:model@overlap CCO_TRACE="$tmp/t.json" \
    FAKE_CUPTI=busy FAKE_APP_EXIT=3)
  rc=$?
  [ $rc = 3 ] && [ "$(grep -c . "$tmp/err")" = 1 ] && grep -q "^cco-preload: warning: CCO_TRACE: CUPTI is already in use by 'Nsight Systems' (a profiler such as Nsight Systems or Nsight Compute?); tracing disabled, the program runs on untraced$" "$tmp/err" \
    || fail "CUPTI in use (exit $rc): $(cat "$tmp/err")"
  # An @overlap policy shapes only inside the communication window: not before the NCCL launch,
  # and (its event never completes in the fake driver) shape:model after it.
  expect_line "$out" "@overlap policy, no communication yet" "gemm-legacy variant=0 shmem=0 .*"
  expect_line "$out" "@overlap policy, inside the window" "gemm-direct variant=0 shmem=45569 .*"
  out=$(run_app LD_PRELOAD="$lib" CCO_TRACE="$tmp/t.json" FAKE_CUPTI=old)
  [ $? = 0 ] && [ "$(grep -c . "$tmp/err")" = 1 ] && grep -q "^cco-preload: warning: CCO_TRACE: tracing disabled: CUPTI at '.*' has API version 120000; .*; the program runs untraced$" "$tmp/err" \
    || fail "old CUPTI: $(cat "$tmp/err")"
  [ ! -e "$tmp/t.json" ] || fail "CUPTI refused, but a trace file was written"

  # Traced (the fake CUPTI's cuptiSubscribe reaches the driver through the library's dlsym and
  # cuGetProcAddress while the session starts): one file per process, the rank from RANK.
  out=$(run_app LD_PRELOAD="$lib" CCO_POLICY=shape+priority:1 CCO_TRACE="$tmp/tr_%r.json" RANK=3 FAKE_APP_EXIT=5)
  rc=$?
  [ $rc = 5 ] || fail "traced: the program's exit status changed to $rc"
  expect_line "$out" "traced" "gemm-legacy variant=0 shmem=$pad attrs=0 priority=1 launches=1"
  [ "$(grep -c . "$tmp/err")" = 1 ] && grep -qE "^cco-preload: trace pid=[0-9]+ ranks=3 devices=0 kernels=2 -> $tmp/tr_3.json$" "$tmp/err" \
    || fail "traced, RANK=3: $(cat "$tmp/err")"
  grep -q '"ncclDevKernel_AllReduce_Sum_f32_RING_LL"' "$tmp/tr_3.json" && grep -q '"my_gemm_k(float\*, float\*, int)"' "$tmp/tr_3.json" \
    || fail "traced: kernels missing from $tmp/tr_3.json: $(head -c 600 "$tmp/tr_3.json")"
  grep -q '"rank":3' "$tmp/tr_3.json" && ! grep -q '"rank":0' "$tmp/tr_3.json" || fail "traced: not rank 3: $(head -c 600 "$tmp/tr_3.json")"
  if [ -n "$cco" ]; then
    rep=$("$cco" report "$tmp/tr_3.json" 2>&1) || fail "cco report of the trace: $rep"
  fi
  # A library of the program looks the driver up from its constructor, before the preload
  # library's constructors run (the order that crashed traced programs at exit on H200): the
  # session starts later, at the first launch, and the trace is whole.
  if [ -n "${CCO_FAKE_APP_EARLY:-}" ]; then
    out=$(env LD_LIBRARY_PATH="$fakedir" LD_PRELOAD="$lib" CCO_TRACE="$tmp/early.json" FAKE_APP_EXIT=4 "$CCO_FAKE_APP_EARLY" 2>"$tmp/err")
    rc=$?
    [ $rc = 4 ] || fail "traced, early lookup: the exit status changed to $rc: $(cat "$tmp/err")"
    grep -qE "^cco-preload: trace pid=[0-9]+ ranks=0 devices=0 kernels=2 -> $tmp/early.json$" "$tmp/err" &&
      grep -q '"ncclDevKernel_AllReduce_Sum_f32_RING_LL"' "$tmp/early.json" \
      || fail "traced, early lookup: $(cat "$tmp/err"); $(head -c 300 "$tmp/early.json" 2>&1)"
  fi
  # NVTX ranges: on by default where CUPTI is newer than 13.0.0 (whose injection crashes), off with
  # CCO_NVTX=0; said in the trace's notes.
  run_app LD_PRELOAD="$lib" CCO_TRACE="$tmp/nvtx_on.json" FAKE_CUPTI_VERSION=130001 >/dev/null
  grep -q "NVTX ranges on" "$tmp/nvtx_on.json" || fail "NVTX ranges not on by default: $(grep -o 'traced with[^]]*' "$tmp/nvtx_on.json")"
  run_app LD_PRELOAD="$lib" CCO_TRACE="$tmp/nvtx_off.json" FAKE_CUPTI_VERSION=130001 CCO_NVTX=0 >/dev/null
  grep -q "NVTX ranges off" "$tmp/nvtx_off.json" || fail "CCO_NVTX=0 left NVTX ranges on: $(grep -o 'traced with[^]]*' "$tmp/nvtx_off.json")"
  # Launch timestamps: on by default, off with CCO_TRACE_LAUNCH_TIMES=0 (the hang's bisection).
  grep -q "launch timestamps on" "$tmp/nvtx_on.json" || fail "launch timestamps not on by default"
  run_app LD_PRELOAD="$lib" CCO_TRACE="$tmp/lt_off.json" CCO_TRACE_LAUNCH_TIMES=0 >/dev/null
  grep -q "launch timestamps off" "$tmp/lt_off.json" || fail "CCO_TRACE_LAUNCH_TIMES=0 left them on: $(grep -o 'traced with[^]]*' "$tmp/lt_off.json")"
  # Two devices in one process and no rank variable: %r is the pid, ranks are the devices.
  out=$(run_app LD_PRELOAD="$lib" CCO_TRACE="$tmp/two_%r.json" FAKE_CUPTI_DEVICES=0,1)
  pid=$(sed -n 's/^cco-preload: trace pid=\([0-9]*\) ranks=0,1 devices=0,1 kernels=4 -> .*/\1/p' "$tmp/err")
  [ -n "$pid" ] && [ -s "$tmp/two_$pid.json" ] || fail "two devices: $(cat "$tmp/err"); $(ls "$tmp")"
  if [ -n "$cco" ] && [ -n "$pid" ]; then
    rep=$("$cco" report "$tmp/two_$pid.json" --json 2>&1) || fail "cco report of the 2-device trace: $rep"
  fi
  # No placeholder: the command itself (CCO_TRACE_PID unset, or its pid) writes the file as
  # named; any other process appends .<pid>.
  out=$(run_app LD_PRELOAD="$lib" CCO_TRACE="$tmp/plain.json")
  [ -s "$tmp/plain.json" ] || fail "no placeholder, set by hand: $(cat "$tmp/err")"
  out=$(run_app LD_PRELOAD="$lib" CCO_TRACE="$tmp/other.json" CCO_TRACE_PID=1)
  pid=$(sed -n 's/^cco-preload: trace pid=\([0-9]*\) .*/\1/p' "$tmp/err")
  [ -n "$pid" ] && [ -s "$tmp/other.json.$pid" ] && [ ! -e "$tmp/other.json" ] || fail "no placeholder, another process: $(cat "$tmp/err")"
  # Dropped records: one warning, the file still written (and says so).
  out=$(run_app LD_PRELOAD="$lib" CCO_TRACE="$tmp/drop.json" FAKE_CUPTI_DROPPED=3)
  grep -q "^cco-preload: warning: CCO_TRACE: 3 kernel records were dropped (CUPTI buffers full): the trace is incomplete$" "$tmp/err" \
    && grep -qE "^cco-preload: trace pid=[0-9]+ ranks=0 devices=0 kernels=2 dropped=3 -> $tmp/drop.json$" "$tmp/err" \
    && grep -q '"dropped_records":3' "$tmp/drop.json" || fail "dropped records: $(cat "$tmp/err")"
  # A file that cannot be written: one warning, exit status kept.
  out=$(run_app LD_PRELOAD="$lib" CCO_TRACE=/nonexistent/dir/t.json FAKE_APP_EXIT=4)
  rc=$?
  [ $rc = 4 ] && [ "$(grep -c . "$tmp/err")" = 1 ] && grep -q "^cco-preload: warning: CCO_TRACE: no trace written: cannot write trace file '/nonexistent/dir/t.json'$" "$tmp/err" \
    || fail "unwritable trace (exit $rc): $(cat "$tmp/err")"
  # CCO_DISABLE=1 turns tracing off too; CCO_VERBOSE says where CUPTI came from.
  out=$(run_app LD_PRELOAD="$lib" CCO_DISABLE=1 CCO_TRACE="$tmp/disabled.json")
  [ ! -s "$tmp/err" ] && [ ! -e "$tmp/disabled.json" ] || fail "CCO_DISABLE=1 with CCO_TRACE: $(cat "$tmp/err")"
  out=$(run_app LD_PRELOAD="$lib" CCO_POLICY=off CCO_VERBOSE=1 CCO_TRACE="$tmp/verbose.json")
  grep -qE "^cco-preload: trace pid=[0-9]+: tracing with CUPTI from .*libcupti.so.13$" "$tmp/err" && [ -s "$tmp/verbose.json" ] \
    || fail "CCO_VERBOSE with CCO_TRACE: $(cat "$tmp/err")"
  unset CCO_CUPTI_LIB
fi

[ $fails = 0 ] && echo "preload process tests: all passed" || echo "preload process tests: $fails failed"
[ $fails = 0 ]
