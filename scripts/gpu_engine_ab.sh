#!/usr/bin/env bash
# Before/after check of a refactor of the measuring loop (issue 17): the same reference pairs and
# shipped steps measured with the old cco ($OLD, default build-before/cco) and the new one
# ($BUILD/src/cli/cco), alternating A B B A in one call, on the GPUs present (-g G, default 1).
# Prints each run's median per mode and its #wrong; logs under $OUT.
# Usage: BUILD=build-gpu OLD=build-before/cco scripts/gpu_engine_ab.sh [G]
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_env.sh
source scripts/gpu_logs.sh
old=${OLD:-build-before/cco}
new=$cco
g=${1:-1}
say "# gpu_engine_ab $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1) -g $g"
pair() {  # NAME BIN ARGS...: one pair run; "NAME mode median spread wrong" lines
  local name=$1 bin=$2; shift 2
  timeout 200 "$bin" bench -g "$g" -n 30 -w 5 "$@" --json "$O/$name.json" >"$O/$name.txt" 2>"$O/$name.err"
  local rc=$?
  python3 - "$O/$name.json" "$name" "$rc" <<'PY' | tee -a "$O/summary.txt"
import json, sys
path, name, rc = sys.argv[1:]
try:
    d = json.load(open(path))
except Exception as e:
    print(f"{name}: rc={rc} no json ({e})"); sys.exit()
for r in d.get("results", []):
    t = r.get("t", {})
    print(f"{name}: {r.get('label','?'):28s} median_us={t.get('median_us')} wrong={r.get('wrong')}")
PY
}
step() {  # NAME BIN FILE: one step run; its table's mode lines
  local name=$1 bin=$2 file=$3
  timeout 200 "$bin" bench --workload "$file" -g "$g" -n 20 -w 3 --json "$O/$name.json" >"$O/$name.txt" 2>"$O/$name.err"
  say "$name: rc=$? $(grep -E 'Out of bounds' "$O/$name.txt")"
  grep -E '^ +(seq|concurrent|priority|shape)' "$O/$name.txt" | cut -c1-120 | sed "s/^/$name: /" | tee -a "$O/summary.txt"
}
for round in A B B A; do
  bin=$old; [ $round = B ] && bin=$new
  pair "pair_lt4096x4_$round$RANDOM" "$bin" --gemm 4096 --count 4 -b 256M -d bfloat16
  pair "pair_builtin2048_$round$RANDOM" "$bin" --compute builtin --gemm 2048 --count 2 -b 256M -d bfloat16
  step "step_ddp7b_$round$RANDOM" "$bin" workloads/ddp_llama7b.json
done
say "# done $(date -u +%FT%TZ)"
