#!/usr/bin/env bash
# Runs the GPU tests and the reference benchmarks on a GPU machine, from a build made elsewhere
# (docs/TESTING.md). Writes everything under $OUT (default ./out) and packs it into
# $OUT/results.tgz. Usage: scripts/gpu_run.sh [tests|bench|tune|steps|suite|trace|wtune|ddp|ddpplan|all] [iters]
set -u
stage=${1:-all}
iters=${2:-50}
B=${BUILD:-build}
O=${OUT:-out}
R=$O/run
mkdir -p "$R"
. "$(dirname "$0")/gpu_env.sh"
cco=$B/src/cli/cco
status=0

{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv
  nvidia-smi topo -m
  ldd "$cco"
  "$cco" --version
  "$cco" info
} >"$R/machine.txt" 2>&1
cat "$R/machine.txt" | head -30

if [ "$stage" = tests ] || [ "$stage" = all ]; then
  for t in "$B"/tests/cco.test.gpu_*; do
    n=$(basename "$t")
    timeout 300 "$t" >"$R/$n.log" 2>&1
    rc=$?
    echo "$n: exit $rc ($(grep -E '^\[  (PASSED|FAILED)|^GPU tests:|^SKIPPED' "$R/$n.log" | tr '\n' ' '))"
    grep -E "occupancy: .* footprints|FAILED|Failure" "$R/$n.log" | head -20
    # 77: every test skipped (e.g. a 2-GPU binary on one GPU) -- reported, not a failure.
    [ $rc = 0 ] || [ $rc = 77 ] || status=1
  done
  CCO_BIN=$cco timeout 300 bash tests/cli/test_cli.sh >"$R/cli.log" 2>&1 || status=1
  tail -3 "$R/cli.log"
fi

bench() {  # bench NAME ARGS...: one reference run, table to NAME.txt, samples to NAME.json
  local name=$1
  shift
  echo "== $name: cco bench $*"
  timeout 500 "$cco" bench -n "$iters" -w 5 "$@" --json "$R/$name.json" >"$R/$name.txt" 2>"$R/$name.err"
  local rc=$?
  grep -vE '^# (argv|date|cuda|nccl|cublas|ccoverlap|  ?rank|times)' "$R/$name.txt" | cut -c1-200
  [ $rc = 0 ] || { echo "exit $rc: $(tail -2 "$R/$name.err")"; status=1; }
}

if [ "$stage" = bench ] || [ "$stage" = all ]; then
  # The reference pairs (docs/METRICS.md, README), then two extensions; the first two repeat at the end to
  # show run-to-run spread.
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

tune() {  # tune NAME ARGS...: one tuning run, its table and plan
  local name=$1
  shift
  echo "== $name: cco tune $*"
  local t0=$(date +%s)
  timeout 120 "$cco" tune "$@" --no-cache --plan "$R/$name.plan.json" >"$R/$name.txt" 2>"$R/$name.err"
  local rc=$?
  cat "$R/$name.txt"
  echo "# wall time $(( $(date +%s) - t0 )) s"
  [ $rc = 0 ] || { echo "exit $rc: $(tail -2 "$R/$name.err")"; status=1; }
}

if [ "$stage" = steps ] || [ "$stage" = suite ]; then
  for w in workloads/*.json; do
    n=$(basename "$w" .json)
    echo "== step $n: cco bench --workload $w -g 2 -n $iters"
    timeout 90 "$cco" bench --workload "$w" -g 2 -n "$iters" -w 3 --blocks-per-sm 2,4,6 \
      --json "$R/step_$n.json" >"$R/step_$n.txt" 2>"$R/step_$n.err"
    rc=$?
    cut -c1-180 "$R/step_$n.txt" | grep -vE '^# (argv|date|cuda|nccl|cublas|ccoverlap|  ?rank)'
    [ $rc = 0 ] || { echo "exit $rc: $(tail -3 "$R/step_$n.err")"; status=1; }
  done
fi

if [ "$stage" = suite ]; then
  for t in "$B"/tests/cco.test.gpu_*; do
    n=$(basename "$t")
    timeout 300 "$t" >"$R/$n.log" 2>&1
    rc=$?
    echo "$n: exit $rc ($(grep -E '^\[  (PASSED|FAILED)' "$R/$n.log" | tr '\n' ' '))"
    grep -E "FAILED|Failure|occupancy: .* footprints" "$R/$n.log" | head -8
    [ $rc = 0 ] || [ $rc = 77 ] || status=1
  done
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
  timeout 150 "$B"/tests/cco.test.gpu_trace >"$R/cco.test.gpu_trace.log" 2>&1 || status=1
  echo "cco.test.gpu_trace: $(grep -E '^\[  (PASSED|FAILED)' "$R/cco.test.gpu_trace.log" | tr '\n' ' ')"
  for pair in "lt:--gemm 4096 --count 4" "builtin:--compute builtin --gemm 2048 --count 2 --blocks-per-sm 3"; do
    name=${pair%%:*}
    args=${pair#*:}
    for rep in 1 2; do
      bench "trace_${name}_off_$rep" -g 2 -b 256M -d bfloat16 $args
      bench "trace_${name}_on_$rep" -g 2 -b 256M -d bfloat16 $args --trace "$R/trace_${name}_$rep.json"
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
      "$cco" report "$R/trace_${name}_1.json" --from ${win% *} --to ${win#* } --title "$name: $row" \
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

wtune() {  # wtune NAME ARGS...: one workload tuning run
  local name=$1
  shift
  echo "== $name: cco tune $*"
  local t0=$(date +%s)
  timeout 150 "$cco" tune "$@" --no-cache --plan "$R/$name.plan.json" >"$R/$name.txt" 2>"$R/$name.err"
  local rc=$?
  cat "$R/$name.txt" | head -30
  echo "# wall time $(( $(date +%s) - t0 )) s"
  [ $rc = 0 ] || { echo "exit $rc: $(tail -2 "$R/$name.err")"; status=1; }
}

if [ "$stage" = wtune ]; then
  # cco tune --workload on every shipped workload (2 layers, to fit a call), then a workload shaped
  # like scripts/ddp_gpt.py (16 GPT layers of width 1024, 8 x 512 tokens, fp32 gradients in 25 MB
  # buckets) for the comparison with the real PyTorch DDP run (stage ddp).
  for w in workloads/*.json; do
    n=$(basename "$w" .json)
    wtune "wtune_$n" --workload "$w" --param layers=2 -g 2 -n "$iters" --budget 60
  done
  wtune wtune_ddp_gpt_like --workload workloads/ddp_llama7b.json --param layers=16 --param hidden=1024 \
    --param ffn=2048 --param micro_batch=8 --param seq_len=512 --param grad_dtype=float -g 2 -n "$iters" --budget 60
fi

if [ "$stage" = ddp ]; then
  # The real PyTorch DDP run traced by the library: overlap as cco report measures it.
  export PATH="/opt/torch/.venv/bin:$PATH" OMP_NUM_THREADS=4
  for mode in ddp compute-only comm-only; do
    timeout 150 torchrun --nproc-per-node 2 scripts/ddp_gpt.py --steps 15 --warmup 3 --mode $mode \
      >"$R/ddp_$mode.log" 2>&1 || status=1
    grep "result:" "$R/ddp_$mode.log"
  done
  timeout 200 "$cco" run --trace "$R/ddp_trace_%r.json" --policy off -- torchrun --nproc-per-node 2 \
    scripts/ddp_gpt.py --steps 6 --warmup 2 >"$R/ddp_traced.log" 2>&1 || { status=1; tail -3 "$R/ddp_traced.log"; }
  grep -E "result:|cco-preload: (trace|warning)" "$R/ddp_traced.log"
  ls "$R"/ddp_trace_*.json && "$cco" report "$R"/ddp_trace_*.json >"$R/ddp_report.txt" 2>&1 || status=1
  head -40 "$R/ddp_report.txt"
  "$cco" report "$R"/ddp_trace_*.json --json >"$R/ddp_report.json" 2>/dev/null
fi

if [ "$stage" = ddpplan ]; then
  # PyTorch DDP plainly and under the plan cco tune --workload chose for the matching workload
  # (docs/results/2026-11-22-h200x2-fixes.md), alternating, twice each: step times, and the loss
  # and weight checksums, which must be identical.
  export PATH="/opt/torch/.venv/bin:$PATH" OMP_NUM_THREADS=4
  plan=${DDP_PLAN:-docs/results/2026-11-22-h200x2-fixes/wtune_ddp_gpt_like.plan.json}
  for rep in 1 2; do
    timeout 150 torchrun --nproc-per-node 2 scripts/ddp_gpt.py --steps 15 --warmup 3 \
      >"$R/ddpplan_plain_$rep.log" 2>&1 || status=1
    echo "plain $rep: $(grep result: "$R/ddpplan_plain_$rep.log")"
    timeout 150 "$cco" run --plan "$plan" --stats -- torchrun --nproc-per-node 2 scripts/ddp_gpt.py \
      --steps 15 --warmup 3 >"$R/ddpplan_plan_$rep.log" 2>&1 || status=1
    echo "plan  $rep: $(grep result: "$R/ddpplan_plan_$rep.log")"
    grep -m2 "cco-preload: \(stats\|warning\)" "$R/ddpplan_plan_$rep.log"
  done
fi

tar czf "$O/results.tgz" -C "$O" run
echo "overall status $status"
exit $status
