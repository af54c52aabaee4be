#!/usr/bin/env bash
# Issue 18 on several GPUs: copy-engine collectives (NCCL's CTA policy zero) against SMs, measured
# and tuned. Stage `a`: the 2-GPU tests of the CTA policies, the new reference pairs (cuBLASLt
# GEMMs || all-gather 256M and || all-to-all 256M, and the all-reduce split), NCCL's own debug
# output beside the probe's path, the MoE and TP steps with zero-CTA rows, and their tuning.
# Stage `b`: `cco tune` over the whole reference suite (the five all-reduce pairs and the two new
# ones) and the geometric mean of the chosen rows' E and E_best. Each command is bounded; the
# results are packed into $OUT/ce.tgz after every command, so a call cut short still returns what
# it ran. Usage: scripts/gpu_copy_engines.sh a|b|b1|b2 [G] [iters] [tune budget s] (b1 and b2:
# the first four and the last three pairs of b)
set -u
cd "$(dirname "$0")/.."
stage=${1:-a}
case $stage in a | b | b1 | b2) ;; *) echo "usage: scripts/gpu_copy_engines.sh a|b|b1|b2 [G] [iters] [budget]" >&2; exit 2 ;; esac
G=${2:-2}
iters=${3:-30}
budget=${4:-70}
B=${BUILD:-build}
O=${OUT:-out}
R=$O/ce
mkdir -p "$R"
. "$(dirname "$0")/gpu_env.sh"
cco=$B/src/cli/cco
status=0
t_start=$(date +%s)
pack() { tar czf "$O/ce_$stage.tgz" -C "$O" ce 2>/dev/null; }
elapsed() { echo $(( $(date +%s) - t_start )); }
# run NAME LIMIT CMD...: stdout to NAME.txt, stderr to NAME.err, the table shown without metadata
run() {
  local name=$1 limit=$2
  shift 2
  echo "== [$(elapsed) s] $name: $*"
  local t0=$(date +%s)
  timeout "$limit" "$@" >"$R/$name.txt" 2>"$R/$name.err"
  local rc=$?
  grep -vE '^# (argv|date|cuda|nccl|cublas|ccoverlap|  ?rank|times|tune: screen)' "$R/$name.txt" | cut -c1-230 | head -60
  echo "-- exit $rc, $(( $(date +%s) - t0 )) s"
  [ $rc = 0 ] || { tail -4 "$R/$name.err"; status=1; }
  pack
  return $rc
}

{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,clocks.max.sm,memory.total --format=csv
  nvidia-smi topo -m
  "$cco" info
} >"$R/machine_$stage.txt" 2>&1
head -4 "$R/machine_$stage.txt"
grep -E "^GPU[0-9]" "$R/machine_$stage.txt"

lt="-g $G --gemm 4096 --count 4 -d bfloat16 -n $iters -w 5"
if [ "$stage" = a ]; then
  # The tests whose 2-GPU cases never ran: the CTA policies' paths (zero must be copy-engine,
  # default sm) and the steps' zero-CTA rows.
  run gpu_controls 200 "$B/tests/cco.test.gpu_controls"
  # The new reference pairs: every policy as rows, each probed for where NCCL ran it.
  run pair_allgather256M 150 "$cco" bench $lt -b 256M --collective allgather \
    --nccl-cta-policy default,efficiency,zero --json "$R/pair_allgather256M.json"
  run pair_alltoall256M 150 "$cco" bench $lt -b 256M --collective alltoall \
    --nccl-cta-policy default,efficiency,zero --json "$R/pair_alltoall256M.json"
  run pair_allreduce256M_split 150 "$cco" bench $lt -b 256M --collective allreduce \
    --nccl-cta-policy default,zero --json "$R/pair_allreduce256M_split.json"
  # NCCL's own word on the path: the same all-gather under default and zero, with NCCL's debug
  # output in a file per process. NCCL 2.28 logs no line per call that names the copy engines:
  # "Init CE, rank N" (INIT) comes once per communicator when its first CE call is set up, and on
  # the SM path rank 0 logs "AllGather: N Bytes -> Algo ..." (TUNING) for every call.
  for p in default zero; do
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,COLL,TUNING NCCL_DEBUG_FILE="$R/nccl_debug_$p.%h.%p.log" \
      run "ncclcheck_allgather_$p" 90 "$cco" bench -g "$G" --gemm 2048 --count 1 -d bfloat16 -n 3 -w 1 \
      -b 64M --collective allgather --modes seq,concurrent --nccl-cta-policy "$p" \
      --json "$R/ncclcheck_allgather_$p.json"
  done
  for p in default zero; do
    echo "-- NCCL debug, policy $p: $(cat "$R"/nccl_debug_$p.*.log 2>/dev/null | grep -c 'Init CE, rank') 'Init CE' lines," \
      "$(cat "$R"/nccl_debug_$p.*.log 2>/dev/null | grep -c 'AllGather: opCount') AllGather calls," \
      "$(cat "$R"/nccl_debug_$p.*.log 2>/dev/null | grep -cE 'AllGather( \[Symmetric\])?: [0-9]+ Bytes -> ') AllGather tuning lines" \
      | tee -a "$R/nccl_debug_summary.txt"
    cat "$R"/nccl_debug_$p.*.log 2>/dev/null | grep -E 'Init CE, rank|CTAPolicy|CTA_POLICY' | head -4
  done
  cat "$R"/nccl_debug_*.log 2>/dev/null | gzip >"$R/nccl_debug_logs.gz"
  rm -f "$R"/nccl_debug_*.log
  # The steps: zero-CTA rows beside default ones.
  for w in moe_mixtral tp_llama7b; do
    run "step_$w" 200 "$cco" bench --workload "workloads/$w.json" --param layers=2 -g "$G" -n 20 -w 3 \
      --modes seq,concurrent,priority --nccl-cta-policy default,zero --json "$R/step_$w.json"
  done
  for w in tp_llama7b moe_mixtral; do
    run "wtune_$w" 150 "$cco" tune --workload "workloads/$w.json" --param layers=2 -g "$G" -n 20 \
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
  pack
fi
echo "overall status $status after $(elapsed) s"
exit $status
