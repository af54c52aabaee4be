#!/usr/bin/env bash
# One-GPU checks of `cco tune -- CMD` (issue 16) and of the preload library after the unload and
# dlsym changes (issue 15), on a staged build (scripts/stage_gpu.sh -> build-gpu, carried). Logs
# come back as $OUT/logs.tgz beside $OUT/summary.txt.
#   p  the preload GPU tests: the communication window under cco run, residency/graph/threads
#      under shape:2 with the residency asserted (the library's dlsym is now an assembly entry)
#   t  cco tune on DDP GPT with one rank (steps found from its collectives): candidates
#      off, priority, shape:1 (static), shape+priority:model@overlap; then the tuned plan in a
#      paired comparison against every candidate (cco run --compare PLAN,...)
#   m  cco tune on the single-GPU GPT loop marked by ccoverlap.step(): off, shape:2,
#      shape+priority:model (static); the plan against the candidates, paired
#   r  results unchanged: the small GPT eager run plainly and under the tuned plan (checksums)
# Usage: BUILD=build-gpu scripts/gpu_tune.sh [stages, default "p t m r"]
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_env.sh
source scripts/gpu_logs.sh
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
stages=${*:-p t m r}
ddp=(torchrun --standalone --nproc-per-node 1 scripts/ddp_gpt.py --layers 8 --d-model 1024
     --steps 400 --warmup 3)
loop=(python3 scripts/gpt_step.py --mark-steps --steps 150 --warmup 2)

say "# gpu_tune $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
say "# torch $(python3 -c 'import torch;print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())' 2>/dev/null)"

tune_then_compare() {  # NAME CANDIDATES CMD...: cco tune, then the plan against every candidate
  local name=$1 cands=$2; shift 2
  local t0=$SECONDS
  timeout 300 "$cco" tune --candidates "$cands" --warmup 5 --out "$O/$name.plan.json" \
    --steps-out "$O/$name.steps" -- "$@" >"$O/$name.log" 2>"$O/$name.err"
  local rc=$?
  say "== $name tune ($cands): rc=$rc, $((SECONDS - t0)) s"
  grep -E '^cco tune: step' "$O/$name.err" | tee -a "$O/summary.txt"
  grep -vE '^(result|step|rank|world|model|W[0-9]|I[0-9])' "$O/$name.log" | tail -9 | tee -a "$O/summary.txt"
  [ -f "$O/$name.plan.json" ] || return
  t0=$SECONDS
  timeout 300 "$cco" run --compare "$O/$name.plan.json,$cands" --warmup 5 \
    --steps-out "$O/$name.cmp" --compare-json "$O/$name.cmp.json" -- "$@" \
    >"$O/$name.cmp.log" 2>&1
  say "== $name plan vs candidates, paired: rc=$? $((SECONDS - t0)) s"
  grep -E '^(# compare|#config|cco: )|^[a-z/]' "$O/$name.cmp.log" | grep -vE '^(result|step|rank|world|model|W[0-9]|I[0-9])' | tail -8 | tee -a "$O/summary.txt"
}

if has p; then
  f="$O/p_window.log"
  timeout 120 env CCO_TEST_REQUIRE_WINDOW=1 "$cco" run -- "$B/tests/cco.test.gpu_preload" \
    --gtest_filter=PreloadGpu.CommunicationWindow >"$f" 2>&1
  say "== p window: rc=$? $(grep -E 'PASSED|FAILED|SKIPPED' "$f" | tr '\n' ' ')"
  f="$O/p_shape2.log"
  timeout 120 "$cco" run --policy shape:2 --stats -- env CCO_TEST_EXPECT_BLOCKS=2 \
    "$B/tests/cco.test.gpu_preload" >"$f" 2>&1
  say "== p shape:2: rc=$? $(grep -E 'PASSED|FAILED' "$f" | tr '\n' ' ') $(grep -o 'shaped=[0-9]*' "$f" | head -1)"
fi
if has t; then
  # ddp_gpt.py runs 400 steps at most; cco tune stops it once the winner is known.
  tune_then_compare t_ddp "off,priority,shape:1,shape+priority:model@overlap" "${ddp[@]}"
fi
if has m; then
  tune_then_compare m_loop "off,shape:2,shape+priority:model" "${loop[@]}"
fi
if has r; then
  for cfg in plain plan; do
    f="$O/r_$cfg.log"
    if [ $cfg = plain ]; then
      timeout 120 python3 scripts/gpt_step.py --steps 8 --warmup 1 --layers 2 --d-model 512 >"$f" 2>&1
    elif [ -f "$O/t_ddp.plan.json" ]; then
      timeout 120 "$cco" run --plan "$O/t_ddp.plan.json" -- python3 scripts/gpt_step.py --steps 8 \
        --warmup 1 --layers 2 --d-model 512 >"$f" 2>&1
    fi
    say "== r $cfg: rc=$? $(grep -h '^result:' "$f" | tail -1)"
  done
fi
say "# done $(date -u +%FT%TZ)"
