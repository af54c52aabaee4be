#!/usr/bin/env bash
# The measuring configuration nocomm end to end, GPU-free: libcco_preload.so in a program of
# three-collective steps (fake_nccl_app) against a fake libnccl.so.2 and a fake libcuda.so.1 whose
# memory is host memory. Under CCO_COMPARE=off,nocomm the rotation's nocomm steps must reach NCCL
# only with the one-element all-reduce that keeps ranks in step, and leave in every output what
# steps/nocomm.hpp defines (the rank's own input; never the poison the program put there); the
# 'off' steps must reach NCCL whole. nocomm as a baseline, as a policy, or alone is refused with
# one line and everything runs for real.
set -u
lib=${CCO_PRELOAD_LIB:?}
fakedir=${CCO_FAKE_CUDA_DIR:?}
app=${CCO_FAKE_NCCL_APP:?}
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset CCO_DISABLE CCO_POLICY CCO_PLAN CCO_STATS CCO_VERBOSE CCO_PRIORITY_METHOD CCO_TRACE CCO_COMPARE
unset CCO_STEPS_DIR CCO_COMPARE_DIAGNOSE RANK OMPI_COMM_WORLD_RANK SLURM_PROCID LOCAL_RANK
ncclplace=$(dirname "$app")/fakenccl
run() { env LD_LIBRARY_PATH="$fakedir:$ncclplace" FAKE_NCCL_NRANKS=2 "$@" "$app" 2>"$tmp/err"; }

real_step='allreduce=1(4) allgather=1 other=1 out=2,4,6,8 gathered=5,6,105,106$'
skipped_step='allreduce=1(1) allgather=0 other=0 out=1,2,3,4 gathered=5,6,5,6$'

# Without the library: every step is real (the fake NCCL's answers).
out=$(run)
[ "$(echo "$out" | grep -c "config=-1 $real_step")" = 24 ] || fail "without the library: $out"

# The rotation: off and nocomm steps, each as defined, in the schedule's order.
mkdir -p "$tmp/s"
out=$(run LD_PRELOAD="$lib" CCO_COMPARE=off,nocomm CCO_WARMUP_STEPS=1 CCO_STEPS_DIR="$tmp/s")
nreal=$(echo "$out" | grep -c "config=0 $real_step")
nskip=$(echo "$out" | grep -c "config=1 $skipped_step")
[ "$(echo "$out" | grep -c '^step ')" = 24 ] && [ "$nskip" -ge 6 ] && [ "$nreal" -ge 12 ] &&
  [ $((nreal + nskip)) = 24 ] || fail "off,nocomm: $nreal real and $nskip skipped steps of 24: $out
$(cat "$tmp/err")"
echo "$out" | grep -q -- '-1' && fail "an output kept the poison under off,nocomm: $out"
[ ! -s "$tmp/err" ] || fail "off,nocomm printed: $(cat "$tmp/err")"
# The step file names the configurations as the comparison does, and every step is the same
# three collectives whether they moved data or not: the ncclBroadcast that NCCL's own ncclBcast
# calls is part of the program's call, not a collective of its own (else the nocomm steps,
# which never reach it, would be a collective short: relocks, irregular steps).
python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); sys.exit(d["configs"] != ["off", "nocomm"] or d["period"] != 3 or d["locks"] != 1 or d["mismatches"] != 0)' \
  "$tmp"/s/steps-*.json 2>/dev/null ||
  fail "the step file: $(cat "$tmp"/s/steps-*.json 2>&1 | head -c 300)"

# nocomm cannot be the baseline, a policy or a plan: one warning, every step real.
out=$(run LD_PRELOAD="$lib" CCO_COMPARE=nocomm,off CCO_WARMUP_STEPS=1)
[ "$(echo "$out" | grep -c "$real_step")" = 24 ] || fail "nocomm,off ran skipped steps: $out"
grep -q "^cco-preload: warning: CCO_COMPARE: 'nocomm' cannot rotate: the measuring configuration cannot be the baseline" "$tmp/err" &&
  [ "$(grep -c . "$tmp/err")" = 1 ] || fail "nocomm,off: $(cat "$tmp/err")"
out=$(run LD_PRELOAD="$lib" CCO_POLICY=nocomm)
[ "$(echo "$out" | grep -c "$real_step")" = 24 ] || fail "CCO_POLICY=nocomm ran skipped steps: $out"
grep -q "^cco-preload: warning: CCO_POLICY: 'nocomm' is a measuring configuration, not a policy" "$tmp/err" ||
  fail "CCO_POLICY=nocomm: $(cat "$tmp/err")"

[ $fails = 0 ] && echo "nocomm process tests: all passed" || echo "nocomm process tests: $fails failed"
[ $fails = 0 ]
