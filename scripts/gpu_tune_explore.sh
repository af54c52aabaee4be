#!/usr/bin/env bash
# A wide search on the reference pairs (issue 6): finer NCCL CTA counts, finer SM budgets, green
# partitions for every compute kind, to learn what a better default search must contain. Tables
# and plans under $OUT/explore.   BUILD=build-gpu bash scripts/gpu_tune_explore.sh [iters]
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_env.sh
B=${BUILD:-build}
O=${OUT:-out}/explore
mkdir -p "$O"
cco=$PWD/$B/src/cli/cco
n=${1:-20}
C=(--ctas -1,4,8,12,16,24,32,48)
G=(--green-sms 64,80,96,104,112,120)
t() {
  local name=$1; shift
  local t0=$(date +%s)
  timeout 200 "$cco" tune "$@" --no-cache --top 10 --budget 190 --plan "$O/$name.plan.json" >"$O/$name.txt" 2>"$O/$name.err"
  echo "== $name rc=$? $(( $(date +%s) - t0 ))s: cco tune $*" | tee -a "$O/summary.txt"
  head -8 "$O/$name.txt" | tee -a "$O/summary.txt"
}
t lt4096x4 -g 2 --gemm 4096 --count 4 -b 256M -d bfloat16 -n "$n" "${C[@]}" --sm-budgets 0,60,68,76,84,88,92,96,100,108 "${G[@]}"
t lt2048x8 -g 2 --gemm 2048 --count 8 -b 64M -d bfloat16 -n "$n" "${C[@]}" --sm-budgets 0,52,60,68,76,84,92,100,108 "${G[@]}"
t lt8192x1 -g 2 --gemm 8192 --count 1 -b 1G -d bfloat16 -n "$n" "${C[@]}" --sm-budgets 0,60,68,72,76,80,84,92,100 "${G[@]}"
t builtin -g 2 --compute builtin --gemm 2048 --count 2 -b 256M -d bfloat16 -n "$n" "${C[@]}" "${G[@]}"
t membound -g 2 --compute membound --mem-bytes 512M --count 2 -b 256M -d bfloat16 -n "$n" "${C[@]}" "${G[@]}"
