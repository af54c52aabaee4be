#!/usr/bin/env bash
# One-GPU checks of the real program as its own benchmark (issue 16), on a staged build
# (scripts/stage_gpu.sh -> build-gpu, carried). Logs and step files come back as $OUT/logs.tgz
# beside $OUT/summary.txt.
#   a  DDP GPT with one rank (torchrun): steps found from its collectives; paired comparisons
#      in one process: off,off (must be within noise), off,shape:1 (a known slowdown), off and the
#      default (shape+priority:model@overlap)
#   b  the same two policies as separate runs (step files kept), for the unpaired comparison
#   c  a plain single-GPU loop (no collective): steps marked by ccoverlap.step(); the default
#      against off, paired
#   d  the same loop without marks: the comparison is refused with one line
#   e  the preload GPU tests (the window, residency) under the new library
# "The default" here is shape+priority:model@overlap, cco run's default policy until 2026-11-26
# (now priority), named explicitly below.
# Usage: BUILD=build-gpu scripts/gpu_steps.sh [stages, default "a b c d e"]
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_env.sh
source scripts/gpu_logs.sh
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
stages=${*:-a b c d e}
STEPS=${STEPS:-80}
ddp=(torchrun --standalone --nproc-per-node 1 scripts/ddp_gpt.py --layers 8 --d-model 1024
     --steps "$STEPS" --warmup 3)

say "# gpu_steps $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
say "# torch $(python3 -c 'import torch;print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())' 2>/dev/null)"

cmp_run() {  # NAME ITEMS ARGS...: a paired comparison; the report lines go to the summary
  local name=$1 items=$2; shift 2
  local t0=$SECONDS
  timeout 240 "$cco" run --compare "$items" --warmup 5 --steps-out "$O/$name" \
    --compare-json "$O/$name.json" -- "$@" >"$O/$name.log" 2>&1
  local rc=$?
  say "== $name ($items): rc=$rc, $((SECONDS - t0)) s"
  grep -E '^(# compare|#config|cco: )|^[a-z]' "$O/$name.log" | grep -vE '^(result|step|rank|world|model|W[0-9]|I[0-9])' | tail -8 | tee -a "$O/summary.txt"
  grep -h '^result:' "$O/$name.log" | tail -1 | tee -a "$O/summary.txt"
}

if has a; then
  cmp_run a_ddp_off_off off,off "${ddp[@]}"
  cmp_run a_ddp_off_shape1 off,shape:1 "${ddp[@]}"
  cmp_run a_ddp_off_default "off,shape+priority:model@overlap" "${ddp[@]}"
fi
if has b; then
  for pol in off shape:1; do
    d="$O/b_${pol//[^a-z0-9]/_}_$RANDOM"
    t0=$SECONDS
    timeout 240 "$cco" run --policy "$pol" --steps-out "$d" -- "${ddp[@]}" >"$d.log" 2>&1
    say "== b separate $pol: rc=$? $((SECONDS - t0)) s $(grep -h '^cco: steps' "$d.log" | tr '\n' ' ') $(grep -h '^result:' "$d.log" | tail -1)"
  done
fi
if has c; then
  cmp_run c_loop_off_default "off,shape+priority:model@overlap" \
    python3 scripts/gpt_step.py --mark-steps --steps 40 --warmup 2
fi
if has d; then
  cmp_run d_loop_nomarks off,shape:1 python3 scripts/gpt_step.py --steps 6 --warmup 1 --layers 2 --d-model 512
fi
if has e; then
  f="$O/e_gpu_preload.log"
  timeout 120 "$cco" run --stats -- "$B/tests/cco.test.gpu_preload" >"$f" 2>&1
  say "== e gpu_preload: rc=$? $(grep -E 'PASSED|FAILED' "$f" | tr '\n' ' ')"
fi
say "# done $(date -u +%FT%TZ)"
