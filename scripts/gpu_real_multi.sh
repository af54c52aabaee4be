#!/usr/bin/env bash
# Real PyTorch training on several GPUs under ccoverlap (the measurement of the closed issue 20,
# run when a multi-GPU kind is lent), on a staged build (scripts/stage_gpu.sh -> build-gpu,
# carried). A GPT-style model of about 1.3B parameters (24 layers, width 2048), bf16 autocast,
# DDP with 25 MB buckets or FSDP2. Logs and step files come back as $OUT/logs.tgz beside
# $OUT/summary.txt.
#   m  the parts: compute only (no_sync), communication only (DDP's buckets), DDP plain
#   k  PyTorch's own knob: plain against TORCH_NCCL_HIGH_PRIORITY=1, whole runs A B B A
#   x  answers: DDP under cco run's default policy, checksums against the plain run of `m`
#   p  paired in one process (cco run --compare): off, priority, shaping while NCCL works
#      (shape+priority:model@overlap, the default until 2026-11-26), and a GEMM SM budget only
#      while NCCL works
#   q  the same under TORCH_NCCL_HIGH_PRIORITY=1: does cco add to PyTorch's knob?
#   t  cco tune -- torchrun ... (online search in the program's own steps)
#   f  FSDP2: paired, off, priority and shape+priority:model@overlap
#   d  the default policy (priority since 2026-11-26) against off, paired, over more steps
#   c  NCCL channel caps through the tuner plugin (fewer SMs for DDP's all-reduces), paired
# (Stage x measures whatever the default is: shape+priority:model@overlap before 2026-11-26,
# priority since.) Exits non-zero when a run failed or the answers differ.
# Usage: BUILD=build-gpu scripts/gpu_real_multi.sh G [stages, default "m k x p q t f"]
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_env.sh
source scripts/gpu_logs.sh
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" OMP_NUM_THREADS=4
export CCO_TUNER_LIB="$PWD/$B/src/tuner/libcco_tuner.so"
G=${1:-2}
[[ $G =~ ^[1-9][0-9]*$ ]] || { echo "usage: scripts/gpu_real_multi.sh G [stages]: G is the number of GPUs, not '$G'" >&2; exit 2; }
shift || true
status=0
stages=${*:-m k x p q t f}
STEPS=${STEPS:-30}
model=(--layers "${LAYERS:-24}" --d-model "${DMODEL:-2048}" --heads 16)
prog=(torchrun --standalone --nproc-per-node "$G" scripts/ddp_gpt.py "${model[@]}")

say "# gpu_real_multi $(date -u +%FT%TZ) G=$G $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
say "# torch $(python3 -c 'import torch;print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())' 2>/dev/null)"

plain() {  # NAME ARGS...: one whole run of the program, its result line to the summary
  local name=$1; shift
  local t0=$SECONDS
  timeout 200 "$@" >"$O/$name.log" 2>&1
  local rc=$?
  [ $rc = 0 ] || status=1
  say "== $name: rc=$rc $((SECONDS - t0)) s $(grep -h '^result:' "$O/$name.log" | tail -1)"
}
cmp_run() {  # NAME ITEMS [cco run options] -- CMD...: a paired comparison; its table to the summary
  local name=$1 items=$2; shift 2
  local t0=$SECONDS
  timeout 240 "$cco" run --compare "$items" --compare-json "$O/$name.json" "$@" >"$O/$name.log" 2>&1
  local rc=$?
  [ $rc = 0 ] || status=1
  say "== $name ($items): rc=$rc $((SECONDS - t0)) s"
  grep -E '^(# compare|#config|cco: |cco run: )|^[a-z/:@0-9+-]+ +[0-9]' "$O/$name.log" \
    | grep -vE '^(result|step|rank|world|model|W[0-9]|I[0-9])' | tail -8 | tee -a "$O/summary.txt"
  grep -h '^result:' "$O/$name.log" | tail -1 | tee -a "$O/summary.txt"
}

if has m; then
  for mode in compute-only comm-only ddp; do
    plain "m_$mode" "${prog[@]}" --mode "$mode" --steps "$STEPS" --warmup 3
  done
fi
if has k; then
  for rep in 1 2; do  # A B B A
    [ $rep = 1 ] && order="plain high" || order="high plain"
    for c in $order; do
      if [ $c = plain ]; then
        plain "k_plain_$rep" "${prog[@]}" --steps "$STEPS" --warmup 3
      else
        plain "k_high_$rep" env TORCH_NCCL_HIGH_PRIORITY=1 "${prog[@]}" --steps "$STEPS" --warmup 3
      fi
    done
  done
fi
if has x; then
  plain x_default "$cco" run -- "${prog[@]}" --steps "$STEPS" --warmup 3
  a=$(grep -ho 'loss_checksum=[^ ]* param_checksum=[^ ]*' "$O/m_ddp.log" 2>/dev/null | tail -1)
  b=$(grep -ho 'loss_checksum=[^ ]* param_checksum=[^ ]*' "$O/x_default.log" | tail -1)
  [ -n "$a" ] && [ "$a" = "$b" ] && say "answers: identical checksums, plain and the default policy" \
    || { say "answers: DIFFER or missing: plain '$a' default '$b'"; status=1; }
fi
pol="off,priority,shape+priority:model@overlap,sm-target:-16@overlap"
if has p; then
  cmp_run p_ddp "$pol" --warmup 5 -- "${prog[@]}" --steps 100 --warmup 3
fi
if has q; then
  cmp_run q_ddp_high "off,shape+priority:model@overlap,sm-target:-16@overlap" --warmup 5 -- \
    env TORCH_NCCL_HIGH_PRIORITY=1 "${prog[@]}" --steps 80 --warmup 3
fi
if has t; then
  t0=$SECONDS
  timeout 240 "$cco" tune --candidates "$pol" --out "$O/t_plan.json" -- "${prog[@]}" --steps 400 --warmup 3 \
    >"$O/t_tune.log" 2>&1
  say "== t cco tune -- DDP: rc=$? $((SECONDS - t0)) s"
  grep -E '^(cco tune|# tune|cco: )' "$O/t_tune.log" | tail -12 | tee -a "$O/summary.txt"
  python3 -c "import json,sys; p=json.load(open(sys.argv[1])); print('plan policy:', p.get('policy'))" \
    "$O/t_plan.json" 2>&1 | tee -a "$O/summary.txt"
fi
if has f; then
  cmp_run f_fsdp "off,priority,shape+priority:model@overlap" --warmup 5 -- "${prog[@]}" --mode fsdp \
    --steps 60 --warmup 3
fi
if has d; then
  cmp_run d_ddp_default "off,priority" --warmup 5 -- "${prog[@]}" --steps 120 --warmup 3
fi
if has c; then
  cmp_run c_ddp_channels "off,channels:16,channels:8,channels:4" --warmup 5 --stats -- "${prog[@]}" \
    --steps 120 --warmup 3
  grep -E '^cco-(tuner|preload): (stats|warning)' "$O/c_ddp_channels.log" | cut -c1-260 | head -4 | tee -a "$O/summary.txt"
fi
exit $status
