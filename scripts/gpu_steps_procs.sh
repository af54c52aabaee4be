#!/usr/bin/env bash
# Training steps with one process per GPU (issue 17): the same shipped step in threads mode and
# under torchrun (--bootstrap env), -c on, alternating threads procs procs threads. On one GPU the
# launcher runs one process (--bootstrap env forces the process path: rendezvous over TCP, the
# report written by rank 0's process). Prints each run's mode lines and its bootstrap; logs under
# $OUT/steps_procs. Usage: BUILD=build-gpu scripts/gpu_steps_procs.sh [G] [iters]
set -uo pipefail
cd "$(dirname "$0")/.."
g=${1:-1}
iters=${2:-20}
B=${BUILD:-build}
O=${OUT:-out}/steps_procs
mkdir -p "$O"
. scripts/gpu_env.sh
cco=$(pwd)/$B/src/cli/cco
status=0
for w in ddp_llama7b fsdp_llama7b; do
  for mode in threads procs procs2 threads2; do
    name=${w}_$mode
    if [ "${mode%2}" = threads ]; then
      timeout 200 "$cco" bench --workload "workloads/$w.json" -g "$g" -n "$iters" -w 3 \
        --json "$O/$name.json" >"$O/$name.txt" 2>"$O/$name.err"
    else
      timeout 200 torchrun --standalone --nproc-per-node "$g" --no-python "$cco" bench \
        --workload "workloads/$w.json" -n "$iters" -w 3 --bootstrap env --bootstrap-timeout 60 \
        --json "$O/$name.json" >"$O/$name.txt" 2>"$O/$name.err"
    fi
    rc=$?
    boot=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1])).get('bootstrap'))" "$O/$name.json" 2>/dev/null)
    echo "$name: exit $rc, bootstrap=$boot, $(grep -E 'Out of bounds' "$O/$name.txt")"
    grep -E '^ +(seq|concurrent|priority|shape)' "$O/$name.txt" | cut -c1-110 | sed "s/^/  /"
    [ $rc = 0 ] || { echo "  $(tail -3 "$O/$name.err")"; status=1; }
    [ "${mode%2}" = procs ] && [ "${boot#env}" = "$boot" ] && { echo "  not run as processes"; status=1; }
  done
done
echo "status $status"
exit $status
