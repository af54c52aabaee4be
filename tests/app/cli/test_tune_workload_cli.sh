#!/usr/bin/env bash
# cco tune --workload as users run it: flags that do not apply, bad lists and bad workloads are one
# line and exit 2 before any GPU is touched; without a GPU it says so and exits 1. GPU-free.
set -u
cco=${CCO_BIN:?set CCO_BIN to the cco binary}
root=$(cd "$(dirname "$0")/../../.." && pwd)
w="$root/examples/workloads/ddp_llama7b.json"
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect CODE PATTERN -- ARGS: exit code CODE; stderr is one line matching PATTERN (code != 0)
expect() {
  local code=$1 pattern=$2
  shift 3
  "$cco" "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  [ "$got" = "$code" ] || fail "cco $* exited $got, expected $code: $(head -c 300 "$tmp/err")"
  if [ "$code" != 0 ]; then
    [ "$(wc -l <"$tmp/err")" = 1 ] || fail "cco $*: expected one error line, got: $(cat "$tmp/err")"
    grep -qE -- "$pattern" "$tmp/err" || fail "cco $*: error '$(cat "$tmp/err")' does not match '$pattern'"
  fi
}

# Flags of the pair (or of cco bench) that a workload does not take.
expect 2 "--sm-budgets does not apply to --workload: cco tune --workload searches no GEMM SM budget" -- tune --workload "$w" --sm-budgets 100
expect 2 "--gemm-sms does not apply to --workload" -- tune --workload "$w" --gemm-sms 100
expect 2 "-b does not apply to --workload: the workload file sets sizes" -- tune --workload "$w" -b 1M
expect 2 "-b does not apply to --workload" -- tune -b1M --workload "$w"
expect 2 "--minbytes does not apply to --workload" -- tune --workload="$w" --minbytes=1M
expect 2 "--collective does not apply to --workload" -- tune --workload "$w" --collective allgather
expect 2 "--compute does not apply to --workload" -- tune --workload "$w" --compute builtin
expect 2 "-d does not apply to --workload" -- tune --workload "$w" -d half
expect 2 "--modes is a cco bench option: cco tune chooses the modes itself" -- tune --workload "$w" --modes shape
expect 2 "--pad is a cco bench option: cco tune chooses the modes itself" -- tune --workload "$w" --pad 4K
expect 2 "--csv is a cco bench option: cco tune writes a plan" -- tune --workload "$w" --csv out.csv
expect 2 "--bootstrap does not apply to --workload" -- tune --workload "$w" --bootstrap env
expect 2 "--validate is a cco bench option: it belongs to cco bench --workload FILE --validate" -- tune --workload "$w" --validate
expect 2 "^cco tune: error: -a: expected 0 \\(rank 0\\), 1 \\(mean\\), 2 \\(min\\) or 3 \\(max\\) \\(see cco tune --help\\)$" -- tune --workload "$w" -a 7

# Tune's own lists and values.
expect 2 "0 CTAs cannot run" -- tune --workload "$w" --ctas -1,0
expect 2 "--ctas: expected an integer in -1..64, got '99'" -- tune --workload "$w" --ctas 99
expect 2 "--blocks-per-sm: expected an integer in 1..64, got '0'" -- tune --workload "$w" --blocks-per-sm 2,0
expect 2 "--green-sms: expected an integer" -- tune --workload "$w" --green-sms half
expect 2 "--top: expected an integer in 1..100" -- tune --workload "$w" --top 0
expect 2 "--screen-iters: expected an integer" -- tune --workload "$w" --screen-iters x
expect 2 "--budget: expected an integer in 5..86400" -- tune --workload "$w" --budget 1
expect 2 "--plan needs a value" -- tune --workload "$w" --plan
expect 2 "--workload needs a" -- tune --workload

# The step's own flags and the file (the step's parser comes with the CUDA build).
# Every input is checked before any GPU is touched, in a build without CUDA too.
expect 2 "-n: iterations must be 1..100000" -- tune --workload "$w" -n 0
expect 2 "-c: expected 0 or 1" -- tune --workload "$w" -c 2
expect 2 "unknown parameter|nosuch" -- tune --workload "$w" -g 2 --param nosuch=1
expect 2 "layers" -- tune --workload "$w" -g 2 --param layers=many
expect 2 "none.json: cannot be read \\(No such file or directory\\)" -- tune --workload "$tmp/none.json" -g 2
printf '{"schema": "ccoverlap.workload", "schema_version": "1.0.0",\n "bogus": 1}\n' >"$tmp/bad.json"
expect 2 "bad.json:2:[0-9]+: .*bogus" -- tune --workload "$tmp/bad.json" -g 2
# Without -g the ranks are not known yet, but a file that is not JSON, or not there, is refused
# before the GPU check (it said "needs a CUDA GPU" first, exit 1: review).
printf '{\n' >"$tmp/garbage.json"
expect 2 "garbage.json:2:1: JSON syntax" -- tune --workload "$tmp/garbage.json"
expect 2 "none.json: cannot be read \\(No such file or directory\\)" -- tune --workload "$tmp/none.json"
if [ ! -f "$(dirname "$cco")/../../inject/preload/libcco_preload.so" ]; then
  expect 1 "built without CUDA" -- tune --workload "$w" -g 2
fi

if ! nvidia-smi -L >/dev/null 2>&1; then
  expect 1 "needs a CUDA GPU|built without CUDA" -- tune --workload "$w" -g 1 --no-cache
  expect 1 "needs a CUDA GPU|built without CUDA" -- tune --workload "$w" --param layers=1 --cache "$tmp/cache"
fi

if [ $fails -gt 0 ]; then
  echo "$fails cco tune --workload CLI check(s) failed"
  exit 1
fi
echo "all cco tune --workload CLI checks passed"
