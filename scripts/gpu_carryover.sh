#!/usr/bin/env bash
# Does the step after a slow configuration look faster? DDP GPT with one rank (NCCL launches no
# kernel: priority cannot act), compared in one process: off,priority alone (A B B A is balanced
# for two), then with shape:1 (2.3x slower) placed so that priority follows it in every reverse
# round, then placed so that off does. Usage: BUILD=build-gpu scripts/gpu_carryover.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_env.sh
source scripts/gpu_logs.sh
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
stages=all
ddp=(torchrun --standalone --nproc-per-node 1 scripts/ddp_gpt.py --layers 8 --d-model 1024
     --steps 240 --warmup 3)
say "# gpu_carryover $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
for items in off,priority off,priority,shape:1 priority,off,shape:1; do
  name=${items//[^a-z0-9]/_}
  timeout 200 "$cco" run --compare "$items" --warmup 5 --steps-out "$O/$name" -- "${ddp[@]}" >"$O/$name.log" 2>&1
  say "== $items: rc=$?"
  grep -E '^(# compare|#config)|^[a-z]' "$O/$name.log" | grep -vE '^(result|step|rank|world|model|W[0-9]|I[0-9])' | tail -5 | tee -a "$O/summary.txt"
done
