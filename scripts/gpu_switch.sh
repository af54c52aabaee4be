#!/usr/bin/env bash
# One-GPU checks of the controls that now switch between steps (issue 16): steps from NVTX
# ranges, the GEMMs' SM budget in a rotation and a tuning run, the tuner plugin's channel cap in a
# rotation; on a staged build (scripts/stage_gpu.sh -> build-gpu, carried). Logs come back as
# $OUT/logs.tgz beside $OUT/summary.txt.
#   p  nothing broke: the preload GPU tests under shape:2 (residency asserted) and sm-target:100
#   n  --step-nvtx: the GPT loop whose steps are only NVTX ranges ("train_step"), A/A (off,off)
#      and off,shape:1; one-rank DDP GPT with --nvtx-steps (NCCL's own NVTX ranges pass through
#      the library too), off,off
#   s  the SM budget rotating in the GPT loop (marked steps): off, sm-target:-32, sm-target:66,
#      with the library's per-configuration GEMM counters
#   c  the channel cap rotating in one-rank DDP: the plugin loaded, its per-configuration line
#   t  cco tune over off, sm-target:-16, shape+priority:model@overlap on one-rank DDP GPT
#   f  FSDP2 GPT with one rank: steps found from its collectives (A/A), and its checksums plainly
#      and under the default policy
# Usage: BUILD=build-gpu scripts/gpu_switch.sh [stages, default "p n s c t"]
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_env.sh
source scripts/gpu_logs.sh
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
export CCO_TUNER_LIB="$PWD/$B/src/tuner/libcco_tuner.so"
stages=${*:-p n s c t}
ddp=(torchrun --standalone --nproc-per-node 1 scripts/ddp_gpt.py --layers 8 --d-model 1024)
loop=(python3 scripts/gpt_step.py --warmup 2)

say "# gpu_switch $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
say "# torch $(python3 -c 'import torch;print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())' 2>/dev/null)"

compare() {  # NAME ITEMS [cco run options] -- CMD...: a paired comparison, its table in the summary
  local name=$1 items=$2; shift 2
  local t0=$SECONDS
  timeout 280 "$cco" run --compare "$items" --compare-json "$O/$name.json" "$@" >"$O/$name.log" 2>&1
  say "== $name ($items): rc=$? $((SECONDS - t0)) s"
  grep -E '^(# compare|#config|cco: |cco run: )|^[a-z/].* (baseline|within noise|ms \[)' "$O/$name.log" \
    | grep -vE '^(result|step|rank|world|model|W[0-9]|I[0-9])' | tail -8 | tee -a "$O/summary.txt"
  grep -E '^cco-(preload|tuner): (stats|warning)' "$O/$name.log" | cut -c1-260 | tee -a "$O/summary.txt"
}

if has p; then
  f="$O/p_shape2.log"
  timeout 120 "$cco" run --policy shape:2 --stats -- env CCO_TEST_EXPECT_BLOCKS=2 \
    "$B/tests/cco.test.gpu_preload" >"$f" 2>&1
  say "== p shape:2: rc=$? $(grep -E 'PASSED|FAILED' "$f" | tr '\n' ' ') $(grep -o 'shaped=[0-9]*' "$f" | head -1)"
  f="$O/p_smtarget.log"
  timeout 120 "$cco" run --policy sm-target:100 --stats -- python3 scripts/gpt_step.py --steps 4 \
    --warmup 1 --layers 2 --d-model 512 >"$f" 2>&1
  say "== p sm-target:100 gpt: rc=$? $(grep -o 'gemm_calls=[0-9]* gemm_sm_targeted=[0-9]*' "$f" | head -1)"
fi
if has n; then
  compare n_aa off,off --warmup 5 --step-nvtx train_step -- "${loop[@]}" --nvtx-steps --steps 80
  compare n_shape off,shape:1 --warmup 5 --step-nvtx train_step -- "${loop[@]}" --nvtx-steps --steps 80
  compare n_ddp off,off --warmup 5 --step-nvtx train_step -- "${ddp[@]}" --nvtx-steps --steps 120 --warmup 3
fi
if has s; then
  compare s_gemm off,sm-target:-32,sm-target:66 --warmup 5 --stats -- "${loop[@]}" --mark-steps --steps 110
fi
if has c; then
  compare c_chan off,channels:2 --warmup 5 --stats -- env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING \
    "${ddp[@]}" --steps 60 --warmup 3
  grep -E 'cco-tuner' "$O/c_chan.log" | sort | uniq -c | cut -c1-240 | head -6 | tee -a "$O/summary.txt"
fi
if has t; then
  t0=$SECONDS
  timeout 300 "$cco" tune --candidates off,sm-target:-16,shape+priority:model@overlap --warmup 5 \
    --out "$O/t.plan.json" --steps-out "$O/t.steps" -- "${ddp[@]}" --steps 400 --warmup 3 \
    >"$O/t.log" 2>"$O/t.err"
  say "== t tune: rc=$? $((SECONDS - t0)) s"
  grep -E '^cco tune: step|^  scores' "$O/t.err" | tee -a "$O/summary.txt"
  python3 -c "import json,sys; p=json.load(open(sys.argv[1])); print('plan policy', p.get('policy'), 'gemm', p.get('gemm'))" "$O/t.plan.json" 2>&1 | tee -a "$O/summary.txt"
fi
if has f; then
  fsdp=(torchrun --standalone --nproc-per-node 1 scripts/ddp_gpt.py --mode fsdp --layers 8 --d-model 1024)
  compare f_aa off,off --warmup 5 --steps-out "$O/f.steps" -- "${fsdp[@]}" --steps 80 --warmup 3
  python3 -c "import json,glob; d=json.load(open(sorted(glob.glob('$O/f.steps/steps-*.json'))[0])); print('fsdp step file: source', d['source'], 'period', d['period'], 'collectives', d['collectives'], 'locks', d['locks'], 'mismatches', d['mismatches'], 'steps', len(d['steps']))" 2>&1 | tee -a "$O/summary.txt"
  for how in plain default; do
    f="$O/f_$how.log"
    if [ $how = plain ]; then timeout 120 "${fsdp[@]}" --steps 6 --warmup 1 >"$f" 2>&1
    else timeout 120 "$cco" run -- "${fsdp[@]}" --steps 6 --warmup 1 >"$f" 2>&1; fi
    say "== f $how: rc=$? $(grep -h '^result:' "$f" | grep -oE '(median_step_ms|loss_checksum|param_checksum)=[^ ]*' | tr '\n' ' ')"
  done
fi
say "# done $(date -u +%FT%TZ)"
