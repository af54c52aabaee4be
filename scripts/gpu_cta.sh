#!/usr/bin/env bash
# NCCL's CTA policies as rows of cco bench and cco tune (issue 18), on whatever GPUs the machine
# has: the refusals, the path probe, the new collectives' answers, and a short tuning run.
# Writes under $OUT (default ./out). Usage: scripts/gpu_cta.sh [G] [iters]
set -u
G=${1:-1}
iters=${2:-20}
B=${BUILD:-build}
O=${OUT:-out}
R=$O/cta
mkdir -p "$R"
. "$(dirname "$0")/gpu_env.sh"
cco=$B/src/cli/cco
status=0
one() {  # one NAME ARGS...: a cco command, its stdout to NAME.txt, stderr to NAME.err
  local name=$1
  shift
  echo "== $name: cco $*"
  timeout 300 "$cco" "$@" >"$R/$name.txt" 2>"$R/$name.err"
  local rc=$?
  grep -vE '^# (argv|date|cuda|nccl|cublas|ccoverlap|  ?rank|times)' "$R/$name.txt" | cut -c1-220
  echo "exit $rc"; [ $rc = 0 ] || tail -3 "$R/$name.err"
  return $rc
}
pair="-g $G --compute builtin --gemm 2048 --count 2 -b 64M -d bfloat16 -n $iters -w 3"
for c in allgather alltoall gather scatter; do
  one "bench_$c" bench $pair --collective $c --nccl-cta-policy default,efficiency,zero --json "$R/bench_$c.json" || status=1
done
one bench_allreduce bench $pair --nccl-cta-policy default,zero --json "$R/bench_allreduce.json" || status=1
one bench_allreduce_zero bench $pair --nccl-cta-policy zero; [ $? = 2 ] || status=1
one tune_allgather tune -g $G --compute builtin --gemm 2048 --count 2 -b 64M -d bfloat16 \
  --collective allgather --no-cache --budget 90 --plan "$R/tune_allgather.plan.json" || status=1
exit $status
