#!/usr/bin/env bash
# Issue 7 on a GPU machine: the same workloads in threads mode and one process per GPU
# (torchrun), side by side, -c on. Writes $OUT/procs/. Usage: scripts/gpu_procs.sh [iters]
set -u
iters=${1:-30}
B=${BUILD:-build}
O=${OUT:-out}/procs
mkdir -p "$O"
. "$(dirname "$0")/gpu_env.sh"
cco=$(pwd)/$B/src/cli/cco
status=0
for pair in "lt:--gemm 4096 --count 4" "builtin:--compute builtin --gemm 2048 --count 2 --blocks-per-sm 3"; do
  name=${pair%%:*}
  args=${pair#*:}
  for mode in threads procs threads2 procs2; do
    echo "== $name $mode"
    if [ "${mode%2}" = threads ]; then
      timeout 120 "$cco" bench -g 2 -b 256M -d bfloat16 -n "$iters" $args --json "$O/${name}_$mode.json" >"$O/${name}_$mode.txt" 2>"$O/${name}_$mode.err"
    else
      timeout 120 torchrun --standalone --nproc-per-node 2 --no-python "$cco" bench -b 256M -d bfloat16 -n "$iters" $args \
        --bootstrap env --bootstrap-timeout 60 --json "$O/${name}_$mode.json" >"$O/${name}_$mode.txt" 2>"$O/${name}_$mode.err"
    fi
    rc=$?
    grep -E "bootstrap|^ +[0-9]+ " "$O/${name}_$mode.txt" | cut -c1-170
    [ $rc = 0 ] || { echo "exit $rc: $(tail -3 "$O/${name}_$mode.err")"; status=1; }
  done
done
echo "status $status"
exit $status
