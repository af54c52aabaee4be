#!/usr/bin/env bash
# The GPU runner: the checks and measurements that run on a GPU machine, as subcommands of one
# script. The GPU machines cannot build: build here, copy what they run with scripts/stage_gpu.sh
# (-> build-gpu/, git-ignored, small enough to carry) and carry it along.
#
#   scripts/gpu.sh                         the subcommands, one line each
#   scripts/gpu.sh SUBCOMMAND --help       what a subcommand runs, stage by stage
#   scripts/gpu.sh SUBCOMMAND [ARGS]       run it
#
# Shared by every subcommand, set up once below: the GPU image's library path (NCCL and cuBLAS
# live inside PyTorch's environment there), NVLink multicast off (NCCL_NVLS_ENABLE=0), no ccoverlap
# control inherited from the caller's environment, the staged build ($BUILD, default build-gpu),
# and where results go: what the subcommand prints is also written, as it goes, to
# $OUT/SUBCOMMAND/summary.txt ($OUT default ./out; SUBCOMMAND-2, -3, ... when that folder is
# taken), and the logs it writes to its temporary folder come back packed as
# $OUT/SUBCOMMAND/logs.tgz, with machine.txt (GPUs, topology, cco info, PyTorch's versions).
# Exit status: the subcommand's; 2 for an unknown subcommand or wrong arguments.
# The subcommands and their helpers are called by name ("cmd_$sub"), not from where shellcheck looks:
# shellcheck disable=SC2317
set -euo pipefail

subcommands="tests ref preload window steps tune multi procs steps-procs copy-engines scale"

usage() {
  cat <<'EOF'
usage: scripts/gpu.sh SUBCOMMAND [ARGS]   (BUILD=build-gpu, OUT=out; SUBCOMMAND --help: its stages)
  tests                               every cco.test.gpu_* binary of the build, then the CLI test
  ref STAGE [ITERS]                   reference pairs, steps, tuning suite, tracing cost, DDP traced
  preload [all|tests|trace|bench|ddp] the preload library and cco run on 2 GPUs, checksums checked
  window [STAGES]                     the preload library's cost and effect on one GPU (a-h)
  steps [STAGES]                      the real program as its own benchmark on one GPU (a-e)
  tune [STAGES]                       cco tune -- CMD on one GPU, its plan against the candidates
  multi G [STAGES]                    real PyTorch DDP and FSDP2 training on G GPUs under cco run
  procs [ITERS]                       reference pairs, threads against one process per GPU (2 GPUs)
  steps-procs [G] [ITERS]             shipped steps, threads against one process per GPU
  copy-engines a|b|b1|b2 [G] [ITERS] [BUDGET]  copy-engine collectives measured and tuned
  scale N [ITERS]                     reference pairs, steps and cco tune at N GPUs
EOF
}

# The comment block above a subcommand's function (from its "#@ NAME" line).
subcommand_help() {
  sed -n "/^#@ $1\$/,/^cmd_/p" "${BASH_SOURCE[0]}" | sed '1d;$d; s/^# \{0,1\}//'
}

# ---- the subcommands ---------------------------------------------------------------------------
# Each runs from the repository root with: $B the build, $cco, $O the temporary log folder,
# $OUTDIR the result folder, say (print a summary line), has (is a stage asked for).

# Every cco.test.gpu_* binary of the build, each one's log under $1, a line each; fails when one
# failed (77: every test of a binary skipped, e.g. a 2-GPU binary on one GPU: reported, not a
# failure). Shared by `tests` (ref tests) and `ref suite`.
gpu_binaries() {
  local dir=$1 t n rc fail=0
  for t in "$B"/tests/cco.test.gpu_*; do
    n=$(basename "$t")
    timeout 300 "$t" >"$dir/$n.log" 2>&1
    rc=$?
    echo "$n: exit $rc ($(grep -E '^\[  (PASSED|FAILED)|^GPU tests:|^SKIPPED' "$dir/$n.log" | tr '\n' ' '))"
    grep -E "occupancy: .* footprints|FAILED|Failure" "$dir/$n.log" | head -20
    [ "$rc" = 0 ] || [ "$rc" = 77 ] || fail=1
  done
  return "$fail"
}

#@ tests
# usage: scripts/gpu.sh tests
# Every cco.test.gpu_* binary of the build (a binary whose tests all skipped exits 77: reported,
# not a failure), each one's log in logs.tgz, then tests/app/cli/test_cli.sh against this cco.
# The same as `scripts/gpu.sh ref tests`.
cmd_tests() {
  cmd_ref tests "$@"
}

#@ ref
# usage: scripts/gpu.sh ref [tests|bench|tune|steps|suite|trace|wtune|ddp|ddpplan|all] [ITERS]
# The reference benchmarks (ITERS iterations, default 50; the default stage: all).
#   tests    every cco.test.gpu_* binary and the CLI test (scripts/gpu.sh tests)
#   bench    the reference pairs (docs/METRICS.md) and two extensions, the first two again at the
#            end to show run-to-run spread: table to NAME.txt, samples to NAME.json
#   tune     cco tune on the five reference pairs, a green-context bench, and the geometric mean of
#            the tuned plans' efficiencies (tune_geomean.txt)
#   steps    cco bench --workload on every shipped workload (2 GPUs)
#   suite    steps, tests and tune
#   trace    the cost of tracing: the same bench with and without --trace, alternating, twice
#            each; cco report of the traces and SVG timelines of marked rows
#   wtune    cco tune --workload on every shipped workload (2 layers), then a workload shaped like
#            examples/pytorch/ddp_gpt.py, to compare with the real PyTorch DDP run (stage ddp)
#   ddp      the real PyTorch DDP run (2 GPUs): its parts alone, then traced by the library and
#            read by cco report
#   ddpplan  PyTorch DDP plainly and under the plan in $DDP_PLAN (e.g. wtune_ddp_gpt_like.plan.json
#            from stage wtune), alternating, twice each: step times; the checksums must match
#   all      tests and bench
# Exits 1 when a run failed.
cmd_ref() {
  local stage=${1:-all} iters=${2:-50}
  case $stage in
    tests | bench | tune | steps | suite | trace | wtune | ddp | ddpplan | all) ;;
    *) echo "scripts/gpu.sh ref: unknown stage '$stage' (tests bench tune steps suite trace wtune ddp ddpplan all)" >&2; return 2 ;;
  esac
  [[ $iters =~ ^[1-9][0-9]*$ ]] || { echo "scripts/gpu.sh ref: ITERS is a count, not '$iters'" >&2; return 2; }
  if [ "$stage" = ddpplan ] && [ ! -f "${DDP_PLAN:-}" ]; then
    echo "scripts/gpu.sh ref ddpplan: set DDP_PLAN to a plan file (stage wtune writes wtune_ddp_gpt_like.plan.json)" >&2
    return 2
  fi
  local R=$O status=0 t n rc
  head -30 "$O/machine.txt"

  if [ "$stage" = tests ] || [ "$stage" = all ]; then
    gpu_binaries "$R" || status=1
    CCO_BIN=$cco timeout 300 bash tests/app/cli/test_cli.sh >"$R/cli.log" 2>&1 || status=1
    tail -3 "$R/cli.log"
  fi

  bench() {  # bench NAME ARGS...: one reference run, table to NAME.txt, samples to NAME.json
    local name=$1 rc
    shift
    echo "== $name: cco bench $*"
    timeout 500 "$cco" bench -n "$iters" -w 5 "$@" --json "$R/$name.json" >"$R/$name.txt" 2>"$R/$name.err"
    rc=$?
    grep -vE '^# (argv|date|cuda|nccl|cublas|ccoverlap|  ?rank|times)' "$R/$name.txt" | cut -c1-200
    [ "$rc" = 0 ] || { echo "exit $rc: $(tail -2 "$R/$name.err")"; status=1; }
  }

  if [ "$stage" = bench ] || [ "$stage" = all ]; then
    # The reference pairs (docs/METRICS.md, README), then two extensions; the first two repeat at
    # the end to show run-to-run spread.
    bench lt4096x4_ar256M -g 2 --gemm 4096 --count 4 -b 256M -d bfloat16
    bench lt2048x8_ar64M -g 2 --gemm 2048 --count 8 -b 64M -d bfloat16
    bench lt8192x1_ar1G -g 2 --gemm 8192 --count 1 -b 1G -d bfloat16
    bench builtin2048x2_ar256M -g 2 --compute builtin --gemm 2048 --count 2 -b 256M -d bfloat16
    bench membound_ar256M -g 2 --compute membound --mem-bytes 512M --count 2 -b 256M -d bfloat16
    bench builtin2048x2_rs256M -g 2 --compute builtin --gemm 2048 --count 2 -b 256M -d bfloat16 --collective reducescatter
    bench lt4096x4_ar256M_sms100_ctas32 -g 2 --gemm 4096 --count 4 -b 256M -d bfloat16 --gemm-sms 100 --nccl-min-ctas 32 --nccl-max-ctas 32
    bench lt4096x4_ar256M_again -g 2 --gemm 4096 --count 4 -b 256M -d bfloat16
    bench builtin2048x2_ar256M_again -g 2 --compute builtin --gemm 2048 --count 2 -b 256M -d bfloat16
  fi

  # tune_run LIMIT_S LINES NAME ARGS...: one cco tune run (pairs or a workload), the first LINES
  # lines of its table (0: all) and its plan; `tune` and `wtune` below.
  tune_run() {
    local limit=$1 lines=$2 name=$3 t0 rc
    shift 3
    echo "== $name: cco tune $*"
    t0=$(date +%s)
    timeout "$limit" "$cco" tune "$@" --no-cache --plan "$R/$name.plan.json" >"$R/$name.txt" 2>"$R/$name.err"
    rc=$?
    if [ "$lines" = 0 ]; then cat "$R/$name.txt"; else head -"$lines" "$R/$name.txt"; fi
    echo "# wall time $(($(date +%s) - t0)) s"
    [ "$rc" = 0 ] || { echo "exit $rc: $(tail -2 "$R/$name.err")"; status=1; }
  }
  tune() { tune_run 120 0 "$@"; }  # tune NAME ARGS...: a pair's tuning, the whole table

  if [ "$stage" = steps ] || [ "$stage" = suite ]; then
    local w
    for w in examples/workloads/*.json; do
      n=$(basename "$w" .json)
      echo "== step $n: cco bench --workload $w -g 2 -n $iters"
      timeout 90 "$cco" bench --workload "$w" -g 2 -n "$iters" -w 3 --blocks-per-sm 2,4,6 \
        --json "$R/step_$n.json" >"$R/step_$n.txt" 2>"$R/step_$n.err"
      rc=$?
      cut -c1-180 "$R/step_$n.txt" | grep -vE '^# (argv|date|cuda|nccl|cublas|ccoverlap|  ?rank)'
      [ "$rc" = 0 ] || { echo "exit $rc: $(tail -3 "$R/step_$n.err")"; status=1; }
    done
  fi

  if [ "$stage" = suite ]; then
    gpu_binaries "$R" || status=1
  fi

  if [ "$stage" = tune ] || [ "$stage" = suite ]; then
    tune tune_lt4096x4_ar256M -g 2 --gemm 4096 --count 4 -b 256M -d bfloat16 -n "$iters" --green-sms 96,112
    tune tune_lt2048x8_ar64M -g 2 --gemm 2048 --count 8 -b 64M -d bfloat16 -n "$iters"
    tune tune_lt8192x1_ar1G -g 2 --gemm 8192 --count 1 -b 1G -d bfloat16 -n "$iters"
    tune tune_builtin2048x2_ar256M -g 2 --compute builtin --gemm 2048 --count 2 -b 256M -d bfloat16 -n "$iters"
    tune tune_membound_ar256M -g 2 --compute membound --mem-bytes 512M --count 2 -b 256M -d bfloat16 -n "$iters"
    bench green_lt4096x4_ar256M -g 2 --gemm 4096 --count 4 -b 256M -d bfloat16 --green-sms 104
  fi

  if [ "$stage" = trace ]; then
    # Tracing overhead: the same bench with and without --trace, alternating, twice each.
    local pair name args rep row win tag
    timeout 150 "$B"/tests/cco.test.gpu_trace >"$R/cco.test.gpu_trace.log" 2>&1 || status=1
    echo "cco.test.gpu_trace: $(grep -E '^\[  (PASSED|FAILED)' "$R/cco.test.gpu_trace.log" | tr '\n' ' ')"
    for pair in "lt:--gemm 4096 --count 4" "builtin:--compute builtin --gemm 2048 --count 2 --blocks-per-sm 3"; do
      name=${pair%%:*}
      read -ra args <<<"${pair#*:}"
      for rep in 1 2; do
        bench "trace_${name}_off_$rep" -g 2 -b 256M -d bfloat16 "${args[@]}"
        bench "trace_${name}_on_$rep" -g 2 -b 256M -d bfloat16 "${args[@]}" --trace "$R/trace_${name}_$rep.json"
      done
      "$cco" report "$R/trace_${name}_1.json" >"$R/report_${name}.txt" 2>&1 || status=1
      head -30 "$R/report_${name}.txt"
      # A picture of one marked run: the last iteration of each row is marked in the trace.
      for row in concurrent priority "shape+priority k=3"; do
        win=$(python3 - "$R/trace_${name}_1.json" "$row" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
marks = sorted((e["ts"], e["name"]) for e in ev if e.get("ph") == "i" and e.get("cat") == "mark")
for i, (ts, n) in enumerate(marks):
    if n == sys.argv[2]:
        end = marks[i + 1][0] if i + 1 < len(marks) else ts + 5000
        print(f"{ts:.1f} {end:.1f}")
        break
PY
)
        [ -n "$win" ] || continue
        tag=$(echo "$row" | tr ' +=' '__-')
        "$cco" report "$R/trace_${name}_1.json" --from "${win% *}" --to "${win#* }" --title "$name: $row" \
          --svg "$R/timeline_${name}_$tag.svg" >"$R/report_${name}_$tag.txt" 2>&1 || status=1
        echo "-- $row (window ${win} us):"; grep -E "^ *(all|rank|0|1) " "$R/report_${name}_$tag.txt" | head -4
      done
    done
  fi

  if [ "$stage" = tune ] || [ "$stage" = suite ]; then
    # The geometric mean of the tuned plans' efficiencies (issue 6's target: 0.85).
    python3 - "$R"/tune_*.plan.json <<'PY' | tee "$R/tune_geomean.txt"
import json, math, sys
effs = []
for f in sys.argv[1:]:
    p = json.load(open(f))
    tr = p["tuning"]["tried"]
    c = p["tuning"]["choice"]
    conc = next((t for t in tr if t["label"] == "concurrent"), None)
    effs.append(c["efficiency"])
    print(f"{f.split('/')[-1]:40s} chosen {c['label']:32s} eff {c['efficiency']:.2f} "
          f"reduction {100*c['reduction']:.1f}%  concurrent eff {conc['efficiency'] if conc else float('nan'):.2f}")
g = math.exp(sum(math.log(max(e, 1e-9)) for e in effs) / len(effs)) if effs else float("nan")
print(f"geometric-mean efficiency of the tuned plans over {len(effs)} pairs: {g:.3f}")
PY
  fi

  wtune() { tune_run 150 30 "$@"; }  # wtune NAME ARGS...: a workload tuning run

  if [ "$stage" = wtune ]; then
    # cco tune --workload on every shipped workload (2 layers, to fit a call), then a workload
    # shaped like examples/pytorch/ddp_gpt.py (16 GPT layers of width 1024, 8 x 512 tokens, fp32
    # gradients in 25 MB buckets) for the comparison with the real PyTorch DDP run (stage ddp).
    local w
    for w in examples/workloads/*.json; do
      n=$(basename "$w" .json)
      wtune "wtune_$n" --workload "$w" --param layers=2 -g 2 -n "$iters" --budget 60
    done
    wtune wtune_ddp_gpt_like --workload examples/workloads/ddp_llama7b.json --param layers=16 --param hidden=1024 \
      --param ffn=2048 --param micro_batch=8 --param seq_len=512 --param grad_dtype=float -g 2 -n "$iters" --budget 60
  fi

  if [ "$stage" = ddp ]; then
    # The real PyTorch DDP run traced by the library: overlap as cco report measures it.
    local mode
    export OMP_NUM_THREADS=4
    for mode in ddp compute-only comm-only; do
      timeout 150 torchrun --nproc-per-node 2 examples/pytorch/ddp_gpt.py --steps 15 --warmup 3 --mode "$mode" \
        >"$R/ddp_$mode.log" 2>&1 || status=1
      grep "result:" "$R/ddp_$mode.log"
    done
    timeout 200 "$cco" run --trace "$R/ddp_trace_%r.json" --policy off -- torchrun --nproc-per-node 2 \
      examples/pytorch/ddp_gpt.py --steps 6 --warmup 2 >"$R/ddp_traced.log" 2>&1 || { status=1; tail -3 "$R/ddp_traced.log"; }
    grep -E "result:|cco-preload: (trace|warning)" "$R/ddp_traced.log"
    if ls "$R"/ddp_trace_*.json; then
      "$cco" report "$R"/ddp_trace_*.json >"$R/ddp_report.txt" 2>&1 || status=1
    else
      status=1
    fi
    head -40 "$R/ddp_report.txt"
    "$cco" report "$R"/ddp_trace_*.json --json >"$R/ddp_report.json" 2>/dev/null
  fi

  if [ "$stage" = ddpplan ]; then
    # PyTorch DDP plainly and under the plan cco tune --workload chose for the matching workload,
    # alternating, twice each: step times, and the loss and weight checksums, which must be
    # identical.
    local rep
    export OMP_NUM_THREADS=4
    for rep in 1 2; do
      timeout 150 torchrun --nproc-per-node 2 examples/pytorch/ddp_gpt.py --steps 15 --warmup 3 \
        >"$R/ddpplan_plain_$rep.log" 2>&1 || status=1
      echo "plain $rep: $(grep result: "$R/ddpplan_plain_$rep.log")"
      timeout 150 "$cco" run --plan "$DDP_PLAN" --stats -- torchrun --nproc-per-node 2 examples/pytorch/ddp_gpt.py \
        --steps 15 --warmup 3 >"$R/ddpplan_plan_$rep.log" 2>&1 || status=1
      echo "plan  $rep: $(grep result: "$R/ddpplan_plan_$rep.log")"
      grep -m2 "cco-preload: \(stats\|warning\)" "$R/ddpplan_plan_$rep.log"
    done
  fi

  echo "overall status $status"
  return "$status"
}

#@ preload
# usage: scripts/gpu.sh preload [all|tests|trace|bench|ddp]     (default all; 5-6 minutes, ~7 at most)
# Verifies libcco_preload.so and `cco run` on a 2-GPU machine. BUDGET_S (default 400) bounds the
# whole: steps are skipped or cut past it.
#  (a) bench: `cco run --stats -- cco bench` with cuBLASLt GEMMs || all-reduce: launches seen,
#      shaped, skipped by reason, NCCL launches prioritised; bench's -c verification still passes;
#      times under several policies against no preload.
#  (b) tests: which NCCL prioritisation works: CU_LAUNCH_ATTRIBUTE_PRIORITY on NCCL's own launch
#      (policy priority, method launch-attr) or pnccl* collectives on a high-priority companion
#      stream (priority@stream): a saturating filler kernel, then an NCCL-named kernel and a real
#      2-GPU all-reduce on streams of the filler's priority -- do they overtake it?
#  (c) ddp: PyTorch DDP training (examples/pytorch/ddp_gpt.py, ~235M parameters, random weights)
#      plain, TORCH_NCCL_HIGH_PRIORITY=1, and under `cco run` policies: loss/weight checksums must
#      be identical; step times; compute-only and communication-only times for overlap efficiency.
#  (d) tests: CUDA graph capture + replay, threads, and residency under the library
#      (cco.test.gpu_preload), and the launch rate (cco.bench.launch_rate) off and shaping.
#  (d2) trace: `cco run --trace` (the library's CUPTI session) of a 2-GPU cco bench, read back by
#      `cco report`: NCCL and cuBLASLt (nvjet/cutlass) kernels on both devices (~15 s).
# Exit status: 0 when every check passed.
cmd_preload() {
  local stage=${1:-all}
  case $stage in
    all | tests | trace | bench | ddp) ;;
    *) echo "scripts/gpu.sh preload: unknown stage '$stage' (all tests trace bench ddp)" >&2; return 2 ;;
  esac
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
  local R=$O lib gt START BUDGET status=0 ngpu f
  lib=$(readlink -f "$CCO_PRELOAD_LIB")
  gt=$B/tests/cco.test.gpu_preload
  START=$(date +%s)
  BUDGET=${BUDGET_S:-400}  # seconds for everything: steps are skipped or cut past it (+30 s at most)
  local RUN=("$cco" run)
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
  stats_of() { grep -h '^cco-preload: stats' "$@" | sed 's/^cco-preload: /    /'; }

  ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  if [ "$ngpu" -lt 1 ]; then
    say "no GPU visible (nvidia-smi -L): run this on the GPU machine"
    return 2
  fi
  [ "$ngpu" -ge 2 ] || say "note: $ngpu GPU: the 2-GPU parts (bench, NCCL probe, DDP) will fail or skip"
  for f in "$lib" "$gt" "$cco"; do [ -e "$f" ] || { say "missing $f: build it and stage it (scripts/stage_gpu.sh)"; return 2; }; done
  { echo "== the preload library"; ldd "$lib"; nm -D --defined-only "$lib"; } >>"$O/machine.txt" 2>&1
  say "$(nvidia-smi -L 2>&1 | head -2 | tr '\n' ';')"
  say "library: $lib ($(nm -D --defined-only "$lib" | wc -l) exported symbols; links: $(ldd "$lib" | awk '{print $1}' | tr '\n' ' '))"
  if ldd "$lib" | grep -q 'not found'; then bad "the library has missing dependencies"; fi

  # ---- (d) and (b): the GPU test program, plain and under policies -----------------------------
  gpu() {  # gpu NAME TIMEOUT CMD...: output to $R/gpu_NAME.log, probe and stats lines to the summary
    local name=$1 t=$2 rc
    shift 2
    timeout "$(tmo "$t")" "$@" >"$R/gpu_$name.log" 2>&1
    rc=$?
    say "  [$name] exit $rc: $(grep -E '^\[  (PASSED|FAILED)' "$R/gpu_$name.log" | tr '\n' ' ')"
    grep -h '^cco-probe:' "$R/gpu_$name.log" | sed 's/^cco-probe: /    /'
    stats_of "$R/gpu_$name.log"
    grep -E 'Failure|Expected|Which is|warning' "$R/gpu_$name.log" | head -8 | sed 's/^/    /'
    [ "$rc" = 0 ] || bad "gpu test $name exited $rc"
  }

  if [ "$stage" = all ] || [ "$stage" = tests ]; then
    say ""
    say "== (d)(b) GPU tests: $gt"
    if [ ! -x "$gt" ]; then
      bad "$gt missing (build the gpu_preload test)"
    else
      have_time 60 && gpu plain 150 "$gt"
      # Residency is held at the target and the padding is baked into captured graphs.
      have_time 40 && gpu shape1 120 "${RUN[@]}" --policy shape:1 -- env CCO_STATS=2 CCO_TEST_EXPECT_BLOCKS=1 \
        "$gt" --gtest_filter='PreloadGpu.Direct*:PreloadGpu.Graph*:PreloadGpu.ManyThreads*'
      have_time 30 && gpu shape_model 90 "${RUN[@]}" --policy shape:model --stats -- env CCO_TEST_EXPECT_BLOCKS=4 \
        "$gt" --gtest_filter='PreloadGpu.Direct*:PreloadGpu.Graph*'
      # (b) Which NCCL prioritisation works: measured, not asserted (a method that does not work
      # is a finding). launch-attr covers the NCCL-named kernel and NCCL's own launches; the
      # stream method covers real collectives only.
      have_time 40 && gpu prio_attr 120 "${RUN[@]}" --policy priority@launch-attr --stats -- \
        "$gt" --gtest_filter='PreloadGpu.Priority*'
      have_time 40 && gpu prio_stream 120 "${RUN[@]}" --policy priority@stream --stats -- \
        "$gt" --gtest_filter='PreloadGpu.PriorityOfNcclAllReduce'
      have_time 30 && gpu prio_both 120 "${RUN[@]}" --policy priority@both --stats -- \
        "$gt" --gtest_filter='PreloadGpu.PriorityOfNcclAllReduce'
      # The verdict, from the probes' numbers: a start fraction or a finish ratio well below 1
      # means the prioritised work overtook the queued filler blocks.
      frac() { sed -n 's/.*filler.s span; on a greatest-priority stream (reference) at \([0-9.]*\)$/\1/p; ' "$R/gpu_$1.log" 2>/dev/null | head -1; }
      same() { sed -n 's/.*the filler.s priority starts at \([0-9.]*\) of the filler.s span.*/\1/p' "$R/gpu_$1.log" 2>/dev/null | head -1; }
      ratio() { sed -n 's/.*worst all-reduce\/filler ratio \([0-9.]*\) .*/\1/p' "$R/gpu_$1.log" 2>/dev/null | head -1; }
      verdict() { awk -v x="$1" 'BEGIN { if (x == "") print "not measured"; else if (x + 0 < 0.5) print "WORKS"; else print "no effect" }'; }
      say "  (b) verdict -- NCCL priority methods (fraction/ratio near 1: waited behind the filler; well below 1: overtook it):"
      say "      no library:        NCCL-named kernel $(same plain), all-reduce $(ratio plain); greatest-priority stream itself: $(frac plain)"
      say "      launch-attr:       NCCL-named kernel $(same prio_attr) -> $(verdict "$(same prio_attr)"); all-reduce $(ratio prio_attr) -> $(verdict "$(ratio prio_attr)")"
      say "      stream (pnccl*):   all-reduce $(ratio prio_stream) -> $(verdict "$(ratio prio_stream)")"
      say "      both:              all-reduce $(ratio prio_both) -> $(verdict "$(ratio prio_both)")"
      # Cost per launch: the same empty launches with the library doing nothing, then shaping.
      have_time 30 && gpu rate_off 60 "${RUN[@]}" --policy off --stats -- "$B/tests/cco.bench.launch_rate"
      have_time 30 && gpu rate_shape 60 "${RUN[@]}" --policy shape+priority:model --stats -- "$B/tests/cco.bench.launch_rate"
    fi
  fi

  # ---- (d2): cco run --trace, read back by cco report ------------------------------------------
  if [ "$stage" = all ] || [ "$stage" = trace ]; then
    say ""
    say "== (d2) cco run --trace trace_%r.json --policy shape+priority:model -- cco bench -g 2 --gemm 2048 --count 2 -b 64M -n 5"
    if have_time 30; then
      local rc trc traces
      rm -f "$R"/trace_*.json
      timeout "$(tmo 30)" "${RUN[@]}" --trace "$R/trace_%r.json" --policy shape+priority:model -- \
        "$cco" bench -g 2 --gemm 2048 --count 2 -b 64M -n 5 >"$R/trace_bench.txt" 2>"$R/trace_bench.err"
      rc=$?
      grep -h '^cco-preload: \(trace\|warning\)' "$R/trace_bench.err" | head -5 | sed 's/^cco-preload: /    /'
      [ "$rc" = 0 ] || bad "traced bench exited $rc: $(tail -2 "$R/trace_bench.err" | tr '\n' ' ')"
      traces=("$R"/trace_*.json)
      if [ ! -e "${traces[0]}" ]; then
        bad "cco run --trace wrote no trace_*.json"
      else
        say "  files: ${traces[*]##*/}"
        "$cco" report "${traces[@]}" >"$R/trace_report.txt" 2>&1 || bad "cco report of the traces exited $?: $(tail -2 "$R/trace_report.txt" | tr '\n' ' ')"
        say "  cco report:"
        head -24 "$R/trace_report.txt" | sed 's/^/    /'
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
        sed 's/^/    /' "$R/trace_check.txt"
        [ "$trc" = 0 ] || bad "the trace lacks ncclDevKernel or nvjet/cutlass kernels on 2 devices"
      fi
    fi
  fi

  # ---- (a): cco bench with cuBLASLt GEMMs under the library ------------------------------------
  local BENCH_ARGS=(bench -g 2 --gemm 4096 --count 4 -b 256M -d bfloat16 -n 20)
  bench() {  # bench POLICY ('none': no library)
    local pol=$1 name=${1//[:+@]/_} rc wrong
    local out=$R/bench_$name.txt err=$R/bench_$name.err
    if [ "$pol" = none ]; then
      timeout "$(tmo 90)" "$cco" "${BENCH_ARGS[@]}" >"$out" 2>"$err"
    else
      timeout "$(tmo 90)" "${RUN[@]}" --policy "$pol" --stats -- "$cco" "${BENCH_ARGS[@]}" >"$out" 2>"$err"
    fi
    rc=$?
    wrong=$(awk '$1 ~ /^[0-9]+$/ && NF >= 20 {w += $NF} END {print w + 0}' "$out")
    say "  [$pol] exit $rc (bench -c: exit 1 on wrong results), #wrong total $wrong"
    awk '$1 ~ /^[0-9]+$/ && NF >= 20 {printf "    %-16s time %8s us  reduction %5s%%  efficiency %5s  T_comp %s T_comm %s\n", $5, $13, $15, $17, $8, $9}' "$out"
    stats_of "$err"
    grep -h 'cco-preload: warning' "$err" | head -3 | sed 's/^/    /'
    [ "$rc" = 0 ] || { bad "bench under $pol exited $rc: $(tail -2 "$err" | tr '\n' ' ')"; }
    [ "$wrong" = 0 ] || bad "bench under $pol: wrong results"
    if [ "$pol" != none ] && ! grep -q '^cco-preload: stats' "$err"; then bad "bench under $pol: no statistics line (was the library loaded?)"; fi
  }

  if [ "$stage" = all ] || [ "$stage" = bench ]; then
    local pol
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
      say "  per-kernel decisions (shape+priority:model, CCO_STATS=2; bench_kernels.err):"
      grep -h '^cco-preload: kernel' "$R/bench_kernels.err" | head -14 | cut -c1-230 | sed 's/^cco-preload: /    /'
    fi
  fi

  # ---- (c): PyTorch DDP, plain and under cco run -----------------------------------------------
  local DDP_ARGS=(examples/pytorch/ddp_gpt.py --steps 10 --warmup 3)
  local TORCHRUN=(torchrun --standalone --nproc-per-node 2)
  command -v torchrun >/dev/null 2>&1 || TORCHRUN=(python3 -m torch.distributed.run --standalone --nproc-per-node 2)
  ddp() {  # ddp NAME MODE PREFIX...: one training run; result line and stats to the summary
    local name=$1 mode=$2 rc res
    shift 2
    local log=$R/ddp_$name.log
    timeout "$(tmo 120)" "$@" "${TORCHRUN[@]}" "${DDP_ARGS[@]}" --mode "$mode" >"$log" 2>&1
    rc=$?
    res=$(grep -h '^result:' "$log" | tail -1)
    say "  [$name] exit $rc ${res#result: }"
    stats_of "$log"
    grep -h 'cco-preload: warning' "$log" | sort -u | head -3 | sed 's/^/    /'
    [ "$rc" = 0 ] || bad "ddp $name exited $rc: $(grep -E 'Error|error' "$log" | tail -2 | tr '\n' ' ')"
    echo "$res" >"$R/ddp_$name.result"
  }
  checksums() { sed -n 's/.*\(loss_checksum=[^ ]*\) \(param_checksum=[^ ]*\).*/\1 \2/p' "$R/ddp_$1.result" 2>/dev/null; }

  if [ "$stage" = all ] || [ "$stage" = ddp ]; then
    local tc tm t n ref c
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
          printf "    %-22s step %8.3f ms  reduction vs sequential %5.1f%%  overlap efficiency %5.2f\n", n, t, 100 * (1 - t / s), (s - t) / mn }'
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
  say "== done in $(elapsed)s, status $status"
  return "$status"
}

#@ window
# usage: scripts/gpu.sh window [STAGES]      (default "a b c d e f")
# One-GPU checks of the communication-aware controls (issue 15): one log per run, the table in
# the summary.
#   a  GPU tests: the communication window under @overlap policies, residency under static ones
#   b  cost where no collective runs: a GPU-bound PyTorch step (examples/pytorch/gpt_step.py: GPT,
#      8 layers, width 2048, 16x1024 tokens, bf16 autocast, AdamW), plain / off / priority (the
#      default) / shape+priority:model@overlap, alternating A B C D D C B A, medians of 30 steps
#   c  launch rate from outside: 100,000 launches of one elementwise kernel from Python, plain /
#      library disabled / off / shape+priority:model@overlap, alternating
#   d  results: checksums of a small model (eager, torch.compile, CUDA graphs) plainly and under
#      shape+priority:model@overlap, a static shape:1, and sm-target (twice: reproducible)
#   e  the SM target reaches cuBLAS: GEMM grids in a trace plainly and under sm-target:66; the
#      trace names each GEMM kernel's cuBLAS call (how many carry one, distinct shapes per grid;
#      fails when fewer than 90% of the GEMM kernels carry one)
#   f  the library's own time per shaped launch in steady state (a launch loop of a kernel large
#      enough to shape, static shape:1 and off, CCO_STATS's hook_ns_steady)
#   g  real NCCL through the library: PyTorch DDP with one rank (torchrun --nproc-per-node 1):
#      the windows open at DDP's all-reduces; checksums plainly, under
#      shape+priority:model@overlap and under sm-target:66@overlap (twice: reproducible)
#   h  launch rate of a C++ program (cudaLaunchKernel of an empty kernel), plain / disabled / off
#   i  what library calls cost a traced program: the launch rate (20000 launches x 3) and a small
#      eager GPT step (2 layers x 1024, about 47 cuBLAS calls a step), each under cco run --trace
#      with and without CCO_TRACE_CALLS=0, alternating A B B A twice (ISEQ: another order)
# shape+priority:model@overlap was cco run's default policy until 2026-11-26 (now priority); the
# stages name it explicitly, so they still measure the shaping window.
cmd_window() {
  stages=${*:-a b c d e f}
  check_stages window "a b c d e f g h i" || return 2
  local py=python3 i k c f r t pol gt mode small ddp status=0
  res() { grep -h '^result:' "$1" | tail -1; }
  field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1"; }
  say "# torch $($py -c 'import torch;print(torch.__version__, torch.version.cuda)' 2>/dev/null)"

  # run_cfg LOG CONFIG CMD...: CONFIG is plain | disabled | POLICY
  run_cfg() {
    local log=$1 cfg=$2
    shift 2
    case $cfg in
      plain) timeout 300 "$@" >"$log" 2>&1 ;;
      disabled) timeout 300 env LD_PRELOAD="$CCO_PRELOAD_LIB" CCO_DISABLE=1 "$@" >"$log" 2>&1 ;;
      *) timeout 300 "$cco" run --stats --policy "$cfg" -- "$@" >"$log" 2>&1 ;;
    esac
    echo "rc=$?" >>"$log"
  }

  if has a; then
    say "== a: GPU tests"
    gt="$B/tests/cco.test.gpu_preload"
    for pol in "shape+priority:model@overlap" "shape:1@overlap"; do
      f="$O/a_window_${pol//[^a-z0-9]/_}.log"
      timeout 120 "$cco" run --stats --policy "$pol" -- "$gt" --gtest_filter='PreloadGpu.CommunicationWindow' >"$f" 2>&1
      say "  window $pol: rc=$? $(grep -h 'cco-probe: window' "$f") $(grep -ho 'window_opened=[0-9]*\|skip.no-comm=[0-9]*' "$f" | tr '\n' ' ')"
    done
    f="$O/a_static.log"
    timeout 180 "$cco" run --policy shape:2 -- env CCO_TEST_EXPECT_BLOCKS=2 "$gt" --gtest_filter='-*Priority*' >"$f" 2>&1
    say "  static shape:2 residency/graph/threads: rc=$? $(grep -h 'PASSED\|FAILED' "$f" | tr '\n' ' ')"
    f="$O/a_default_plain.log"
    timeout 180 "$cco" run --policy shape+priority:model@overlap -- "$gt" --gtest_filter='-*Priority*' >"$f" 2>&1
    say "  default policy, results: rc=$? $(grep -h 'PASSED\|FAILED' "$f" | tr '\n' ' ') $(grep -ho 'cco-probe: direct launch.*' "$f")"
  fi

  if has b; then
    say "== b: cost without communication (gpt_step eager, 8x2048, 16x1024, 30 steps)"
    # The default since 2026-11-26 (priority) beside the shaping window it replaced.
    local cfgs=(plain off priority "shape+priority:model@overlap")
    i=0
    for k in 0 1 2 3 3 2 1 0; do
      c=${cfgs[$k]}
      f="$O/b_${i}_${c//[^a-z0-9]/_}.log"
      run_cfg "$f" "$c" "$py" examples/pytorch/gpt_step.py --mode eager --steps 30 --warmup 5
      r=$(res "$f")
      say "  run $i $c: $(field "$r" median_step_ms) ms (p10 $(field "$r" p10_ms), p90 $(field "$r" p90_ms)) loss $(field "$r" loss_checksum) $(grep -ho 'shaped=[0-9]*\|skip.no-comm=[0-9]*' "$f" | tr '\n' ' ')"
      i=$((i + 1))
    done
  fi

  if has c; then
    say "== c: launch rate (100000 launches x 5, us per launch)"
    local cfgs=(plain disabled off "shape+priority:model@overlap")
    i=0
    for k in 0 1 2 3 3 2 1 0 0 1 2 3 3 2 1 0; do
      c=${cfgs[$k]}
      f="$O/c_${i}_${c//[^a-z0-9]/_}.log"
      run_cfg "$f" "$c" env CCO_STATS=1 "$py" examples/pytorch/gpt_step.py --mode launch-rate
      r=$(res "$f")
      say "  run $i $c: median $(field "$r" median_us_per_launch) us (min $(field "$r" min_us), max $(field "$r" max_us)) $(grep -ho 'hook_ns_per_launch=[0-9]*' "$f")"
      i=$((i + 1))
    done
  fi

  if has d; then
    say "== d: results (checksums; small model: 2 layers, width 512, 4x256 tokens)"
    small=(--layers 2 --d-model 512 --heads 8 --vocab 8192 --seq 256 --batch 4 --steps 6 --warmup 2)
    for mode in eager compile graphs; do
      for c in plain plain "shape+priority:model@overlap" "shape:1" "sm-target:66" "sm-target:66" "sm-target:66@overlap"; do
        [ "$mode" != eager ] && [[ $c == sm-target* ]] && continue
        f="$O/d_${mode}_${c//[^a-z0-9]/_}.log"
        [ -f "$f" ] && f="${f%.log}_2.log"
        run_cfg "$f" "$c" "$py" examples/pytorch/gpt_step.py --mode "$mode" "${small[@]}"
        r=$(res "$f")
        say "  $mode $c: loss $(field "$r" loss_checksum) params $(field "$r" param_checksum) $(grep -ho 'shaped=[0-9]*\|gemm_[a-z_]*=[0-9]*' "$f" | tr '\n' ' ') $(grep -h '^rc=' "$f")"
      done
    done
  fi

  if has e; then
    say "== e: the SM target reaches cuBLAS (GEMM grids in a trace)"
    small=(--layers 2 --d-model 1024 --heads 8 --vocab 8192 --seq 512 --batch 8 --steps 3 --warmup 1)
    for c in off "sm-target:66"; do
      t="$O/e_trace_${c//[^a-z0-9]/_}.json"
      timeout 200 "$cco" run --stats --policy "$c" --trace "$t" -- "$py" examples/pytorch/gpt_step.py --mode eager "${small[@]}" \
        >"$O/e_${c//[^a-z0-9]/_}.log" 2>&1
      say "  $c: rc=$? $(grep -ho 'gemm_[a-z_]*=[0-9]*' "$O/e_${c//[^a-z0-9]/_}.log" | tr '\n' ' ')"
      "$py" - "$t" <<'EOF'
import json, sys, collections
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"] if isinstance(d, dict) else d
grids = collections.Counter()
calls = collections.Counter()
shapes_per_launch = collections.defaultdict(set)  # (name, grid) -> the calls that launched it
gemms = 0
for e in ev:
    a = e.get("args") or {}
    n = e.get("name", "")
    if e.get("ph") == "X" and "grid" in a and any(s in n.lower() for s in ("gemm", "xmma", "cutlass", "sm90", "nvjet")):
        g = a["grid"]
        grids[g[0] * g[1] * g[2]] += 1
        gemms += 1
        if a.get("call"):
            calls[a["call"]] += 1
            shapes_per_launch[(n, tuple(g))].add(a["call"])
print("    GEMM kernels by grid size (blocks: count):", dict(sorted(grids.items())))
mixed = sum(1 for v in shapes_per_launch.values() if len(v) > 1)
print(f"    library calls: {sum(calls.values())} of {gemms} GEMM kernels carry their call, "
      f"{len(calls)} distinct calls; {mixed} of {len(shapes_per_launch)} (name, grid) pairs "
      f"ran for more than one shape")
for c, k in calls.most_common(4):
    print(f"      {k:5d}  {c}")
if gemms and sum(calls.values()) < 0.9 * gemms:
    print("    FAIL: fewer than 90% of the GEMM kernels carry their cuBLAS call")
    sys.exit(1)
EOF
      [ $? = 0 ] || status=1
    done
  fi

  if has f; then
    say "== f: the library's time per launch, steady state (launch loop, 4M elements per launch)"
    for c in off priority "shape:1" "shape:1" priority off; do
      f="$O/f_${c//[^a-z0-9]/_}_$RANDOM.log"
      run_cfg "$f" "$c" "$py" examples/pytorch/gpt_step.py --mode launch-rate --numel 4194304 --launches 20000 --repeats 3
      say "  $c: $(grep -ho 'shaped=[0-9]*\|hook_ns_per_launch=[0-9]*\|hook_ns_steady=[0-9]*\|cold_launches=[0-9]*' "$f" | tr '\n' ' ')"
    done
  fi

  if has i; then
    say "== i: library calls in a trace: their cost (alternating; launch rate in us, step in ms)"
    small=(--layers 2 --d-model 1024 --heads 8 --vocab 8192 --seq 512 --batch 8 --steps 30 --warmup 3)
    for k in ${ISEQ:-calls nocalls nocalls calls calls nocalls nocalls calls}; do
      local lc=1
      [ "$k" = nocalls ] && lc=0
      f="$O/i_lr_${k}_$RANDOM.log"
      CCO_TRACE_CALLS=$lc timeout 200 "$cco" run --policy off --trace "$O/i_lr.json" -- "$py" examples/pytorch/gpt_step.py \
        --mode launch-rate --launches 20000 --repeats 3 >"$f" 2>&1
      r=$(res "$f")
      f="$O/i_step_${k}_$RANDOM.log"
      CCO_TRACE_CALLS=$lc timeout 200 "$cco" run --policy off --trace "$O/i_step.json" -- "$py" examples/pytorch/gpt_step.py \
        --mode eager "${small[@]}" >"$f" 2>&1
      say "  $k: launch $(field "$r" median_us_per_launch) us; step $(field "$(res "$f")" median_step_ms) ms; calls in the step trace: $(cat "$O"/i_step*.json 2>/dev/null | grep -o '"call"' | wc -l)"
      rm -f "$O"/i_lr*.json "$O"/i_step*.json
    done
  fi

  if has g; then
    say "== g: PyTorch DDP, one rank, real NCCL (4 layers x 1024, 8x512 tokens, 8 steps)"
    ddp=(torchrun --standalone --nproc-per-node 1 examples/pytorch/ddp_gpt.py --layers 4 --steps 8 --warmup 2)
    for c in plain "shape+priority:model@overlap" "sm-target:66@overlap" "sm-target:66@overlap" "shape+priority:model"; do
      f="$O/g_${c//[^a-z0-9]/_}_$RANDOM.log"
      run_cfg "$f" "$c" "${ddp[@]}"
      r=$(res "$f")
      say "  $c: $(field "$r" median_step_ms) ms loss $(field "$r" loss_checksum) params $(field "$r" param_checksum) $(grep -ho 'shaped=[0-9]*\|skip.no-comm=[0-9]*\|window_[a-z_]*=[0-9]*\|gemm_[a-z_]*=[0-9]*\|nccl=[0-9]*' "$f" | sort -u | tr '\n' ' ') $(grep -h '^rc=' "$f")"
    done
  fi

  if has h; then
    say "== h: C++ launch rate (cco.bench.launch_rate)"
    gt="$B/tests/cco.bench.launch_rate"
    for c in plain disabled off plain disabled off off disabled plain; do
      f="$O/h_${c}_$RANDOM.log"
      run_cfg "$f" "$c" "$gt"
      say "  $c: $(grep -h 'cco-probe' "$f" | head -2 | tr '\n' ' ')"
    done
  fi
  say "# done"
  return $status
}

#@ steps
# usage: scripts/gpu.sh steps [STAGES]      (default "a b c d e"; STEPS=80 steps per DDP run)
# One-GPU checks of the real program as its own benchmark (issue 16); step files in logs.tgz.
#   a  DDP GPT with one rank (torchrun): steps found from its collectives; paired comparisons
#      in one process: off,off (must be within noise), off,shape:1 (a known slowdown), off and
#      shape+priority:model@overlap (cco run's default until 2026-11-26, now priority)
#   b  the same two policies as separate runs (step files kept), for the unpaired comparison
#   c  a plain single-GPU loop (no collective): steps marked by ccoverlap.step();
#      shape+priority:model@overlap against off, paired
#   d  the same loop without marks: the comparison is refused with one line
#   e  the preload GPU tests (the window, residency) under the library
cmd_steps() {
  stages=${*:-a b c d e}
  check_stages steps "a b c d e" || return 2
  local STEPS=${STEPS:-80} pol d t0 f
  local ddp=(torchrun --standalone --nproc-per-node 1 examples/pytorch/ddp_gpt.py --layers 8 --d-model 1024
    --steps "$STEPS" --warmup 3)
  say "# torch $(python3 -c 'import torch;print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())' 2>/dev/null)"

  cmp_run() {  # NAME ITEMS ARGS...: a paired comparison; the report lines go to the summary
    local name=$1 items=$2 t0 rc
    shift 2
    t0=$SECONDS
    timeout 240 "$cco" run --compare "$items" --warmup 5 --steps-out "$O/$name" \
      --compare-json "$O/$name.json" -- "$@" >"$O/$name.log" 2>&1
    rc=$?
    say "== $name ($items): rc=$rc, $((SECONDS - t0)) s"
    grep -E '^(# compare|#config|cco: )|^[a-z]' "$O/$name.log" | grep -vE '^(result|step|rank|world|model|W[0-9]|I[0-9])' | tail -8
    grep -h '^result:' "$O/$name.log" | tail -1
  }

  if has a; then
    cmp_run a_ddp_off_off off,off "${ddp[@]}"
    cmp_run a_ddp_off_shape1 off,shape:1 "${ddp[@]}"
    cmp_run a_ddp_off_default "off,shape+priority:model@overlap" "${ddp[@]}"
  fi
  if has b; then
    for pol in off shape:1; do
      d="$O/b_${pol//[^a-z0-9]/_}_$RANDOM"
      t0=$SECONDS
      timeout 240 "$cco" run --policy "$pol" --steps-out "$d" -- "${ddp[@]}" >"$d.log" 2>&1
      say "== b separate $pol: rc=$? $((SECONDS - t0)) s $(grep -h '^cco: steps' "$d.log" | tr '\n' ' ') $(grep -h '^result:' "$d.log" | tail -1)"
    done
  fi
  if has c; then
    cmp_run c_loop_off_default "off,shape+priority:model@overlap" \
      python3 examples/pytorch/gpt_step.py --mark-steps --steps 40 --warmup 2
  fi
  if has d; then
    cmp_run d_loop_nomarks off,shape:1 python3 examples/pytorch/gpt_step.py --steps 6 --warmup 1 --layers 2 --d-model 512
  fi
  if has e; then
    f="$O/e_gpu_preload.log"
    timeout 120 "$cco" run --stats -- "$B/tests/cco.test.gpu_preload" >"$f" 2>&1
    say "== e gpu_preload: rc=$? $(grep -E 'PASSED|FAILED' "$f" | tr '\n' ' ')"
  fi
  say "# done $(date -u +%FT%TZ)"
}

#@ tune
# usage: scripts/gpu.sh tune [STAGES]      (default "p t m r")
# One-GPU checks of `cco tune -- CMD` (issue 16) and of the preload library (issue 15).
#   p  the preload GPU tests: the communication window under cco run, residency/graph/threads
#      under shape:2 with the residency asserted
#   t  cco tune on DDP GPT with one rank (steps found from its collectives): candidates
#      off, priority, shape:1 (static), shape+priority:model@overlap; then the tuned plan in a
#      paired comparison against every candidate (cco run --compare PLAN,...)
#   m  cco tune on the single-GPU GPT loop marked by ccoverlap.step(): off, shape:2,
#      shape+priority:model (static); the plan against the candidates, paired
#   r  results unchanged: the small GPT eager run plainly and under the plan of t (checksums)
cmd_tune() {
  stages=${*:-p t m r}
  check_stages tune "p t m r" || return 2
  local f cfg
  local ddp=(torchrun --standalone --nproc-per-node 1 examples/pytorch/ddp_gpt.py --layers 8 --d-model 1024
    --steps 400 --warmup 3)
  local loop=(python3 examples/pytorch/gpt_step.py --mark-steps --steps 150 --warmup 2)
  say "# torch $(python3 -c 'import torch;print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())' 2>/dev/null)"

  tune_then_compare() {  # NAME CANDIDATES CMD...: cco tune, then the plan against every candidate
    local name=$1 cands=$2 t0 rc
    shift 2
    t0=$SECONDS
    timeout 300 "$cco" tune --candidates "$cands" --warmup 5 --out "$O/$name.plan.json" \
      --steps-out "$O/$name.steps" -- "$@" >"$O/$name.log" 2>"$O/$name.err"
    rc=$?
    say "== $name tune ($cands): rc=$rc, $((SECONDS - t0)) s"
    grep -E '^cco tune: step' "$O/$name.err"
    grep -vE '^(result|step|rank|world|model|W[0-9]|I[0-9])' "$O/$name.log" | tail -9
    [ -f "$O/$name.plan.json" ] || return
    t0=$SECONDS
    timeout 300 "$cco" run --compare "$O/$name.plan.json,$cands" --warmup 5 \
      --steps-out "$O/$name.cmp" --compare-json "$O/$name.cmp.json" -- "$@" \
      >"$O/$name.cmp.log" 2>&1
    say "== $name plan vs candidates, paired: rc=$? $((SECONDS - t0)) s"
    grep -E '^(# compare|#config|cco: )|^[a-z/]' "$O/$name.cmp.log" | grep -vE '^(result|step|rank|world|model|W[0-9]|I[0-9])' | tail -8
  }

  if has p; then
    f="$O/p_window.log"
    timeout 120 env CCO_TEST_REQUIRE_WINDOW=1 "$cco" run -- "$B/tests/cco.test.gpu_preload" \
      --gtest_filter=PreloadGpu.CommunicationWindow >"$f" 2>&1
    say "== p window: rc=$? $(grep -E 'PASSED|FAILED|SKIPPED' "$f" | tr '\n' ' ')"
    f="$O/p_shape2.log"
    timeout 120 "$cco" run --policy shape:2 --stats -- env CCO_TEST_EXPECT_BLOCKS=2 \
      "$B/tests/cco.test.gpu_preload" >"$f" 2>&1
    say "== p shape:2: rc=$? $(grep -E 'PASSED|FAILED' "$f" | tr '\n' ' ') $(grep -o 'shaped=[0-9]*' "$f" | head -1)"
  fi
  if has t; then
    # ddp_gpt.py runs 400 steps at most; cco tune stops it once the winner is known.
    tune_then_compare t_ddp "off,priority,shape:1,shape+priority:model@overlap" "${ddp[@]}"
  fi
  if has m; then
    tune_then_compare m_loop "off,shape:2,shape+priority:model" "${loop[@]}"
  fi
  if has r; then
    for cfg in plain plan; do
      f="$O/r_$cfg.log"
      if [ "$cfg" = plain ]; then
        timeout 120 python3 examples/pytorch/gpt_step.py --steps 8 --warmup 1 --layers 2 --d-model 512 >"$f" 2>&1
      elif [ -f "$O/t_ddp.plan.json" ]; then
        timeout 120 "$cco" run --plan "$O/t_ddp.plan.json" -- python3 examples/pytorch/gpt_step.py --steps 8 \
          --warmup 1 --layers 2 --d-model 512 >"$f" 2>&1
      fi
      say "== r $cfg: rc=$? $(grep -h '^result:' "$f" | tail -1)"
    done
  fi
  say "# done $(date -u +%FT%TZ)"
}

#@ multi
# usage: scripts/gpu.sh multi G [STAGES]      (default "m k x p q t f")
# Real PyTorch training on G GPUs under ccoverlap (the measurement of the closed issue 20): a
# GPT-style model of about 1.3B parameters (examples/pytorch/ddp_gpt.py: 24 layers, width 2048;
# LAYERS=, DMODEL= change it), bf16 autocast, DDP with 25 MB buckets or FSDP2. STEPS=30 steps per
# plain run. Step files and logs in logs.tgz.
#   m  the parts: compute only (no_sync), communication only (DDP's buckets), DDP plain
#   k  PyTorch's own knob: plain against TORCH_NCCL_HIGH_PRIORITY=1, whole runs A B B A
#   x  answers: DDP under cco run's default policy, checksums against the plain run of `m`
#   p  paired in one process (cco run --compare): off, priority, shaping while NCCL works
#      (shape+priority:model@overlap, the default until 2026-11-26), and a GEMM SM budget only
#      while NCCL works
#   q  the same under TORCH_NCCL_HIGH_PRIORITY=1: does cco add to PyTorch's knob?
#   t  cco tune -- torchrun ... (online search in the program's own steps) on DDP: restarts of the
#      search, Python tracebacks, the steps it compared beside the program's own (as v)
#   f  FSDP2: paired, off, priority and shape+priority:model@overlap
#   d  the default policy (priority since 2026-11-26) against off, paired, over more steps
#   c  NCCL channel caps through the tuner plugin (fewer SMs for DDP's all-reduces), paired
#   s  the per-step diagnosis checked (issue 32): DDP and FSDP2 traced (steps as NVTX ranges), DDP
#      without gradient sync traced as the alone trace; cco report's parts and bounds beside the
#      program's own step times and the paired gains of the controls (cco run --compare). The
#      traces come back gzipped beside logs.tgz (KEEP_TRACES=0: not); DSTEPS=20 traced steps
#   l  what tracing costs the program, library calls included: DDP untraced, traced, and traced
#      with CCO_TRACE_CALLS=0, alternating A B C C B A (LSTEPS=20 steps each); the program's own
#      step medians
#   b  cco run --compare with --trace: the bounds of the baseline's traced steps printed beside the
#      measured differences (DDP)
#   w  the same check on bench traces: the TP step (copy engines), the memory-bound pair
#      (shaping) and the built-in GEMM pair (priority), rows measured in the traced run
#   n  the price of communication (cco run --compare off,nocomm): tests/inject/preload/gpu/
#      nocomm_check.py on real NCCL (what nocomm leaves in each collective's output, the ranks in
#      step), then DDP's price measured by cco beside the program's own pairing with no_sync()
#      (--pair-nosync), twice each in A B B A order, and FSDP2's price; NSTEPS=60 steps each; the
#      step files in logs.tgz
#   e  cco run --compare's check after its first rounds (stop early when nothing to win): DDP
#      and FSDP2 with the check (-v: the diagnosis' time in the log), DDP again with --no-diagnose
#      (the whole comparison, to set beside the check's verdict); ESTEPS=60 steps each
#   g  framework controls (cco run --framework; also on 1 GPU): DDP plain against ddp.bucket_view
#      and ddp.bucket_view,ddp.bucket_mb=100, FSDP2 plain against fsdp.reshard=off, whole runs in
#      A B B A order (GSTEPS=40 steps each), answers compared (checksums); one traced run of DDP
#      with and without ddp.bucket_view: copy kernels per step (the copies the bucket view saves)
#   v  cco tune -- on FSDP2 (issue 43 item 4): the steps the search compared (their period in
#      collectives and median length, from the step files) beside the program's own step time,
#      and whether a Python traceback reached the user's terminal when tune stopped the program
#   u  cco tune --framework-candidate on DDP: ddp.bucket_view and ddp.bucket_view,ddp.bucket_mb=100
#      against none, by whole runs in two alternating rounds (USTEPS=40 steps a run); the table
#      and the plan's framework controls
#   y  the price split in the trace (issue 43): cco run --compare off,nocomm --trace on DDP and
#      FSDP2 (YSTEPS=24 steps each: longer traced runs hang, docs/TRACE.md; YPROGS=ddp: DDP only): the comparison's paired price of the traced run beside 'off''s
#      traced steps set against nocomm's of the same trace (the twin: compute slowed by cause,
#      compute only here, exposed, host idle), then cco report of the same traces with --steps
#      config:0 --alone-steps config:1 (its JSON in logs.tgz); the traces come back gzipped beside
#      logs.tgz as KEEP_TRACES allows (as s)
#   h  a traced run that stops making steps: DDP under cco run --trace (HSTEPS=60 steps), then
#      the same with CCO_TRACE_CALLS=0 CCO_NVTX=0 (HVARIANTS: some of "default nocalls
#      nolatency kineto"; nolatency: CCO_TRACE_LAUNCH_TIMES=0; kineto: no cco, torch.profiler
#      over every step, the control); where no step line comes for 30 s, every
#      thread's stack of every process of the program (its wait channel and system call, and its
#      stack where gdb or eu-stack is on PATH) goes to h_NAME.stacks in logs.tgz, the workers'
#      Python stacks to h_NAME.log, then the run is stopped
# (Stage x measures whatever the default is: shape+priority:model@overlap before 2026-11-26,
# priority since.) Exits non-zero when a run failed or the answers differ.
# Every thread's stack of every process of the running example program, to $1: each thread's
# name, kernel wait channel and system call, then its stack by gdb or eu-stack where the machine
# has one; the workers' Python stacks go to their log.
hang_stacks() {
  local p t
  # The workers print their Python stacks to their log (faulthandler on SIGUSR1; not torchrun).
  for p in $(pgrep -f 'python[0-9.]* -u examples/pytorch/ddp_gpt.py'); do kill -USR1 "$p" 2>/dev/null || true; done
  sleep 2
  for p in $(pgrep -f 'examples/pytorch/ddp_gpt.py'); do
    echo "=== pid $p: $(tr '\0' ' ' <"/proc/$p/cmdline" | cut -c1-200)"
    for t in /proc/"$p"/task/*; do
      echo "tid ${t##*/} $(cat "$t/comm") wchan=$(cat "$t/wchan" 2>/dev/null) syscall=$(cut -d' ' -f1 "$t/syscall" 2>/dev/null)"
    done
    if command -v gdb >/dev/null; then
      timeout 60 gdb -p "$p" -batch -ex 'thread apply all bt 30' 2>&1 | grep -vE '^\[New LWP|^$'
    elif command -v eu-stack >/dev/null; then
      timeout 60 eu-stack -p "$p" 2>&1
    fi
  done >"$1" 2>&1
}

cmd_multi() {
  local G=${1:-2}
  [[ $G =~ ^[1-9][0-9]*$ ]] || { echo "usage: scripts/gpu.sh multi G [stages]: G is the number of GPUs, not '$G'" >&2; return 2; }
  shift || true
  stages=${*:-m k x p q t f}
  check_stages multi "m k x p q t f d c s l b w e n g u v y h" || return 2
  export OMP_NUM_THREADS=4
  local status=0 STEPS=${STEPS:-30} mode rep order c a b pol t0 x f
  local model=(--layers "${LAYERS:-24}" --d-model "${DMODEL:-2048}" --heads 16)
  local prog=(torchrun --standalone --nproc-per-node "$G" examples/pytorch/ddp_gpt.py "${model[@]}")
  say "# G=$G torch $(python3 -c 'import torch;print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())' 2>/dev/null)"

  plain() {  # NAME ARGS...: one whole run of the program, its result line to the summary
    local name=$1 t0 rc
    shift
    t0=$SECONDS
    timeout 200 "$@" >"$O/$name.log" 2>&1
    rc=$?
    [ "$rc" = 0 ] || status=1
    say "== $name: rc=$rc $((SECONDS - t0)) s $(grep -h '^result:' "$O/$name.log" | tail -1)"
  }
  cmp_run() {  # NAME ITEMS [cco run options] -- CMD...: a paired comparison; its table to the summary
    local name=$1 items=$2 t0 rc
    shift 2
    t0=$SECONDS
    timeout 240 "$cco" run --compare "$items" --compare-json "$O/$name.json" "$@" >"$O/$name.log" 2>&1
    rc=$?
    [ "$rc" = 0 ] || status=1
    say "== $name ($items): rc=$rc $((SECONDS - t0)) s"
    grep -E '^(# compare|# the price|#config|cco: |cco run: )|^[a-z/:@0-9+-]+ +[0-9]' "$O/$name.log" \
      | grep -vE '^(result|step|rank|world|model|W[0-9]|I[0-9])' | tail -8
    grep -h '^result:' "$O/$name.log" | tail -1
  }

  tune_steps_summary() {  # LOG STEPS_DIR: what cco tune -- CMD said, the steps it compared beside
    # the program's own (their period and median, from the step files), restarts and tracebacks
    say "   restarts (a new period): $(grep -c 'steps changed' "$1"); Python tracebacks: $(grep -c '^Traceback' "$1")"
    grep -E '^(cco tune|# tune|cco: )' "$1" | cut -c1-300 | tail -12
    grep -E 'cco-preload.*(diagnos|CUPTI stopped)' "$1" | cut -c1-300 | head -6
    python3 - "$2" "$1" <<'PY' 2>&1 | while IFS= read -r l; do say "$l"; done
import glob, json, re, statistics, sys
own = [float(m) for m in re.findall(r"step_ms ([0-9.]+)", open(sys.argv[2], errors="replace").read())]
for f in sorted(glob.glob(sys.argv[1] + "/steps-*.json")):
    try:
        j = json.load(open(f))
    except Exception as e:
        print(f"   {f}: {e}"); continue
    ms = [s["host_ms"] for s in j.get("steps", [])]
    print(f"   {f.split('/')[-1]}: source {j.get('source')}, period {j.get('period')} collectives, "
          f"{j.get('locks')} locks, {len(ms)} steps kept, median "
          f"{statistics.median(ms) if ms else float('nan'):.2f} ms, ended {j.get('ended')}")
print(f"   the program's own steps: {len(own)}, median {statistics.median(own) if own else float('nan'):.2f} ms")
PY
  }

  if has m; then
    for mode in compute-only comm-only ddp; do
      plain "m_$mode" "${prog[@]}" --mode "$mode" --steps "$STEPS" --warmup 3
    done
  fi
  if has k; then
    for rep in 1 2; do  # A B B A
      if [ "$rep" = 1 ]; then order="plain high"; else order="high plain"; fi
      for c in $order; do
        if [ "$c" = plain ]; then
          plain "k_plain_$rep" "${prog[@]}" --steps "$STEPS" --warmup 3
        else
          plain "k_high_$rep" env TORCH_NCCL_HIGH_PRIORITY=1 "${prog[@]}" --steps "$STEPS" --warmup 3
        fi
      done
    done
  fi
  if has x; then
    plain x_default "$cco" run -- "${prog[@]}" --steps "$STEPS" --warmup 3
    a=$(grep -ho 'loss_checksum=[^ ]* param_checksum=[^ ]*' "$O/m_ddp.log" 2>/dev/null | tail -1)
    b=$(grep -ho 'loss_checksum=[^ ]* param_checksum=[^ ]*' "$O/x_default.log" | tail -1)
    if [ -n "$a" ] && [ "$a" = "$b" ]; then
      say "answers: identical checksums, plain and the default policy"
    else
      say "answers: DIFFER or missing: plain '$a' default '$b'"
      status=1
    fi
  fi
  pol="off,priority,shape+priority:model@overlap,sm-target:-16@overlap"
  local pol3="off,priority,sm-target:-16@overlap"
  if has p; then
    cmp_run p_ddp "$pol" --warmup 5 -- "${prog[@]}" --steps 100 --warmup 3
  fi
  if has q; then
    cmp_run q_ddp_high "off,shape+priority:model@overlap,sm-target:-16@overlap" --warmup 5 -- \
      env TORCH_NCCL_HIGH_PRIORITY=1 "${prog[@]}" --steps 80 --warmup 3
  fi
  if has t; then
    t0=$SECONDS
    CCO_VERBOSE=1 timeout 240 "$cco" tune --candidates "$pol" --out "$O/t_plan.json" -- "${prog[@]}" \
      --steps 400 --warmup 3 \
      >"$O/t_tune.log" 2>&1
    say "== t cco tune -- DDP: rc=$? $((SECONDS - t0)) s"
    tune_steps_summary "$O/t_tune.log" "$O/t_plan.steps"
    python3 -c "import json,sys; p=json.load(open(sys.argv[1])); print('plan policy:', p.get('policy'))" \
      "$O/t_plan.json" 2>&1
  fi
  if has v; then
    t0=$SECONDS
    CCO_VERBOSE=1 timeout 300 "$cco" tune --out "$O/v_plan.json" --steps-out "$O/v_steps" -- "${prog[@]}" --mode fsdp \
      --steps 400 --warmup 3 >"$O/v_tune.log" 2>&1
    say "== v cco tune -- FSDP2: rc=$? $((SECONDS - t0)) s"
    tune_steps_summary "$O/v_tune.log" "$O/v_steps"
  fi
  if has f; then
    cmp_run f_fsdp "off,priority,shape+priority:model@overlap" --warmup 5 -- "${prog[@]}" --mode fsdp \
      --steps 60 --warmup 3
  fi
  if has d; then
    cmp_run d_ddp_default "off,priority" --warmup 5 -- "${prog[@]}" --steps 120 --warmup 3
  fi
  if has e; then
    ESTEPS=${ESTEPS:-60}
    cmp_run e_ddp_check "$pol3" --warmup 5 -v -- "${prog[@]}" --steps "$ESTEPS" --warmup 3
    grep -hE '^# compare (stopped|checked)|^#   the diagnosis|diagnosis of the first steps|compare: ' "$O/e_ddp_check.log" | cut -c1-400 | head -6
    cmp_run e_ddp_full "$pol3" --warmup 5 --no-diagnose -- "${prog[@]}" --steps "$ESTEPS" --warmup 3
    cmp_run e_fsdp_check "off,priority" --warmup 5 -v -- "${prog[@]}" --mode fsdp --steps "$ESTEPS" --warmup 3
    grep -hE '^# compare (stopped|checked)|^#   the diagnosis|diagnosis of the first steps|compare: ' "$O/e_fsdp_check.log" | cut -c1-400 | head -6
  fi
  if has n; then  # the price of communication (issue 43): nocomm checked, then measured
    mkdir -p "$O/n_check"
    timeout 200 "$cco" run --compare off,nocomm --warmup 2 -- torchrun --standalone --nproc-per-node "$G" \
      tests/inject/preload/gpu/nocomm_check.py "$O/n_check" >"$O/n_check.log" 2>&1
    say "== n_check (cco run --compare off,nocomm, real NCCL): rc=$?"
    x=$(python3 tests/inject/preload/gpu/nocomm_check.py --check "$O/n_check" 2>&1) || status=1
    say "$x"
    local NSTEPS=${NSTEPS:-60}
    for rep in 1 2; do  # the program's own pairing, and cco's, twice (A B B A over processes)
      if [ "$rep" = 1 ]; then order="pairs price"; else order="price pairs"; fi
      for c in $order; do
        if [ "$c" = pairs ]; then
          plain "n_pairs_$rep" "${prog[@]}" --pair-nosync --steps "$NSTEPS" --warmup 5
          say "   $(grep -h '^pairs:' "$O/n_pairs_$rep.log" | tail -1)"
        else
          mkdir -p "$O/n_price_$rep.steps"
          cmp_run "n_price_$rep" off,nocomm --warmup 5 --steps-out "$O/n_price_$rep.steps" -- "${prog[@]}" \
            --steps "$NSTEPS" --warmup 5
        fi
      done
    done
    mkdir -p "$O/n_price_fsdp.steps"
    cmp_run n_price_fsdp off,nocomm --warmup 5 --steps-out "$O/n_price_fsdp.steps" -- "${prog[@]}" --mode fsdp \
      --steps "$NSTEPS" --warmup 5
  fi
  if has g; then  # framework controls (issue 44): whole runs A B B A, answers, copies per step
    local GSTEPS=${GSTEPS:-40} fw base
    sums() { grep -ho 'loss_checksum=[^ ]* param_checksum=[^ ]*' "$O/$1.log" | tail -1; }
    for base in ddp fsdp; do
      if [ "$base" = ddp ]; then fw="ddp.bucket_view ddp.bucket_view,ddp.bucket_mb=100"; else fw="fsdp.reshard=off"; fi
      for rep in 1 2; do
        if [ "$rep" = 1 ]; then order="plain $fw"; else order="$(echo "$fw" | tr ' ' '\n' | tac | tr '\n' ' ') plain"; fi
        for c in $order; do
          if [ "$c" = plain ]; then
            plain "g_${base}_plain_$rep" "${prog[@]}" --mode "$base" --steps "$GSTEPS" --warmup 5
          else
            plain "g_${base}_${c//[,=.]/_}_$rep" "$cco" run --framework "$c" -- "${prog[@]}" --mode "$base" \
              --steps "$GSTEPS" --warmup 5
            grep -h '^cco run: framework:' "$O/g_${base}_${c//[,=.]/_}_$rep.log" | head -3
            local want="applied to"  # the hook reached the real module, and DDP says so itself
            [ "$base" = ddp ] && want="ddp_bucket_view=True"
            grep -q "$want" "$O/g_${base}_${c//[,=.]/_}_$rep.log" ||
              { say "   NOT APPLIED: no '$want' in the log of $c"; status=1; }
          fi
        done
      done
      a=$(sums "g_${base}_plain_1")
      for c in $fw; do
        for rep in 1 2; do
          b=$(sums "g_${base}_${c//[,=.]/_}_$rep")
          if [ -n "$a" ] && [ "$a" = "$b" ]; then say "answers: $base $c run $rep identical to plain"
          else say "answers: $base $c run $rep DIFFER or missing: plain '$a' with it '$b'"; status=1; fi
        done
      done
    done
    for c in off ddp.bucket_view; do  # copy kernels per step, from a trace of each
      local fwo=()
      [ "$c" = off ] || fwo=(--framework "$c")
      plain "g_trace_${c//./_}" "$cco" run --policy off "${fwo[@]}" --trace "$O/g_trace_${c//./_}_%r.json" -- \
        "${prog[@]}" --steps 10 --warmup 2
      python3 - "$O/g_trace_${c//./_}_0.json" 12 "$c" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
ev = t["traceEvents"] if isinstance(t, dict) else t
k = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy")]
cp = [e for e in k if "copy" in e.get("name", "").lower() or e.get("cat") == "gpu_memcpy"]
steps = int(sys.argv[2])
print(f"copies ({sys.argv[3]}): {len(cp) / steps:.1f} copy kernels per step, "
      f"{sum(e.get('dur', 0) for e in cp) / steps / 1e3:.3f} ms per step; {len(k) / steps:.1f} kernels per step")
PY
    done
  fi
  if has u; then  # framework controls searched by whole runs (cco tune --framework-candidate)
    t0=$SECONDS
    timeout 540 "$cco" tune --framework-candidate ddp.bucket_view \
      --framework-candidate ddp.bucket_view,ddp.bucket_mb=100 --out "$O/u_plan.json" -- \
      "${prog[@]}" --steps "${USTEPS:-40}" --warmup 3 >"$O/u_tune.log" 2>&1
    x=$?
    [ "$x" = 0 ] || status=1
    say "== u cco tune --framework-candidate (whole runs): rc=$x $((SECONDS - t0)) s"
    grep -E '^(# |candidate |\(none\) |ddp\.|cco tune: run [0-9]+ of [0-9]+: .*median)' "$O/u_tune.log" | cut -c1-200 | tail -16
    python3 -c "import json,sys; p=json.load(open(sys.argv[1])); print('plan:', p.get('policy'), p.get('framework'))" \
      "$O/u_plan.json" 2>&1
  fi
  if has c; then
    cmp_run c_ddp_channels "off,channels:16,channels:8,channels:4" --warmup 5 --stats -- "${prog[@]}" \
      --steps 120 --warmup 3
    grep -E '^cco-(tuner|preload): (stats|warning)' "$O/c_ddp_channels.log" | cut -c1-260 | head -4
  fi
  check() {  # check KIND ARGS: the bound table of issue 32 (docs/results), from the files of s and w
    python3 - "$O" "$@" <<'EOF'
import json, re, statistics, sys
O, kind, args = sys.argv[1], sys.argv[2], sys.argv[3:]
def bounds(path):
    d = json.load(open(path))["diagnosis"]
    b = {}
    for r in d["ranks"]:  # a step is as slow as its slowest rank: the largest bound of any rank
        for k, v in r["typical"]["bounds_ns"].items():
            b[k] = max(b.get(k, 0), v / 1e6)
    return d, b
lever = {"priority": "priority_shaping", "shape": "priority_shaping",
         "sm-target": "sm_budget_channels_copy_engines", "channels": "sm_budget_channels_copy_engines",
         "cta=zero": "sm_budget_channels_copy_engines"}
def lever_of(name):  # the bound groups a row's controls belong to ("+": a row of several)
    found = sorted({v for k, v in lever.items() if k in name})
    return "+".join(found) if found else None
def bound_of(b, lv):  # a row of several kinds of control wins at most the sum of their bounds
    return sum(b[x] for x in lv.split("+"))
if kind == "program":
    rep, cmp_file, log = args
    d, b = bounds(rep)
    print("check %s: %s" % (rep.split("/")[-1], d["sentence"]))
    c = json.load(open(cmp_file))
    for e in c["configs"][1:]:
        v = e.get("vs_first") or {}
        if v.get("lo_ms") is None:
            print("  %-34s no interval" % e["name"]); continue
        gain, noise = -v["median_ms"], (v["hi_ms"] - v["lo_ms"]) / 2
        lv = lever_of(e["name"])
        ok = lv is None or gain <= bound_of(b, lv) + noise
        print("  %-34s measured gain %+7.2f ms (95%% interval %+.2f..%+.2f)  bound %-32s %7.2f ms  %s"
              % (e["name"], gain, -v["hi_ms"], -v["lo_ms"], lv, bound_of(b, lv) if lv else float("nan"),
                 "holds" if ok else "FAILS"))
elif kind == "bench":
    rep, bench = args
    d, b = bounds(rep)
    print("check %s: %s" % (rep.split("/")[-1], d["sentence"]))
    doc = json.load(open(bench))
    # A pair's rows ("results", samples in t.samples_us) or a step's ("rows", time_us.samples).
    rows = [dict(r, samples=r["t"]["samples_us"]) for r in doc["results"]] if "results" in doc \
        else [dict(r, samples=r["time_us"]["samples"]) for r in doc["rows"]]
    base = [r for r in rows if r["label"] == "concurrent"]
    if not base:
        print("  no concurrent row"); sys.exit(0)
    bs = base[0]["samples"]
    for r in rows:
        lv = lever_of(r["label"])
        if r["label"] == "concurrent" or r["mode"] == "seq" or lv is None:
            continue
        diffs = sorted((a - x) / 1e3 for a, x in zip(bs, r["samples"]))
        gain = statistics.median(diffs)
        q = statistics.quantiles(diffs, n=4) if len(diffs) > 3 else [gain, gain, gain]
        noise = (q[2] - q[0]) / 2
        ok = gain <= bound_of(b, lv) + noise
        print("  %-34s measured gain %+7.3f ms (paired by iteration, IQR/2 %.3f)  bound %-32s %7.3f ms  %s"
              % (r["label"], gain, noise, lv, bound_of(b, lv), "holds" if ok else "FAILS"))
elif kind == "steps":  # per-step times against the program's own (CUDA events, max over ranks)
    rep, log = args
    d = json.load(open(rep))["diagnosis"]
    prog = {int(m.group(1)): float(m.group(2)) for m in
            re.finditer(r"^step +(\d+) .*step_ms ([0-9.]+)", open(log).read(), re.M)}
    per = {}
    for r in d["ranks"]:
        for p in r["steps"]:
            per[p["step"]] = max(per.get(p["step"], 0), p["time_ns"] / 1e6)
    errs = [abs(per[k] - prog[k]) / prog[k] for k in per if k in prog]
    adds = all(sum(p[k] for k in ("compute_alone_ns", "compute_slowed_ns", "exposed_rank_wait_ns",
               "exposed_slowed_ns", "exposed_tail_ns", "exposed_dependent_ns", "idle_ns")) == p["time_ns"]
               for r in d["ranks"] for p in r["steps"])
    print("check steps %s: %d steps matched; |trace - program| / program: median %.2f%%, max %.2f%%; parts add up: %s"
          % (rep.split("/")[-1], len(errs), 100 * statistics.median(errs) if errs else float("nan"),
             100 * max(errs) if errs else float("nan"), adds))
EOF
  }

  if has s; then
    local S=${DSTEPS:-20} t1
    local nv=(--nvtx-steps --steps "$S" --warmup 3) alone=()
    plain s_ddp_trace "$cco" run --policy off --trace "$O/s_ddp_%r.json" -- "${prog[@]}" "${nv[@]}"
    plain s_co_trace "$cco" run --policy off --trace "$O/s_co_%r.json" -- "${prog[@]}" --mode compute-only "${nv[@]}"
    plain s_fsdp_trace "$cco" run --policy off --trace "$O/s_fsdp_%r.json" -- "${prog[@]}" --mode fsdp "${nv[@]}"
    for f in "$O"/s_co_*.json; do alone+=(--alone "$f"); done
    for x in ddp fsdp; do
      t0=$(date +%s.%N)
      "$cco" report "$O"/s_"${x}"_[0-9]*.json "${alone[@]}" >"$O/s_${x}_report.txt" 2>&1
      t1=$(date +%s.%N)
      "$cco" report "$O"/s_"${x}"_[0-9]*.json "${alone[@]}" --json="$O/s_${x}_report.json" --format csv \
        >"$O/s_${x}_report.csv" 2>&1
      say "== s report $x: $(python3 -c "print('%.2f' % ($t1 - $t0))") s for the analysis"
      head -4 "$O/s_${x}_report.txt"
      check steps "$O/s_${x}_report.json" "$O/s_${x}_trace.log"
    done
    "$cco" report "$O"/s_co_[0-9]*.json >"$O/s_co_report.txt" 2>&1
    say "ddp vs compute-only (program medians, traced): $(grep -h '^result:' "$O/s_ddp_trace.log" | grep -o 'median_step_ms=[0-9.]*') $(grep -h '^result:' "$O/s_co_trace.log" | grep -o 'median_step_ms=[0-9.]*')"
    cmp_run s_ddp_cmp "off,priority,sm-target:-16@overlap,channels:8" --warmup 5 -- "${prog[@]}" --steps 80 --warmup 3
    cmp_run s_fsdp_cmp "off,priority" --warmup 5 -- "${prog[@]}" --mode fsdp --steps 50 --warmup 3
    check program "$O/s_ddp_report.json" "$O/s_ddp_cmp.json" "$O/s_ddp_cmp.log"
    check program "$O/s_fsdp_report.json" "$O/s_fsdp_cmp.json" "$O/s_fsdp_cmp.log"
    # The raw traces (tens of MB) travel apart from logs.tgz, one file each (the device returns
    # files of at most 16 MiB).
    if [ "${KEEP_TRACES:-1}" = 1 ]; then  # KEEP_TRACES=0: the device returns at most 8 files
      for f in "$O"/s_ddp_[0-9]*.json "$O"/s_co_[0-9]*.json "$O"/s_fsdp_[0-9]*.json; do
        gzip -c "$f" >"$OUTDIR/$(basename "$f").gz"
      done
    fi
    rm -f "$O"/s_*_[0-9]*.json
  fi
  if has y; then  # the twin: the price and its split, both from one traced run
    local YSTEPS=${YSTEPS:-24} tw  # 60 traced steps hang (docs/TRACE.md, "Known problem")
    for x in ${YPROGS:-ddp fsdp}; do  # YPROGS: one of them
      if [ "$x" = ddp ]; then tw=(); else tw=(--mode fsdp); fi
      cmp_run "y_$x" off,nocomm --warmup 5 --trace "$O/y_${x}_%r.json" -- "${prog[@]}" "${tw[@]}" \
        --steps "$YSTEPS" --warmup 5
      grep -E '^#(   the difference| rank [0-9]+ against nocomm| the price in the trace)' "$O/y_$x.log" \
        | cut -c1-400
      local ya=()
      for f in "$O"/y_"${x}"_[0-9]*.json; do [ -e "$f" ] && ya+=(--alone "$f"); done
      if [ "${#ya[@]}" = 0 ]; then
        say "   y_$x: no traces written"
        status=1
        continue
      fi
      "$cco" report "$O"/y_"${x}"_[0-9]*.json --steps config:0 "${ya[@]}" --alone-steps config:1 \
        --json="$O/y_${x}_report.json" >"$O/y_${x}_report.txt" 2>&1 || status=1
      grep -E 'against the alone trace' "$O/y_${x}_report.txt" | cut -c1-400
      if [ "${KEEP_TRACES:-1}" = 1 ]; then
        for f in "$O"/y_"${x}"_[0-9]*.json; do gzip -c "$f" >"$OUTDIR/$(basename "$f").gz"; done
      fi
      rm -f "$O"/y_"${x}"_[0-9]*.json
    done
  fi
  if has h; then
    local HSTEPS=${HSTEPS:-60} HWARM=3 hv
    for hv in ${HVARIANTS:-default nocalls}; do  # HVARIANTS: some of them
      case $hv in default | nocalls | nolatency | kineto) ;; *) say "   h: unknown variant '$hv' (default, nocalls, nolatency, kineto)"; status=1; continue ;; esac
      local henv=() hlog="$O/h_$hv.log" hpid last=0 n=0 stalled=0 t0=$SECONDS limit=220
      [ "$hv" = nocalls ] && henv=(CCO_TRACE_CALLS=0 CCO_NVTX=0)
      [ "$hv" = nolatency ] && henv=(CCO_TRACE_LAUNCH_TIMES=0)
      if [ "$hv" = kineto ]; then  # the control: PyTorch's own CUPTI client, no cco at all
        "${prog[@]}" --steps "$HSTEPS" --warmup "$HWARM" --profile "$O/h_kineto" >"$hlog" 2>&1 &
      else
        env "${henv[@]}" "$cco" run --policy off --trace "$O/h_${hv}_%r.json" -- "${prog[@]}" \
          --steps "$HSTEPS" --warmup "$HWARM" >"$hlog" 2>&1 &
      fi
      hpid=$!
      while kill -0 "$hpid" 2>/dev/null && [ $((SECONDS - t0)) -lt "$limit" ]; do
        sleep 5
        n=$(grep -c '^step' "$hlog" || true)
        [ "$n" -ge $((HSTEPS + HWARM)) ] && limit=480  # every step done: its traces are written
        if [ "$n" != "$last" ]; then last=$n stalled=0; else stalled=$((stalled + 5)); fi
        # Stopped before its last step (after it: writing its traces, which takes a while).
        if [ "$n" -gt 0 ] && [ "$n" -lt $((HSTEPS + HWARM)) ] && [ "$stalled" -ge 30 ]; then
          say "   h_$hv: no step for 30 s after $n step lines: stacks to h_$hv.stacks"
          hang_stacks "$O/h_$hv.stacks"
          kill -TERM -- "$hpid" 2>/dev/null; pkill -TERM -f 'examples/pytorch/ddp_gpt.py' || true
          break
        fi
      done
      if kill -0 "$hpid" 2>/dev/null; then  # still running: no step line ever, or past 220 s
        say "   h_$hv: still running after $((SECONDS - t0)) s: stacks to h_$hv.stacks, stopped"
        hang_stacks "$O/h_$hv.stacks"
        kill -TERM -- "$hpid" 2>/dev/null; pkill -TERM -f 'examples/pytorch/ddp_gpt.py' || true
        sleep 10
        kill -KILL -- "$hpid" 2>/dev/null; pkill -KILL -f 'examples/pytorch/ddp_gpt.py' || true
      fi
      wait "$hpid"
      say "== h_$hv: rc=$? $((SECONDS - t0)) s, $(grep -c '^step' "$hlog") step lines"
      say "   traces written: $(ls -l "$O"/h_"${hv}"_[0-9]*.json "$O"/h_kineto/* 2>/dev/null | awk '{print $5, $NF}' | tr '\n' ' ')"
      rm -rf "$O"/h_"${hv}"_[0-9]*.json "$O/h_kineto"
      sleep 3; pkill -KILL -f 'examples/pytorch/ddp_gpt.py' || true
    done
  fi
  if has l; then
    local L=${LSTEPS:-20} lc
    for lc in untraced calls nocalls nocalls calls untraced; do
      case $lc in
        untraced) plain "l_$lc" "$cco" run --policy off -- "${prog[@]}" --steps "$L" --warmup 3 ;;
        calls) plain "l_$lc" "$cco" run --policy off --trace "$O/l_%r.json" -- "${prog[@]}" --steps "$L" --warmup 3 ;;
        nocalls) CCO_TRACE_CALLS=0 plain "l_$lc" "$cco" run --policy off --trace "$O/l_%r.json" -- "${prog[@]}" --steps "$L" --warmup 3 ;;
      esac
      rm -f "$O"/l_[0-9]*.json
    done
  fi
  if has b; then
    cmp_run b_ddp_trace "off,priority,sm-target:-16@overlap" --warmup 5 --trace "$O/b_%r.json" -- \
      "${prog[@]}" --steps 60 --warmup 3
    grep -E '^(# the steps under|#   |cco: trace)' "$O/b_ddp_trace.log"
    rm -f "$O"/b_[0-9]*.json
  fi
  if has w; then
    wb() {  # wb NAME BENCH-ARGS...: one traced bench run, its diagnosis and the check
      local name=$1
      shift
      timeout 200 "$cco" bench -g "$G" -n 12 -w 3 --trace "$O/w_$name.trace.json" --json "$O/w_$name.json" "$@" \
        >"$O/w_$name.log" 2>&1 || status=1
      "$cco" report "$O/w_$name.trace.json" --steps 'nvtx:concurrent, iteration *' --warmup-steps 3 \
        --alone "$O/w_$name.trace.json" --alone-steps 'nvtx:seq, iteration *' --json="$O/w_$name.report.json" \
        >"$O/w_$name.report.txt" 2>&1 || status=1
      head -4 "$O/w_$name.report.txt"
      check bench "$O/w_$name.report.json" "$O/w_$name.json"
    }
    wb tp --workload examples/workloads/tp_llama7b.json --param layers=2 --modes seq,concurrent,priority \
      --nccl-cta-policy default,zero
    wb membound --compute membound --count 2 --mem-bytes 512M -b 256M -d bfloat16 \
      --modes seq,concurrent,priority,shape+priority --blocks-per-sm 4,5
    wb builtin --compute builtin --gemm 2048 --count 2 -b 256M -d bfloat16 --modes seq,concurrent,priority
  fi
  return "$status"
}

#@ procs
# usage: scripts/gpu.sh procs [ITERS]      (default 30; 2 GPUs)
# Issue 7: two reference pairs in threads mode and one process per GPU (torchrun, --bootstrap
# env), side by side, alternating threads procs threads procs, -c on. Exits 1 when a run failed.
cmd_procs() {
  local iters=${1:-30} status=0 pair name args mode rc
  [[ $iters =~ ^[1-9][0-9]*$ ]] || { echo "scripts/gpu.sh procs: ITERS is a count, not '$iters'" >&2; return 2; }
  for pair in "lt:--gemm 4096 --count 4" "builtin:--compute builtin --gemm 2048 --count 2 --blocks-per-sm 3"; do
    name=${pair%%:*}
    read -ra args <<<"${pair#*:}"
    for mode in threads procs threads2 procs2; do
      echo "== $name $mode"
      if [ "${mode%2}" = threads ]; then
        timeout 120 "$cco" bench -g 2 -b 256M -d bfloat16 -n "$iters" "${args[@]}" --json "$O/${name}_$mode.json" >"$O/${name}_$mode.txt" 2>"$O/${name}_$mode.err"
      else
        timeout 120 torchrun --standalone --nproc-per-node 2 --no-python "$cco" bench -b 256M -d bfloat16 -n "$iters" "${args[@]}" \
          --bootstrap env --bootstrap-timeout 60 --json "$O/${name}_$mode.json" >"$O/${name}_$mode.txt" 2>"$O/${name}_$mode.err"
      fi
      rc=$?
      grep -E "bootstrap|^ +[0-9]+ " "$O/${name}_$mode.txt" | cut -c1-170
      [ "$rc" = 0 ] || { echo "exit $rc: $(tail -3 "$O/${name}_$mode.err")"; status=1; }
    done
  done
  echo "status $status"
  return "$status"
}

#@ steps-procs
# usage: scripts/gpu.sh steps-procs [G] [ITERS]      (defaults 1 and 20)
# Training steps with one process per GPU (issue 17): the shipped DDP and FSDP steps in threads
# mode and under torchrun (--bootstrap env), -c on, alternating threads procs procs threads. On one
# GPU the launcher runs one process (--bootstrap env forces the process path: rendezvous over
# TCP, the report written by rank 0's process). Prints each run's mode lines and its bootstrap.
# Exits 1 when a run failed or a procs run did not run as processes.
cmd_steps_procs() {
  local g=${1:-1} iters=${2:-20} status=0 w mode name rc boot
  [[ $g =~ ^[1-9][0-9]*$ && $iters =~ ^[1-9][0-9]*$ ]] || { echo "scripts/gpu.sh steps-procs: G and ITERS are counts" >&2; return 2; }
  for w in ddp_llama7b fsdp_llama7b; do
    for mode in threads procs procs2 threads2; do
      name=${w}_$mode
      if [ "${mode%2}" = threads ]; then
        timeout 200 "$cco" bench --workload "examples/workloads/$w.json" -g "$g" -n "$iters" -w 3 \
          --json "$O/$name.json" >"$O/$name.txt" 2>"$O/$name.err"
      else
        timeout 200 torchrun --standalone --nproc-per-node "$g" --no-python "$cco" bench \
          --workload "examples/workloads/$w.json" -n "$iters" -w 3 --bootstrap env --bootstrap-timeout 60 \
          --json "$O/$name.json" >"$O/$name.txt" 2>"$O/$name.err"
      fi
      rc=$?
      boot=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1])).get('bootstrap'))" "$O/$name.json" 2>/dev/null)
      echo "$name: exit $rc, bootstrap=$boot, $(grep -E 'Out of bounds' "$O/$name.txt")"
      grep -E '^ +(seq|concurrent|priority|shape)' "$O/$name.txt" | cut -c1-110 | sed "s/^/  /"
      [ "$rc" = 0 ] || { echo "  $(tail -3 "$O/$name.err")"; status=1; }
      if [ "${mode%2}" = procs ] && [ "${boot#env}" = "$boot" ]; then echo "  not run as processes"; status=1; fi
    done
  done
  echo "status $status"
  return "$status"
}

#@ copy-engines
# usage: scripts/gpu.sh copy-engines a|b|b1|b2 [G] [ITERS] [BUDGET]      (defaults 2, 30, 70 s)
# Issue 18 on several GPUs: copy-engine collectives (NCCL's CTA policy zero) against SMs, measured
# and tuned. Every command is bounded, and logs.tgz is written again after each, so a call cut
# short still returns what it ran.
#   a   the 2-GPU tests of the CTA policies (cco.test.gpu_controls), the new reference pairs
#       (cuBLASLt GEMMs || all-gather 256M and || all-to-all 256M, and the all-reduce split), NCCL's
#       own debug output beside the probe's path, the MoE and TP steps with zero-CTA rows and their
#       tuning, cco.test.gpu_step
#   b   cco tune over the whole reference suite (the five all-reduce pairs and the two new ones),
#       BUDGET seconds each, and the geometric mean of the chosen rows' E and E_best
#   b1  the first four pairs of b;  b2  the last three
cmd_copy_engines() {
  local stage=${1:-a}
  case $stage in a | b | b1 | b2) ;; *) echo "usage: scripts/gpu.sh copy-engines a|b|b1|b2 [G] [iters] [budget]" >&2; return 2 ;; esac
  local G=${2:-2} iters=${3:-30} budget=${4:-70} R=$O status=0 t_start p w
  t_start=$(date +%s)
  elapsed() { echo $(($(date +%s) - t_start)); }
  # run NAME LIMIT CMD...: stdout to NAME.txt, stderr to NAME.err, the table shown without metadata
  run() {
    local name=$1 limit=$2 t0 rc
    shift 2
    echo "== [$(elapsed) s] $name: $*"
    t0=$(date +%s)
    timeout "$limit" "$@" >"$R/$name.txt" 2>"$R/$name.err"
    rc=$?
    grep -vE '^# (argv|date|cuda|nccl|cublas|ccoverlap|  ?rank|times|tune: screen)' "$R/$name.txt" | cut -c1-230 | head -60
    echo "-- exit $rc, $(($(date +%s) - t0)) s"
    [ "$rc" = 0 ] || { tail -4 "$R/$name.err"; status=1; }
    save
    return "$rc"
  }

  head -4 "$O/machine.txt"
  grep -E "^GPU[0-9]" "$O/machine.txt"

  local lt=(-g "$G" --gemm 4096 --count 4 -d bfloat16 -n "$iters" -w 5)
  if [ "$stage" = a ]; then
    # The tests whose 2-GPU cases never ran: the CTA policies' paths (zero must be copy-engine,
    # default sm) and the steps' zero-CTA rows.
    run gpu_controls 200 "$B/tests/cco.test.gpu_controls"
    # The new reference pairs: every policy as rows, each probed for where NCCL ran it.
    run pair_allgather256M 150 "$cco" bench "${lt[@]}" -b 256M --collective allgather \
      --nccl-cta-policy default,efficiency,zero --json "$R/pair_allgather256M.json"
    run pair_alltoall256M 150 "$cco" bench "${lt[@]}" -b 256M --collective alltoall \
      --nccl-cta-policy default,efficiency,zero --json "$R/pair_alltoall256M.json"
    run pair_allreduce256M_split 150 "$cco" bench "${lt[@]}" -b 256M --collective allreduce \
      --nccl-cta-policy default,zero --json "$R/pair_allreduce256M_split.json"
    # NCCL's own word on the path: the same all-gather under default and zero, with NCCL's debug
    # output in a file per process. NCCL 2.28 logs no line per call that names the copy engines:
    # "Init CE, rank N" (INIT) comes once per communicator when its first CE call is set up, and
    # on the SM path rank 0 logs "AllGather: N Bytes -> Algo ..." (TUNING) for every call.
    for p in default zero; do
      NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,COLL,TUNING NCCL_DEBUG_FILE="$R/nccl_debug_$p.%h.%p.log" \
        run "ncclcheck_allgather_$p" 90 "$cco" bench -g "$G" --gemm 2048 --count 1 -d bfloat16 -n 3 -w 1 \
        -b 64M --collective allgather --modes seq,concurrent --nccl-cta-policy "$p" \
        --json "$R/ncclcheck_allgather_$p.json"
    done
    for p in default zero; do
      echo "-- NCCL debug, policy $p: $(cat "$R"/nccl_debug_"$p".*.log 2>/dev/null | grep -c 'Init CE, rank') 'Init CE' lines," \
        "$(cat "$R"/nccl_debug_"$p".*.log 2>/dev/null | grep -c 'AllGather: opCount') AllGather calls," \
        "$(cat "$R"/nccl_debug_"$p".*.log 2>/dev/null | grep -cE 'AllGather( \[Symmetric\])?: [0-9]+ Bytes -> ') AllGather tuning lines" \
        | tee -a "$R/nccl_debug_summary.txt"
      cat "$R"/nccl_debug_"$p".*.log 2>/dev/null | grep -E 'Init CE, rank|CTAPolicy|CTA_POLICY' | head -4
    done
    cat "$R"/nccl_debug_*.log 2>/dev/null | gzip >"$R/nccl_debug_logs.gz"
    rm -f "$R"/nccl_debug_*.log
    # The steps: zero-CTA rows beside default ones.
    for w in moe_mixtral tp_llama7b; do
      run "step_$w" 200 "$cco" bench --workload "examples/workloads/$w.json" --param layers=2 -g "$G" -n 20 -w 3 \
        --modes seq,concurrent,priority --nccl-cta-policy default,zero --json "$R/step_$w.json"
    done
    for w in tp_llama7b moe_mixtral; do
      run "wtune_$w" 150 "$cco" tune --workload "examples/workloads/$w.json" --param layers=2 -g "$G" -n 20 \
        --budget 75 --no-cache --plan "$R/wtune_$w.plan.json"
    done
    run gpu_step 240 "$B/tests/cco.test.gpu_step"
  fi

  tune_pair() {  # tune_pair NAME ARGS...
    local name=$1
    shift
    run "tune_$name" $((budget + 60)) "$cco" tune -g "$G" -d bfloat16 -n "$iters" "$@" --budget "$budget" \
      --no-cache --plan "$R/tune_$name.plan.json"
  }
  if [ "$stage" = b ] || [ "$stage" = b1 ]; then
    tune_pair lt4096x4_allgather256M --gemm 4096 --count 4 -b 256M --collective allgather
    tune_pair lt4096x4_alltoall256M --gemm 4096 --count 4 -b 256M --collective alltoall
    tune_pair lt4096x4_ar256M --gemm 4096 --count 4 -b 256M
    tune_pair lt2048x8_ar64M --gemm 2048 --count 8 -b 64M
  fi
  if [ "$stage" = b ] || [ "$stage" = b2 ]; then
    tune_pair lt8192x1_ar1G --gemm 8192 --count 1 -b 1G
    tune_pair builtin2048x2_ar256M --compute builtin --gemm 2048 --count 2 -b 256M
    tune_pair membound_ar256M --compute membound --mem-bytes 512M --count 2 -b 256M
  fi
  if ls "$R"/tune_*.plan.json >/dev/null 2>&1; then
    python3 - "$R"/tune_*.plan.json <<'PY' | tee "$R/tune_geomean_$stage.txt"
import json, math, sys
rows = []
nan = float("nan")
def val(d, k):  # a NaN is written as null
    v = d.get(k)
    return nan if v is None else v
for f in sys.argv[1:]:
    t = json.load(open(f))["tuning"]
    c, a = t["choice"], t.get("applied") or {}
    conc = next((x for x in t["tried"] if x["label"] == "concurrent"), {})
    rows.append((f.split("/")[-1].replace(".plan.json", ""), c, a, conc))
    print(f"{rows[-1][0]:34s} chosen {c['label']:34s} E {val(c, 'efficiency'):.3f} E_best "
          f"{val(c, 'efficiency_best'):.3f} | cco run applies {a.get('label', '-'):24s} "
          f"E_best {val(a, 'efficiency_best'):.3f} | concurrent E_best "
          f"{val(conc, 'efficiency_best'):.3f}")
def gm(xs):
    xs = [x for x in xs if x == x]
    return math.exp(sum(math.log(max(x, 1e-9)) for x in xs) / len(xs)) if xs else float("nan")
print(f"geometric mean over {len(rows)} pairs: E {gm([val(r[1], 'efficiency') for r in rows]):.3f}, "
      f"E_best {gm([val(r[1], 'efficiency_best') for r in rows]):.3f}; "
      f"what cco run applies: E_best {gm([val(r[2], 'efficiency_best') for r in rows]):.3f}; "
      f"concurrent: E_best {gm([val(r[3], 'efficiency_best') for r in rows]):.3f}")
PY
    save
  fi
  echo "overall status $status after $(elapsed) s"
  return "$status"
}

#@ scale
# usage: scripts/gpu.sh scale N [ITERS]      (ITERS default 30; ~6 minutes at N = 4)
# Issue 10: the reference pairs, cco tune on them, two pairs with one process per GPU (torchrun),
# and every shipped step (2 layers) at N GPUs of one host, -c on. Exits 1 when a run failed.
cmd_scale() {
  local N=${1:-} iters=${2:-30} status=0 have START p name args w n
  [[ $N =~ ^[1-9][0-9]*$ ]] || { echo "usage: scripts/gpu.sh scale N [iters]: N is the number of GPUs" >&2; return 2; }
  have=$(nvidia-smi -L | grep -c GPU)
  echo "GPUs: $have (asked for $N)"
  [ "$have" -ge "$N" ] || { echo "fewer than $N GPUs"; return 1; }
  START=$SECONDS
  run() {  # run NAME COMMAND...: output to NAME.txt/.err, the result rows printed
    local name=$1 rc
    shift
    echo "== $name ($((SECONDS - START)) s): $*" | cut -c1-220
    timeout 150 "$@" >"$O/$name.txt" 2>"$O/$name.err"
    rc=$?
    grep -E "bootstrap|^ +[0-9]+ |chosen|T_seq|^ +(seq|concurrent|priority|shape)" "$O/$name.txt" | cut -c1-180 | head -14
    [ "$rc" = 0 ] || { echo "exit $rc: $(tail -2 "$O/$name.err")"; status=1; }
  }
  local P=(
    "lt4096x4_ar256M:--gemm 4096 --count 4 -b 256M -d bfloat16"
    "lt2048x8_ar64M:--gemm 2048 --count 8 -b 64M -d bfloat16"
    "lt8192x1_ar1G:--gemm 8192 --count 1 -b 1G -d bfloat16"
    "builtin2048x2_ar256M:--compute builtin --gemm 2048 --count 2 -b 256M -d bfloat16"
    "membound_ar256M:--compute membound --mem-bytes 512M --count 2 -b 256M -d bfloat16"
  )
  for p in "${P[@]}"; do
    name=${p%%:*}; read -ra args <<<"${p#*:}"
    run "bench_$name" "$cco" bench -g "$N" -n "$iters" -w 3 -c 1 "${args[@]}" --json "$O/bench_$name.json"
  done
  for p in "${P[@]}"; do
    name=${p%%:*}; read -ra args <<<"${p#*:}"
    run "tune_$name" "$cco" tune -g "$N" -n "$iters" "${args[@]}" --no-cache --budget 60 --plan "$O/tune_$name.plan.json"
  done
  # One process per GPU, the first two pairs.
  for p in "${P[@]:0:2}"; do
    name=${p%%:*}; read -ra args <<<"${p#*:}"
    run "procs_$name" torchrun --standalone --nproc-per-node "$N" --no-python "$cco" bench -n "$iters" -w 3 -c 1 "${args[@]}" \
      --bootstrap env --bootstrap-timeout 60 --json "$O/procs_$name.json"
  done
  for w in examples/workloads/*.json; do
    n=$(basename "$w" .json)
    run "step_$n" "$cco" bench --workload "$w" --param layers=2 -g "$N" -n 10 -w 2 -c 1 --blocks-per-sm 4 --json "$O/step_$n.json"
  done
  echo "status $status ($((SECONDS - START)) s)"
  return "$status"
}

# check_stages SUBCOMMAND KNOWN: every asked stage ($stages) is one of KNOWN, or one error line.
check_stages() {
  local s
  for s in $stages; do
    [[ " $2 " == *" $s "* ]] || { echo "scripts/gpu.sh $1: unknown stage '$s' (stages: $2)" >&2; return 2; }
  done
}

# ---- dispatch -----------------------------------------------------------------------------------
sub=${1:-}
case $sub in
  "" | -h | --help | help) usage; exit 0 ;;
esac
if ! [[ $sub =~ ^[a-z-]+$ && " $subcommands " == *" $sub "* ]]; then
  echo "scripts/gpu.sh: unknown subcommand '$sub' (scripts/gpu.sh --help lists them)" >&2
  exit 2
fi
shift
case ${1:-} in -h | --help) subcommand_help "$sub"; exit 0 ;; esac

# ---- the shared set-up --------------------------------------------------------------------------
here=$PWD
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
abs() { case $1 in /*) echo "$1" ;; *) echo "$here/$1" ;; esac; }
if [ -n "${BUILD:-}" ]; then B=$(abs "$BUILD"); else B=$root/build-gpu; fi
cco=$B/src/app/cli/cco
if [ ! -x "$cco" ]; then
  echo "scripts/gpu.sh: no $cco: build, copy it with scripts/stage_gpu.sh and carry build-gpu (or set BUILD)" >&2
  exit 2
fi
# The GPU image's libraries (NCCL and cuBLAS inside PyTorch's environment) and its Python.
for d in /opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib \
         /opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib; do
  if [ -d "$d" ]; then export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi
done
if [ -d /opt/torch/.venv/bin ]; then export PATH="/opt/torch/.venv/bin:$PATH"; fi
export NCCL_NVLS_ENABLE=0  # never NVLink multicast on the shared machines
# Measurements start from no control: each run names its own.
unset CCO_DISABLE CCO_POLICY CCO_PLAN CCO_STATS CCO_VERBOSE CCO_PRIORITY_METHOD TORCH_NCCL_HIGH_PRIORITY
export CCO_PRELOAD_LIB=$B/src/inject/preload/libcco_preload.so CCO_TUNER_LIB=$B/src/inject/nccl_tuner/libcco_tuner.so
export PYTHONUNBUFFERED=1 PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"

# Results: $OUT/SUBCOMMAND (a fresh folder), the logs in a temporary one until packed.
if [ -n "${OUT:-}" ]; then outroot=$(abs "$OUT"); else outroot=$root/out; fi
OUTDIR=$outroot/$sub
n=2
while [ -e "$OUTDIR" ] && [ -n "$(ls -A "$OUTDIR")" ]; do OUTDIR=$outroot/$sub-$n; n=$((n + 1)); done
mkdir -p "$OUTDIR"
O=$(mktemp -d)
save() { tar czf "$OUTDIR/logs.tgz" -C "$O" . 2>/dev/null || true; }  # also mid-run (copy-engines)
trap 'save; rm -rf "$O"' EXIT
say() { echo "$@"; }  # a summary line (everything printed goes to summary.txt)
has() { [[ " $stages " == *" $1 "* ]]; }
stages=""
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv
  nvidia-smi topo -m
  ldd "$cco"
  "$cco" --version
  "$cco" info
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())'
} >"$O/machine.txt" 2>&1 || true

# From here a failing run is recorded (in its log, the summary and the exit status), never fatal.
set +e
{
  say "# gpu.sh $sub $* $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
  "cmd_${sub//-/_}" "$@"
} | tee "$OUTDIR/summary.txt"
rc=${PIPESTATUS[0]}
echo "scripts/gpu.sh $sub: exit $rc; summary.txt and logs.tgz in $OUTDIR" >&2
exit "$rc"
