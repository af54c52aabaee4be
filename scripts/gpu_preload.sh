#!/usr/bin/env bash
# Verifies libcco_preload.so and `cco run` on a 2-GPU machine, from a build made elsewhere
# (build/ carried along). Writes every log under $OUT/preload and a summary to
# $OUT/preload/summary.txt (also printed), packs them into $OUT/preload.tgz.
#
#   scripts/gpu_preload.sh [all|tests|trace|bench|ddp]      (default all; 5-6 minutes, at most ~7)
#
# What it shows:
#  (a) `cco run --stats -- cco bench` with cuBLASLt GEMMs || all-reduce: launches seen, shaped,
#      skipped by reason, NCCL launches prioritised; bench's -c verification still passes;
#      times under several policies against no preload.
#  (b) which NCCL prioritisation works: CU_LAUNCH_ATTRIBUTE_PRIORITY on NCCL's own launch
#      (policy priority, method launch-attr) or pnccl* collectives on a high-priority companion
#      stream (priority@stream): a saturating filler kernel, then an NCCL-named kernel and a real
#      2-GPU all-reduce on streams of the filler's priority -- do they overtake it?
#  (c) PyTorch DDP training (scripts/ddp_gpt.py, ~235M parameters, random weights) plain,
#      TORCH_NCCL_HIGH_PRIORITY=1, and under `cco run` policies: loss/weight checksums must be
#      identical; step times; compute-only and communication-only times for overlap efficiency.
#  (d) CUDA graph capture + replay, threads, and residency under the library
#      (build/tests/cco.test.gpu_preload).
#  (d2) `cco run --trace` (CCO_TRACE: the library's CUPTI session) of a 2-GPU cco bench, read back
#      by `cco report`: NCCL and cuBLASLt (nvjet/cutlass) kernels on both devices (~15 s).
# Exit status: 0 when every check passed.
set -u
stage=${1:-all}
B=${BUILD:-build}
O=${OUT:-out}
R=$O/preload
mkdir -p "$R"
. "$(dirname "$0")/gpu_env.sh"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
[ -d /opt/torch/.venv/bin ] && export PATH="/opt/torch/.venv/bin:$PATH"
unset CCO_DISABLE CCO_POLICY CCO_PLAN CCO_STATS CCO_VERBOSE CCO_PRIORITY_METHOD TORCH_NCCL_HIGH_PRIORITY

cco=$B/src/cli/cco
lib=$(readlink -f "$B/src/preload/libcco_preload.so")
gt=$B/tests/cco.test.gpu_preload
export CCO_PRELOAD_LIB=$lib
START=$(date +%s)
BUDGET=${BUDGET_S:-400}  # seconds for everything: steps are skipped or cut past it (+30 s at most)
S=$R/summary.txt
: >"$S"
status=0
say() { echo "$*" | tee -a "$S"; }
bad() { say "CHECK FAILED: $*"; status=1; }
elapsed() { echo $(($(date +%s) - START)); }
tmo() {  # tmo SECONDS: a step's time limit, never past the budget
  local left=$((BUDGET + 30 - $(elapsed)))
  [ "$left" -lt 5 ] && left=5
  echo $(($1 < left ? $1 : left))
}
have_time() {  # have_time SECONDS: enough budget left for a step of that length?
  if [ $((BUDGET - $(elapsed))) -lt "$1" ]; then
    say "  (skipped: $(elapsed)s used of the ${BUDGET}s budget)"
    return 1
  fi
}
# `cco run`, or the test driver built from the same source if cco has no run command yet.
if "$cco" run --help >/dev/null 2>&1; then
  RUN=("$cco" run)
else
  RUN=("$B/tests/cco.test.run_driver")
  say "note: this cco has no 'run' command; using $B/tests/cco.test.run_driver (same src/cli/run_cmd.cpp)"
fi
stats_of() { grep -h '^cco-preload: stats' "$@" | sed 's/^cco-preload: /    /'; }

say "# gpu_preload.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) stage=$stage"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "$ngpu" -lt 1 ]; then
  say "no GPU visible (nvidia-smi -L): run this on the GPU machine"
  exit 2
fi
[ "$ngpu" -ge 2 ] || say "note: $ngpu GPU: the 2-GPU parts (bench, NCCL probe, DDP) will fail or skip"
for f in "$lib" "$gt" "$cco"; do [ -e "$f" ] || { say "missing $f: build it first (ninja -C $B)"; exit 2; }; done
{
  nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,memory.total --format=csv
  ldd "$lib"
  nm -D --defined-only "$lib"
  "$cco" --version
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())'
} >"$R/machine.txt" 2>&1
say "$(nvidia-smi -L 2>&1 | head -2 | tr '\n' ';')"
say "library: $lib ($(nm -D --defined-only "$lib" | wc -l) exported symbols; links: $(ldd "$lib" | awk '{print $1}' | tr '\n' ' '))"
if ldd "$lib" | grep -q 'not found'; then bad "the library has missing dependencies"; fi

# ---- (d) and (b): the GPU test program, plain and under policies -------------------------------
gpu() {  # gpu NAME TIMEOUT CMD...: output to $R/gpu_NAME.log, probe and stats lines to the summary
  local name=$1 t=$2
  shift 2
  timeout "$(tmo "$t")" "$@" >"$R/gpu_$name.log" 2>&1
  local rc=$?
  say "  [$name] exit $rc: $(grep -E '^\[  (PASSED|FAILED)' "$R/gpu_$name.log" | tr '\n' ' ')"
  grep -h '^cco-probe:' "$R/gpu_$name.log" | sed 's/^cco-probe: /    /' | tee -a "$S"
  stats_of "$R/gpu_$name.log" | tee -a "$S"
  grep -E 'Failure|Expected|Which is|warning' "$R/gpu_$name.log" | head -8 | sed 's/^/    /' | tee -a "$S"
  [ $rc = 0 ] || bad "gpu test $name exited $rc"
}

if [ "$stage" = all ] || [ "$stage" = tests ]; then
  say ""
  say "== (d)(b) GPU tests: build/tests/cco.test.gpu_preload"
  if [ ! -x "$gt" ]; then
    bad "$gt missing (build the gpu_preload test)"
  else
    have_time 60 && gpu plain 150 "$gt"
    # Residency is held at the target and the padding is baked into captured graphs.
    have_time 40 && gpu shape1 120 "${RUN[@]}" --policy shape:1 -- env CCO_STATS=2 CCO_TEST_EXPECT_BLOCKS=1 \
      "$gt" --gtest_filter='PreloadGpu.Direct*:PreloadGpu.Graph*:PreloadGpu.ManyThreads*'
    have_time 30 && gpu shape_model 90 "${RUN[@]}" --policy shape:model --stats -- env CCO_TEST_EXPECT_BLOCKS=4 \
      "$gt" --gtest_filter='PreloadGpu.Direct*:PreloadGpu.Graph*'
    # (b) Which NCCL prioritisation works: measured, not asserted (a method that does not work is
    # a finding). launch-attr covers the NCCL-named kernel and NCCL's own launches; the stream
    # method covers real collectives only.
    have_time 40 && gpu prio_attr 120 "${RUN[@]}" --policy priority@launch-attr --stats -- \
      "$gt" --gtest_filter='PreloadGpu.Priority*'
    have_time 40 && gpu prio_stream 120 "${RUN[@]}" --policy priority@stream --stats -- \
      "$gt" --gtest_filter='PreloadGpu.PriorityOfNcclAllReduce'
    have_time 30 && gpu prio_both 120 "${RUN[@]}" --policy priority@both --stats -- \
      "$gt" --gtest_filter='PreloadGpu.PriorityOfNcclAllReduce'
    # The verdict, from the probes' numbers: a start fraction or a finish ratio well below 1 means
    # the prioritised work overtook the queued filler blocks.
    frac() { sed -n 's/.*filler.s span; on a greatest-priority stream (reference) at \([0-9.]*\)$/\1/p; ' "$R/gpu_$1.log" 2>/dev/null | head -1; }
    same() { sed -n 's/.*the filler.s priority starts at \([0-9.]*\) of the filler.s span.*/\1/p' "$R/gpu_$1.log" 2>/dev/null | head -1; }
    ratio() { sed -n 's/.*worst all-reduce\/filler ratio \([0-9.]*\) .*/\1/p' "$R/gpu_$1.log" 2>/dev/null | head -1; }
    verdict() { awk -v x="$1" 'BEGIN { if (x == "") print "not measured"; else if (x + 0 < 0.5) print "WORKS"; else print "no effect" }'; }
    say "  (b) verdict -- NCCL priority methods (fraction/ratio near 1: waited behind the filler; well below 1: overtook it):"
    say "      no library:        NCCL-named kernel $(same plain), all-reduce $(ratio plain); greatest-priority stream itself: $(frac plain)"
    say "      launch-attr:       NCCL-named kernel $(same prio_attr) -> $(verdict "$(same prio_attr)"); all-reduce $(ratio prio_attr) -> $(verdict "$(ratio prio_attr)")"
    say "      stream (pnccl*):   all-reduce $(ratio prio_stream) -> $(verdict "$(ratio prio_stream)")"
    say "      both:              all-reduce $(ratio prio_both) -> $(verdict "$(ratio prio_both)")"
    # Cost per launch: the same empty launches with no library, with it doing nothing, shaping.
    have_time 30 && gpu rate_off 60 "${RUN[@]}" --policy off --stats -- "$B/tests/cco.bench.launch_rate"
    have_time 30 && gpu rate_shape 60 "${RUN[@]}" --policy shape+priority:model --stats -- "$B/tests/cco.bench.launch_rate"
  fi
fi

# ---- (d2): cco run --trace, read back by cco report ------------------------------------------------
if [ "$stage" = all ] || [ "$stage" = trace ]; then
  say ""
  say "== (d2) cco run --trace $R/trace_%r.json --policy shape+priority:model -- cco bench -g 2 --gemm 2048 --count 2 -b 64M -n 5"
  if have_time 30; then
    rm -f "$R"/trace_*.json
    timeout "$(tmo 30)" "${RUN[@]}" --trace "$R/trace_%r.json" --policy shape+priority:model -- \
      "$cco" bench -g 2 --gemm 2048 --count 2 -b 64M -n 5 >"$R/trace_bench.txt" 2>"$R/trace_bench.err"
    rc=$?
    grep -h '^cco-preload: \(trace\|warning\)' "$R/trace_bench.err" | head -5 | sed 's/^cco-preload: /    /' | tee -a "$S"
    [ $rc = 0 ] || bad "traced bench exited $rc: $(tail -2 "$R/trace_bench.err" | tr '\n' ' ')"
    traces=("$R"/trace_*.json)
    if [ ! -e "${traces[0]}" ]; then
      bad "cco run --trace wrote no $R/trace_*.json"
    else
      say "  files: ${traces[*]##*/}"
      "$cco" report "${traces[@]}" >"$R/trace_report.txt" 2>&1 || bad "cco report of the traces exited $?: $(tail -2 "$R/trace_report.txt" | tr '\n' ' ')"
      say "  cco report:"
      head -24 "$R/trace_report.txt" | sed 's/^/    /' | tee -a "$S"
      # Kernels per device: NCCL's and cuBLASLt's (nvjet_* / cutlass*) must be on 2 devices.
      python3 - "${traces[@]}" >"$R/trace_check.txt" 2>&1 <<'PY'
import collections, json, sys
nccl, gemm, other = collections.Counter(), collections.Counter(), collections.Counter()
nvtx = 0
for f in sys.argv[1:]:
    for e in json.load(open(f))["traceEvents"]:
        if e.get("ph") != "X":
            continue
        if e.get("cat") == "nvtx":  # NVTX ranges: counted apart
            nvtx += 1
            continue
        d, n = e["args"]["device"], e["name"]
        if "ncclDevKernel" in n or "ncclSymkDevKernel" in n or "ncclSymDevKernel" in n:
            nccl[d] += 1
        elif "nvjet" in n or "cutlass" in n.lower():
            gemm[d] += 1
        else:
            other[n.split("(")[0][:60]] += 1
print("nccl kernels per device:", dict(sorted(nccl.items())))
print("nvjet/cutlass kernels per device:", dict(sorted(gemm.items())))
print("other kernels:", other.most_common(4))
print("NVTX ranges:", nvtx)
ok = len(nccl) >= 2 and len(gemm) >= 2
print("TRACE OK" if ok else "TRACE MISSING KERNELS")
sys.exit(0 if ok else 1)
PY
      trc=$?
      sed 's/^/    /' "$R/trace_check.txt" | tee -a "$S"
      [ $trc = 0 ] || bad "the trace lacks ncclDevKernel or nvjet/cutlass kernels on 2 devices"
    fi
  fi
fi

# ---- (a): cco bench with cuBLASLt GEMMs under the library --------------------------------------
BENCH_ARGS=(bench -g 2 --gemm 4096 --count 4 -b 256M -d bfloat16 -n 20)
bench() {  # bench POLICY ('none': no library)
  local pol=$1 name=${1//[:+@]/_}
  local out=$R/bench_$name.txt err=$R/bench_$name.err
  if [ "$pol" = none ]; then
    timeout "$(tmo 90)" "$cco" "${BENCH_ARGS[@]}" >"$out" 2>"$err"
  else
    timeout "$(tmo 90)" "${RUN[@]}" --policy "$pol" --stats -- "$cco" "${BENCH_ARGS[@]}" >"$out" 2>"$err"
  fi
  local rc=$?
  local wrong
  wrong=$(awk '$1 ~ /^[0-9]+$/ && NF >= 20 {w += $NF} END {print w + 0}' "$out")
  say "  [$pol] exit $rc (bench -c: exit 1 on wrong results), #wrong total $wrong"
  awk '$1 ~ /^[0-9]+$/ && NF >= 20 {printf "    %-16s time %8s us  reduction %5s%%  efficiency %5s  T_comp %s T_comm %s\n", $5, $13, $15, $17, $8, $9}' "$out" | tee -a "$S"
  stats_of "$err" | tee -a "$S"
  grep -h 'cco-preload: warning' "$err" | head -3 | sed 's/^/    /' | tee -a "$S"
  [ $rc = 0 ] || { bad "bench under $pol exited $rc: $(tail -2 "$err" | tr '\n' ' ')"; }
  [ "$wrong" = 0 ] || bad "bench under $pol: wrong results"
  if [ "$pol" != none ] && ! grep -q '^cco-preload: stats' "$err"; then bad "bench under $pol: no statistics line (was the library loaded?)"; fi
}

if [ "$stage" = all ] || [ "$stage" = bench ]; then
  say ""
  say "== (a) cco bench ${BENCH_ARGS[*]:1} under policies (times: median us; stats: the library's view)"
  for pol in none off priority priority@stream shape:model shape+priority:model shape:1; do
    have_time 25 && bench "$pol"
  done
  # One run with a per-kernel table (CCO_STATS=2): which cuBLASLt kernels were seen and why each
  # was or was not shaped.
  if have_time 25; then
    timeout "$(tmo 90)" "${RUN[@]}" --policy shape+priority:model -- env CCO_STATS=2 "$cco" "${BENCH_ARGS[@]}" --modes concurrent \
      >"$R/bench_kernels.txt" 2>"$R/bench_kernels.err"
    say "  per-kernel decisions (shape+priority:model, CCO_STATS=2; $R/bench_kernels.err):"
    grep -h '^cco-preload: kernel' "$R/bench_kernels.err" | head -14 | cut -c1-230 | sed 's/^cco-preload: /    /' | tee -a "$S"
  fi
fi

# ---- (c): PyTorch DDP, plain and under cco run ---------------------------------------------------
DDP_ARGS=(scripts/ddp_gpt.py --steps 10 --warmup 3)
TORCHRUN=(torchrun --standalone --nproc-per-node 2)
command -v torchrun >/dev/null 2>&1 || TORCHRUN=(python3 -m torch.distributed.run --standalone --nproc-per-node 2)
ddp() {  # ddp NAME MODE PREFIX...: one training run; result line and stats to the summary
  local name=$1 mode=$2
  shift 2
  local log=$R/ddp_$name.log
  timeout "$(tmo 120)" "$@" "${TORCHRUN[@]}" "${DDP_ARGS[@]}" --mode "$mode" >"$log" 2>&1
  local rc=$?
  local res
  res=$(grep -h '^result:' "$log" | tail -1)
  say "  [$name] exit $rc ${res#result: }"
  stats_of "$log" | tee -a "$S"
  grep -h 'cco-preload: warning' "$log" | sort -u | head -3 | sed 's/^/    /' | tee -a "$S"
  [ $rc = 0 ] || bad "ddp $name exited $rc: $(grep -E 'Error|error' "$log" | tail -2 | tr '\n' ' ')"
  echo "$res" >"$R/ddp_$name.result"
}
checksums() { sed -n 's/.*\(loss_checksum=[^ ]*\) \(param_checksum=[^ ]*\).*/\1 \2/p' "$R/ddp_$1.result" 2>/dev/null; }

if [ "$stage" = all ] || [ "$stage" = ddp ]; then
  say ""
  say "== (c) PyTorch DDP: ${TORCHRUN[*]} ${DDP_ARGS[*]} (step time = max over ranks, median)"
  have_time 45 && ddp plain ddp env
  have_time 45 && ddp torch_high_priority ddp env TORCH_NCCL_HIGH_PRIORITY=1
  have_time 45 && ddp cco_off ddp "${RUN[@]}" --policy off --stats --
  have_time 45 && ddp cco_priority ddp "${RUN[@]}" --policy priority --stats --
  have_time 45 && ddp cco_priority_stream ddp "${RUN[@]}" --policy priority@stream --stats --
  have_time 45 && ddp cco_shape_priority ddp "${RUN[@]}" --policy shape+priority:model --stats --
  have_time 40 && ddp compute_only compute-only env
  have_time 40 && ddp comm_only comm-only env
  # Overlap efficiency (docs/METRICS.md) from the medians: T_seq = T_comp + T_comm,
  # E = (T_seq - T) / min(T_comp, T_comm).
  med() { sed -n 's/.*median_step_ms=\([0-9.]*\).*/\1/p' "$R/ddp_$1.result" 2>/dev/null; }
  tc=$(med compute_only)
  tm=$(med comm_only)
  if [ -n "$tc" ] && [ -n "$tm" ]; then
    say "  compute only $tc ms, communication only $tm ms:"
    for n in plain torch_high_priority cco_off cco_priority cco_priority_stream cco_shape_priority; do
      t=$(med "$n")
      [ -n "$t" ] || continue
      awk -v n="$n" -v t="$t" -v c="$tc" -v m="$tm" 'BEGIN { s = c + m; mn = c < m ? c : m;
        printf "    %-22s step %8.3f ms  reduction vs sequential %5.1f%%  overlap efficiency %5.2f\n", n, t, 100 * (1 - t / s), (s - t) / mn }' | tee -a "$S"
    done
  fi
  ref=$(checksums plain)
  if [ -z "$ref" ]; then
    bad "no checksum from the plain DDP run"
  else
    say "  checksums of the plain run: $ref"
    say "  (torch_high_priority runs without the library: a difference there would mean the workload itself is not deterministic)"
    for n in torch_high_priority cco_off cco_priority cco_priority_stream cco_shape_priority; do
      [ -f "$R/ddp_$n.result" ] || continue
      c=$(checksums "$n")
      if [ "$c" = "$ref" ]; then say "  $n: identical losses and weights"; else bad "$n: checksums differ: $c"; fi
    done
  fi
fi

say ""
say "== done in $(elapsed)s, status $status (logs: $R)"
tar czf "$O/preload.tgz" -C "$O" preload
exit $status
