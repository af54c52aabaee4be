#!/usr/bin/env bash
# One-GPU checks of the communication-aware controls (issue 15), on a staged build
# (scripts/stage_gpu.sh -> build-gpu, carried). Everything lands in $OUT (or ./out): one log per
# stage and a summary table at the end.
#   a  GPU tests: the communication window under @overlap policies, residency under static ones
#   b  cost where no collective runs: a GPU-bound PyTorch step (GPT, 8 layers, width 2048,
#      16x1024 tokens, bf16 autocast, AdamW), plain / off / priority (the default) /
#      shape+priority:model@overlap, alternating
#      A B C D D C B A, medians of 30 steps each
#   c  launch rate from outside: 100,000 launches of one elementwise kernel from Python, plain /
#      library disabled / off / default, alternating
#   d  results: checksums of a small model (eager, torch.compile, CUDA graphs) plainly and under
#      the default, a static shape:1, and sm-target (twice: reproducible)
#   e  the SM target reaches cuBLAS: GEMM grids in a trace plainly and under sm-target:66
#   g  real NCCL through the library: PyTorch DDP with one rank (torchrun --nproc-per-node 1):
#      the windows open at DDP's all-reduces; checksums plainly, under the default and under
#      sm-target:66@overlap (twice: reproducible)
#   h  launch rate of a C++ program (cudaLaunchKernel of an empty kernel), plain / disabled / off
#   f  the library's own time per shaped launch in steady state (a launch loop of a kernel large
#      enough to shape, static shape:1 and off, CCO_STATS's hook_ns_steady)
# "The default" here is shape+priority:model@overlap, cco run's default policy until 2026-11-26
# (now priority); the stages name it explicitly, so they still measure the shaping window.
# Usage: BUILD=build-gpu scripts/gpu_window.sh [stages, default "a b c d e f"]
# Logs go to a temporary folder and come back as $OUT/logs.tgz beside $OUT/summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_env.sh
source scripts/gpu_logs.sh
stages=${*:-a b c d e f}
py=python3
res() { grep -h '^result:' "$1" | tail -1; }
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1"; }

say "# gpu_window $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
say "# torch $($py -c 'import torch;print(torch.__version__, torch.version.cuda)' 2>/dev/null)"

# run NAME CONFIG ARGS...: CONFIG is plain | disabled | POLICY
run_cfg() {
  local log=$1 cfg=$2; shift 2
  case $cfg in
    plain) timeout 300 "$@" >"$log" 2>&1 ;;
    disabled) timeout 300 env LD_PRELOAD="$CCO_PRELOAD_LIB" CCO_DISABLE=1 "$@" >"$log" 2>&1 ;;
    *) timeout 300 "$cco" run --stats --policy "$cfg" -- "$@" >"$log" 2>&1 ;;
  esac
  echo "rc=$?" >>"$log"
}

if has a; then
  say "== a: GPU tests"
  gt="$B/tests/cco.test.gpu_preload"
  for pol in "shape+priority:model@overlap" "shape:1@overlap"; do
    f="$O/a_window_${pol//[^a-z0-9]/_}.log"
    timeout 120 "$cco" run --stats --policy "$pol" -- "$gt" --gtest_filter='PreloadGpu.CommunicationWindow' >"$f" 2>&1
    say "  window $pol: rc=$? $(grep -h 'cco-probe: window' "$f") $(grep -ho 'window_opened=[0-9]*\|skip.no-comm=[0-9]*' "$f" | tr '\n' ' ')"
  done
  f="$O/a_static.log"
  timeout 180 "$cco" run --policy shape:2 -- env CCO_TEST_EXPECT_BLOCKS=2 "$gt" --gtest_filter='-*Priority*' >"$f" 2>&1
  say "  static shape:2 residency/graph/threads: rc=$? $(grep -h 'PASSED\|FAILED' "$f" | tr '\n' ' ')"
  f="$O/a_default_plain.log"
  timeout 180 "$cco" run --policy shape+priority:model@overlap -- "$gt" --gtest_filter='-*Priority*' >"$f" 2>&1
  say "  default policy, results: rc=$? $(grep -h 'PASSED\|FAILED' "$f" | tr '\n' ' ') $(grep -ho 'cco-probe: direct launch.*' "$f")"
fi

if has b; then
  say "== b: cost without communication (gpt_step eager, 8x2048, 16x1024, 30 steps)"
  # The default since 2026-11-26 (priority) beside the shaping window it replaced.
  cfgs=(plain off priority "shape+priority:model@overlap")
  order=(0 1 2 3 3 2 1 0)
  i=0
  for k in "${order[@]}"; do
    c=${cfgs[$k]}
    f="$O/b_${i}_${c//[^a-z0-9]/_}.log"
    run_cfg "$f" "$c" $py scripts/gpt_step.py --mode eager --steps 30 --warmup 5
    r=$(res "$f")
    say "  run $i $c: $(field "$r" median_step_ms) ms (p10 $(field "$r" p10_ms), p90 $(field "$r" p90_ms)) loss $(field "$r" loss_checksum) $(grep -ho 'shaped=[0-9]*\|skip.no-comm=[0-9]*' "$f" | tr '\n' ' ')"
    i=$((i + 1))
  done
fi

if has c; then
  say "== c: launch rate (100000 launches x 5, us per launch)"
  cfgs=(plain disabled off "shape+priority:model@overlap")
  order=(0 1 2 3 3 2 1 0 0 1 2 3 3 2 1 0)
  i=0
  for k in "${order[@]}"; do
    c=${cfgs[$k]}
    f="$O/c_${i}_${c//[^a-z0-9]/_}.log"
    run_cfg "$f" "$c" env CCO_STATS=1 $py scripts/gpt_step.py --mode launch-rate
    r=$(res "$f")
    say "  run $i $c: median $(field "$r" median_us_per_launch) us (min $(field "$r" min_us), max $(field "$r" max_us)) $(grep -ho 'hook_ns_per_launch=[0-9]*' "$f")"
    i=$((i + 1))
  done
fi

if has d; then
  say "== d: results (checksums; small model: 2 layers, width 512, 4x256 tokens)"
  small=(--layers 2 --d-model 512 --heads 8 --vocab 8192 --seq 256 --batch 4 --steps 6 --warmup 2)
  for mode in eager compile graphs; do
    for c in plain plain "shape+priority:model@overlap" "shape:1" "sm-target:66" "sm-target:66" "sm-target:66@overlap"; do
      [ "$mode" != eager ] && [[ $c == sm-target* ]] && continue
      f="$O/d_${mode}_${c//[^a-z0-9]/_}.log"
      [ -f "$f" ] && f="${f%.log}_2.log"
      run_cfg "$f" "$c" $py scripts/gpt_step.py --mode "$mode" "${small[@]}"
      r=$(res "$f")
      say "  $mode $c: loss $(field "$r" loss_checksum) params $(field "$r" param_checksum) $(grep -ho 'shaped=[0-9]*\|gemm_[a-z_]*=[0-9]*' "$f" | tr '\n' ' ') $(grep -h '^rc=' "$f")"
    done
  done
fi

if has e; then
  say "== e: the SM target reaches cuBLAS (GEMM grids in a trace)"
  small=(--layers 2 --d-model 1024 --heads 8 --vocab 8192 --seq 512 --batch 8 --steps 3 --warmup 1)
  for c in off "sm-target:66"; do
    t="$O/e_trace_${c//[^a-z0-9]/_}.json"
    timeout 200 "$cco" run --stats --policy "$c" --trace "$t" -- $py scripts/gpt_step.py --mode eager "${small[@]}" \
      >"$O/e_${c//[^a-z0-9]/_}.log" 2>&1
    say "  $c: rc=$? $(grep -ho 'gemm_[a-z_]*=[0-9]*' "$O/e_${c//[^a-z0-9]/_}.log" | tr '\n' ' ')"
    $py - "$t" <<'EOF' | tee -a "$O/summary.txt"
import json, sys, collections
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"] if isinstance(d, dict) else d
grids = collections.Counter()
for e in ev:
    a = e.get("args") or {}
    n = e.get("name", "")
    if e.get("ph") == "X" and "grid" in a and any(s in n.lower() for s in ("gemm", "xmma", "cutlass", "sm90", "nvjet")):
        g = a["grid"]
        grids[g[0] * g[1] * g[2]] += 1
print("    GEMM kernels by grid size (blocks: count):", dict(sorted(grids.items())))
EOF
  done
fi
if has f; then
  say "== f: the library's time per launch, steady state (launch loop, 4M elements per launch)"
  for c in off priority "shape:1" "shape:1" priority off; do
    f="$O/f_${c//[^a-z0-9]/_}_$RANDOM.log"
    run_cfg "$f" "$c" $py scripts/gpt_step.py --mode launch-rate --numel 4194304 --launches 20000 --repeats 3
    say "  $c: $(grep -ho 'shaped=[0-9]*\|hook_ns_per_launch=[0-9]*\|hook_ns_steady=[0-9]*\|cold_launches=[0-9]*' "$f" | tr '\n' ' ')"
  done
fi
if has g; then
  say "== g: PyTorch DDP, one rank, real NCCL (4 layers x 1024, 8x512 tokens, 8 steps)"
  ddp=(torchrun --standalone --nproc-per-node 1 scripts/ddp_gpt.py --layers 4 --steps 8 --warmup 2)
  for c in plain "shape+priority:model@overlap" "sm-target:66@overlap" "sm-target:66@overlap" "shape+priority:model"; do
    f="$O/g_${c//[^a-z0-9]/_}_$RANDOM.log"
    run_cfg "$f" "$c" "${ddp[@]}"
    r=$(res "$f")
    say "  $c: $(field "$r" median_step_ms) ms loss $(field "$r" loss_checksum) params $(field "$r" param_checksum) $(grep -ho 'shaped=[0-9]*\|skip.no-comm=[0-9]*\|window_[a-z_]*=[0-9]*\|gemm_[a-z_]*=[0-9]*\|nccl=[0-9]*' "$f" | sort -u | tr '\n' ' ') $(grep -h '^rc=' "$f")"
  done
fi

if has h; then
  say "== h: C++ launch rate (cco.bench.launch_rate)"
  gt="$B/tests/cco.bench.launch_rate"
  for c in plain disabled off plain disabled off off disabled plain; do
    f="$O/h_${c}_$RANDOM.log"
    run_cfg "$f" "$c" "$gt"
    say "  $c: $(grep -h 'cco-probe' "$f" | head -2 | tr '\n' ' ')"
  done
fi
say "# done"
