#!/usr/bin/env bash
# One GPU, the checks of 2026-11-25 (issues 17 and 19): cco with NCCL and cuBLASLt loaded when
# needed (no link), the plan's made_for against the libraries a PyTorch program loads, the
# rendezvous through a real torchrun's store, and cco doctor with PyTorch. Stages: lazy madefor
# store doctor (default: all). Logs under $OUT (summary.txt, logs.tgz).
# Usage: BUILD=build-gpu scripts/gpu_libs.sh [STAGES...]
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_env.sh
source scripts/gpu_logs.sh
stages=${*:-lazy madefor store doctor}
say "# gpu_libs $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"

if has lazy; then
  # The binary needs neither library to start; with them in the loader path it finds both.
  say "lazy: NEEDED $(readelf -d "$cco" | grep NEEDED | sed 's/.*\[\(.*\)\]/\1/' | tr '\n' ' ')"
  say "lazy: $("$cco" info | head -1)"
  CCO_BIN=$cco bash tests/cli/test_lazy_libs.sh >"$O/lazy.log" 2>&1
  say "lazy: test_lazy_libs.sh exit $? ($(tail -1 "$O/lazy.log"))"
  # Without NCCL a bench that needs it says so in one line (exit code and the line).
  CCO_NCCL_LIB=/nonexistent/libnccl.so.2 "$cco" bench -b 1M -n 2 -w 0 >"$O/lazy_bench.txt" 2>&1
  say "lazy: bench without NCCL exit $?: $(tail -1 "$O/lazy_bench.txt")"
fi

if has madefor; then
  # A 1-rank DDP step under a plan made with other NCCL/cuBLASLt versions: one warning each
  # (the preload library compares the program's own, which cco's are not); the same plan naming
  # the versions PyTorch loads: none.
  read -r tnccl <<<"$(python3 -c 'import torch; v=torch.cuda.nccl.version(); print("%d.%d.%d" % v)')"
  say "madefor: PyTorch loads NCCL $tnccl"
  mk() {  # FILE NCCL CUBLASLT
    cat >"$1" <<EOF
{"schema": "ccoverlap.plan", "schema_version": "1.0.0", "policy": "made-elsewhere",
 "gemm": {"sm_target": 120},
 "made_for": {"nranks": 1, "versions": {"nccl": "$2", "cublaslt": "$3"}}}
EOF
  }
  mk "$O/other.json" 2.27.3 12.9.1
  mk "$O/same.json" "$tnccl" ""
  for p in other same; do
    timeout 300 "$cco" run --plan "$O/$p.json" -- torchrun --standalone --nproc-per-node 1 \
      scripts/ddp_gpt.py --layers 2 --d-model 512 --seq 256 --batch 4 --steps 3 --warmup 1 \
      >"$O/madefor_$p.txt" 2>&1
    say "madefor: plan $p exit $? warnings: $(grep -c 'was made with' "$O/madefor_$p.txt")"
    grep 'was made with' "$O/madefor_$p.txt" | sed 's/^/  /' | tee -a "$O/summary.txt"
  done
fi

if has store; then
  # Two ranks under a real torchrun (no GPU needed): both rendezvous through its store, the
  # keys are in it (a silent fallback to MASTER_PORT + 1 fails the test).
  for n in 2 4; do
    CCO_TEST_REAL_TORCHRUN=1 timeout 120 torchrun --standalone --nproc-per-node $n --no-python \
      "$B/tests/cco.test.bootstrap_store" --gtest_filter='RealTorchrun.*' >"$O/store_$n.txt" 2>&1
    say "store: torchrun --nproc-per-node $n exit $? ($(grep -cE '^\[  PASSED' "$O/store_$n.txt") ranks passed)"
  done
fi

if has doctor; then
  timeout 120 "$cco" doctor >"$O/doctor.txt" 2>&1
  say "doctor: exit $?"
  sed 's/^/  /' "$O/doctor.txt" | tee -a "$O/summary.txt"
fi
say "# done $(date -u +%FT%TZ)"
