#!/usr/bin/env bash
# Buffer registration as a control, and the contention behind the overlap efficiency (issue 6):
# the registration test, each reference pair benched with none/buffer/window buffers, the tuning
# suite (whose neighbour round now tries registrations), and GPU clocks/power sampled throughout.
# Usage: BUILD=build-gpu scripts/gpu_register.sh [all|tune] [iters] [tuning repetitions].
# NGPUS=N sets -g (default 2). all: everything above once; tune: the GPU tests of tune and controls, then the tuning suite
# repeated. Writes $OUT/run and $OUT/results.tgz.
set -u
ng=${NGPUS:-2}  # GPUs per run (-g)
stage=${1:-all}
iters=${2:-30}
reps=${3:-1}
B=${BUILD:-build}
O=${OUT:-out}
R=$O/run
mkdir -p "$R"
. "$(dirname "$0")/gpu_env.sh"
cco=$B/src/cli/cco
status=0
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv
  "$cco" --version
} >"$R/machine.txt" 2>&1
cat "$R/machine.txt"
# Clocks, power and throttle reasons every 100 ms, to line up with the timestamps printed below.
nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv -lms 100 >"$R/smi.csv" 2>&1 &
smi=$!
stamp() { echo "@ $(date -u +%H:%M:%S.%N | cut -c1-12) $*"; }

for t in gpu_controls gpu_tune; do
  [ "$t" = gpu_tune ] && [ "$stage" = all ] && continue
  stamp "test $t"
  timeout 250 "$B"/tests/cco.test.$t >"$R/cco.test.$t.log" 2>&1 || status=1
  grep -E "^\[  (PASSED|FAILED)|: ncc|GEMM grids|Failure" "$R/cco.test.$t.log" | cut -c1-220
done

pairs=(
  "lt4096x4_ar256M|--gemm 4096 --count 4 -b 256M"
  "lt2048x8_ar64M|--gemm 2048 --count 8 -b 64M"
  "lt8192x1_ar1G|--gemm 8192 --count 1 -b 1G"
  "builtin2048x2_ar256M|--compute builtin --gemm 2048 --count 2 -b 256M --blocks-per-sm 3"
  "membound_ar256M|--compute membound --mem-bytes 512M --count 2 -b 256M --blocks-per-sm 4"
)
for p in "${pairs[@]}"; do
  [ "$stage" = all ] || break
  name=${p%%|*}
  args=${p#*|}
  for reg in none window buffer; do
    stamp "bench $name reg=$reg"
    timeout 300 "$cco" bench -g "$ng" -d bfloat16 $args -n "$iters" -w 5 --nccl-register $reg \
      --json "$R/reg_${name}_$reg.json" >"$R/reg_${name}_$reg.txt" 2>"$R/reg_${name}_$reg.err" ||
      { echo "exit $?: $(tail -2 "$R/reg_${name}_$reg.err")"; status=1; }
    grep -E "^ +[0-9]" "$R/reg_${name}_$reg.txt" | cut -c1-200
  done
done

for rep in $(seq 1 "$reps"); do
for p in "${pairs[@]}"; do
  name=${p%%|*}
  args=${p#*|}
  args=${args% --blocks-per-sm*}
  [ "$reps" = 1 ] || name="${name}_$rep"
  stamp "tune $name"
  t0=$(date +%s)
  timeout 150 "$cco" tune -g "$ng" -d bfloat16 $args -n "$iters" --no-cache --plan "$R/tune_$name.plan.json" \
    >"$R/tune_$name.txt" 2>"$R/tune_$name.err" || { echo "exit $?: $(tail -2 "$R/tune_$name.err")"; status=1; }
  cat "$R/tune_$name.txt"
  grep -E "round|screened" "$R/tune_$name.err"
  echo "# wall time $(( $(date +%s) - t0 )) s"
done
done
# The geometric mean of the chosen plans' efficiencies, per repetition.
python3 - "$R" <<'PY'
import glob, json, math, re, sys
by_rep = {}
for f in sorted(glob.glob(sys.argv[1] + "/tune_*.plan.json")):
    m = re.search(r"_(\d+)\.plan\.json$", f)
    rep = m.group(1) if m else "1"
    c = json.load(open(f))["tuning"]["choice"]
    by_rep.setdefault(rep, []).append((f.split("/")[-1], c["efficiency"], c["label"]))
for rep, xs in sorted(by_rep.items()):
    g = math.exp(sum(math.log(max(e, 1e-9)) for _, e, _ in xs) / len(xs))
    print(f"repetition {rep}: geomean efficiency {g:.3f} over {len(xs)} pairs: " +
          ", ".join(f"{n.replace('tune_', '').split('.')[0]} {e:.2f} ({l})" for n, e, l in xs))
PY
stamp "end"
kill $smi 2>/dev/null
tar czf "$O/results.tgz" -C "$O" run
exit $status
