#!/usr/bin/env bash
# cco tune with one process per GPU (torchrun) next to threads mode, on a small pair.
set -u
B=${BUILD:-build}
. "$(dirname "$0")/gpu_env.sh"
cco=$(pwd)/$B/src/cli/cco
O=${OUT:-out}
args="-b 256M -d bfloat16 --compute builtin --gemm 2048 --count 2 -n 20 --no-cache"
echo "== threads"; timeout 150 "$cco" tune -g 2 $args --plan "$O/tune_threads.json" 2>&1 | tail -14; echo "exit ${PIPESTATUS[0]}"
echo "== torchrun, one process per GPU"
timeout 150 torchrun --standalone --nproc-per-node 2 --no-python "$cco" tune --bootstrap env $args --plan "$O/tune_procs.json" 2>&1 | tail -16
echo "exit ${PIPESTATUS[0]}"
ls -la "$O"
