#!/usr/bin/env bash
# Issue 10: the reference pairs, the training steps and cco tune at N GPUs of one host, in threads
# mode and one process per GPU (torchrun), -c on. Writes $OUT/scaleN/ and $OUT/scaleN.tgz.
#   BUILD=build-gpu bash scripts/gpu_scale.sh N [iters]      (~6 minutes at N = 4)
set -u
N=${1:?number of GPUs}
iters=${2:-30}
B=${BUILD:-build}
O=${OUT:-out}/scale$N
mkdir -p "$O"
. "$(dirname "$0")/gpu_env.sh"
[ -d /opt/torch/.venv/bin ] && export PATH="/opt/torch/.venv/bin:$PATH"
cco=$(pwd)/$B/src/cli/cco
status=0
have=$(nvidia-smi -L | grep -c GPU)
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi -L; nvidia-smi topo -m; "$cco" info; } >"$O/machine.txt" 2>&1
echo "GPUs: $have (asked for $N)"
[ "$have" -ge "$N" ] || { echo "fewer than $N GPUs"; exit 1; }
START=$SECONDS
run() {  # run NAME COMMAND...: output to NAME.txt/.err, the result rows printed
  local name=$1; shift
  echo "== $name ($((SECONDS - START)) s): $*" | cut -c1-220
  timeout 150 "$@" >"$O/$name.txt" 2>"$O/$name.err"
  local rc=$?
  grep -E "bootstrap|^ +[0-9]+ |chosen|T_seq|^ +(seq|concurrent|priority|shape)" "$O/$name.txt" | cut -c1-180 | head -14
  [ $rc = 0 ] || { echo "exit $rc: $(tail -2 "$O/$name.err")"; status=1; }
}
P=(
  "lt4096x4_ar256M:--gemm 4096 --count 4 -b 256M -d bfloat16"
  "lt2048x8_ar64M:--gemm 2048 --count 8 -b 64M -d bfloat16"
  "lt8192x1_ar1G:--gemm 8192 --count 1 -b 1G -d bfloat16"
  "builtin2048x2_ar256M:--compute builtin --gemm 2048 --count 2 -b 256M -d bfloat16"
  "membound_ar256M:--compute membound --mem-bytes 512M --count 2 -b 256M -d bfloat16"
)
for p in "${P[@]}"; do
  name=${p%%:*}; args=${p#*:}
  run "bench_$name" "$cco" bench -g "$N" -n "$iters" -w 3 -c 1 $args --json "$O/bench_$name.json"
done
for p in "${P[@]}"; do
  name=${p%%:*}; args=${p#*:}
  run "tune_$name" "$cco" tune -g "$N" -n "$iters" $args --no-cache --budget 60 --plan "$O/tune_$name.plan.json"
done
# One process per GPU, the first two pairs.
for p in "${P[@]:0:2}"; do
  name=${p%%:*}; args=${p#*:}
  run "procs_$name" torchrun --standalone --nproc-per-node "$N" --no-python "$cco" bench -n "$iters" -w 3 -c 1 $args \
    --bootstrap env --bootstrap-timeout 60 --json "$O/procs_$name.json"
done
for w in workloads/*.json; do
  n=$(basename "$w" .json)
  run "step_$n" "$cco" bench --workload "$w" --param layers=2 -g "$N" -n 10 -w 2 -c 1 --blocks-per-sm 4 --json "$O/step_$n.json"
done
echo "status $status ($((SECONDS - START)) s)"
tar czf "$O.tgz" -C "$(dirname "$O")" "$(basename "$O")"
exit $status
