#!/usr/bin/env bash
# Locates the exit-time crash of a program traced by the preload library (issue 5) on a GPU
# machine (no gdb there): traced runs with a signal backtrace (tests/tools/segv_backtrace.cpp)
# and CCO_TRACE_DEBUG variants that move the session's start or drop its exit writer.
# Logs under $OUT/tracedbg (or ./out).   BUILD=build-gpu bash scripts/gpu_trace_debug.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_env.sh
B=${BUILD:-build}
O=${OUT:-out}/tracedbg
mkdir -p "$O"
cco=$PWD/$B/src/cli/cco
segv=$PWD/$B/tests/libcco_segv_backtrace.so
one() {  # one NAME ENV... -- COMMAND...
  local name=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  local t0=$SECONDS
  env "${envs[@]}" timeout 120 "$@" >"$O/$name.out" 2>"$O/$name.err"
  local rc=$?
  printf '%-22s rc=%-4s %4ss  trace files: %s\n' "$name" "$rc" "$((SECONDS - t0))" \
    "$(ls "$O" | grep -c "^${name}_t")" | tee -a "$O/summary.txt"
  grep -h "segv_backtrace\|^== \|^cco-preload: trace" "$O/$name.err" | head -12 | sed 's/^/    /' |
    tee -a "$O/summary.txt"
}
B2=(bench -g 2 --gemm 2048 --count 2 -b 64M -n 5)
G1=(bench -g 1 --gemm 1024 -b 16M -n 3 --compute builtin)
P=(run --policy off)
one g1_verbose LD_PRELOAD="$segv" CCO_VERBOSE=1 -- "$cco" "${P[@]}" --trace "$O/g1_verbose_t%r.json" -- "$cco" "${G1[@]}"
one g1_late LD_PRELOAD="$segv" CCO_VERBOSE=1 CCO_TRACE_DEBUG=late -- "$cco" "${P[@]}" --trace "$O/g1_late_t%r.json" -- "$cco" "${G1[@]}"
one g1_noexit LD_PRELOAD="$segv" CCO_VERBOSE=1 CCO_TRACE_DEBUG=no-exit -- "$cco" "${P[@]}" --trace "$O/g1_noexit_t%r.json" -- "$cco" "${G1[@]}"
one g1_late_noexit LD_PRELOAD="$segv" CCO_VERBOSE=1 CCO_TRACE_DEBUG=late,no-exit -- "$cco" "${P[@]}" --trace "$O/g1_late_noexit_t%r.json" -- "$cco" "${G1[@]}"
one lt_late LD_PRELOAD="$segv" CCO_VERBOSE=1 CCO_TRACE_DEBUG=late -- "$cco" run --policy shape+priority:model --trace "$O/lt_late_t%r.json" -- "$cco" "${B2[@]}"
