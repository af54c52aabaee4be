#!/usr/bin/env bash
# The newcomer path on a GPU machine (issue 19): cco doctor with PyTorch present, a PyTorch profiler
# trace (.json.gz) read and merged by cco report, the libraries cco needs there, and the CTA-policy
# GPU tests. Everything under $OUT (default ./out) as all.tgz. Usage: scripts/gpu_newcomer.sh
OUT=${OUT:-out}; mkdir -p "$OUT"
export BUILD=${BUILD:-build-gpu}; W=/tmp/w; mkdir -p $W; trap "tar czf $OUT/all.tgz -C $W ." EXIT
. scripts/gpu_env.sh
cco=$BUILD/src/cli/cco
ldd $cco | grep -E "libz|nccl|cublas|not found" | tee $W/ldd.txt
timeout 200 $BUILD/tests/cco.test.gpu_controls > $W/gpu_controls.log 2>&1; echo "gpu_controls exit $?"
grep -E "^\[  |Failure" $W/gpu_controls.log | head
timeout 120 $cco doctor > $W/doctor.txt 2>&1; echo "doctor exit $?"; cat $W/doctor.txt
timeout 120 $cco doctor --json > $W/doctor.json 2>&1
PYTHONUNBUFFERED=1 timeout 120 python3 - <<'PY' > $W/kineto.log 2>&1
import torch
from torch.profiler import profile, ProfilerActivity
x = torch.randn(4096, 4096, device="cuda")
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
    for _ in range(5):
        y = x @ x
    torch.cuda.synchronize()
p.export_chrome_trace("/tmp/w/kineto.json.gz")
print("written")
PY
echo "kineto exit $?"; tail -2 $W/kineto.log; ls -la $W/kineto.json.gz
$cco report $W/kineto.json.gz --merge $W/kineto_merged.json > $W/kineto_report.txt 2>&1; echo "report exit $?"; head -30 $W/kineto_report.txt
