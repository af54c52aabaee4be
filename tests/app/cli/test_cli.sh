#!/usr/bin/env bash
# The cco command as users run it: help from the docs, exit codes, one-line errors. GPU-free
# (where a GPU is present, the no-GPU checks are replaced by their GPU counterparts).
set -u
cco=${CCO_BIN:?set CCO_BIN to the cco binary}
docs=$(cd "$(dirname "$0")/../../../docs/cli" && pwd)
root=$(cd "$(dirname "$0")/../../.." && pwd)
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

# Help is the docs page, byte for byte, up to its "Details: ..." line (the man page and the docs
# hold the rest), and fits one screen: at most 45 lines.
"$cco" --help | cmp -s - "$docs/cco.md" || fail "cco --help differs from docs/cli/cco.md"
for c in plan info bench tune run report doctor; do
  sed '/^Details: /q' "$docs/$c.md" >"$tmp/help_$c"
  "$cco" $c --help | cmp -s - "$tmp/help_$c" || fail "cco $c --help differs from docs/cli/$c.md"
  "$cco" $c -h | cmp -s - "$tmp/help_$c" || fail "cco $c -h differs from docs/cli/$c.md"
  "$cco" help $c | cmp -s - "$tmp/help_$c" || fail "cco help $c differs from docs/cli/$c.md"
  n=$("$cco" $c --help | wc -l)
  [ "$n" -le 45 ] || fail "cco $c --help is $n lines (at most 45: the rest goes below its Details line)"
done
"$cco" help | cmp -s - "$docs/cco.md" || fail "cco help differs from docs/cli/cco.md"
expect 2 "^cco help: error: unknown command 'frob' \\(commands: info, plan, bench, tune, run, report, doctor\\)$" -- help frob
"$cco" --version | grep -qE '^ccoverlap [0-9]+\.[0-9]+\.[0-9]+$' || fail "cco --version"
expect 2 "unknown command 'frob'" -- frob
"$cco" >/dev/null 2>&1; [ $? = 2 ] || fail "cco without a command must exit 2"

# plan: good input
out=$("$cco" plan --arch sm_90 --threads 256 --regs 32 --smem 0) || fail "cco plan failed"
echo "$out" | grep -q "blocks per SM: 8 (limited by registers; bounds: warps 8, blocks 32, registers 8" || fail "plan sm_90 256x32: $out"
echo "$out" | grep -qE '^ +1 +115713 +115713 +1 +yes' || fail "plan k=1 padding row: $out"
out=$("$cco" plan --arch H200 --threads 128 --regs 64 --blocks-per-sm 2 --json) || fail "plan --json"
echo "$out" | python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["schema"]=="ccoverlap.footprint"; assert j["occupancy"]["blocks_per_sm"]==8, j; p=j["plans"][0]; assert p["target_blocks_per_sm"]==2 and p["blocks_per_sm"]==2, p' \
  || fail "plan --json content"
out=$("$cco" plan --arch a100 --threads 1024 --regs 64) || fail "plan a100 1024"
echo "$out" | grep -q "nothing to shape" || fail "plan at 1 block per SM should say nothing to shape: $out"

# plan: bad input, one line each, exit 2
expect 2 "unknown architecture 'sm_75'" -- plan --arch sm_75 --threads 256
expect 2 "threads per block must be 1..1024" -- plan --arch sm_90 --threads 2048
expect 2 "threads per block must be 1..1024" -- plan --arch sm_90 --threads 0
expect 2 "registers per thread must be 0..255" -- plan --arch sm_90 --threads 256 --regs 300
expect 2 "registers per thread must be 0..255" -- plan --arch sm_90 --threads 256 --regs -1
expect 2 "blocks-per-sm: must be at least 1" -- plan --arch sm_90 --threads 256 --blocks-per-sm 0
expect 2 "invalid size" -- plan --arch sm_90 --threads 256 --smem lots
# An output whose folder is missing (or that is a folder) is refused before anything runs: the
# program did run first, and a comparison it could not write still exited 0 (review).
expect 2 "^cco run: error: --compare-json $tmp/nodir/c.json: the folder $tmp/nodir does not exist" -- run --compare off,priority --compare-json "$tmp/nodir/c.json" -- sh -c "touch $tmp/ran"
[ -e "$tmp/ran" ] && fail "cco run ran the program before refusing --compare-json"
expect 2 "^cco run: error: --compare-json $tmp: a folder, not a file" -- run --compare off,priority --compare-json "$tmp" -- true
expect 2 "^cco bench: error: --json $tmp/nodir/x.json: the folder $tmp/nodir does not exist" -- bench --json "$tmp/nodir/x.json"
# Standard output that cannot be written is an error, not exit 0 (review: /dev/full).
if [ -w /dev/full ]; then
  for c in "plan --arch sm_90 --threads 256" "--help" "report $root/tests/fixtures/recorded/2026-11-22-h200x2/builtin2048x2_ar256M.json"; do
    # shellcheck disable=SC2086
    "$cco" $c >/dev/full 2>"$tmp/full"; rc=$?
    [ $rc = 1 ] && [ "$(cat "$tmp/full")" = "cco: error: cannot write to standard output: No space left on device" ] ||
      fail "cco $c >/dev/full: exit $rc, '$(cat "$tmp/full")'"
  done
fi
# Whole numbers are decimal everywhere (CLI11 read 010 as eight and 0x20 as 32: review).
expect 2 "^cco plan: error: --threads: expected a whole number in decimal, got '010' \\(a leading 0 is not octal here: write 10\\)" -- plan --arch sm_90 --threads 010
expect 2 "^cco plan: error: --regs: expected a whole number, got '0x20'" -- plan --arch sm_90 --threads 256 --regs 0x20
expect 2 "^cco bench: error: --iters: expected a whole number in decimal, got '0200001'" -- bench -n 0200001
expect 2 "^cco bench: error: --ngpus: expected a whole number in decimal, got '010'" -- bench --workload tp_llama7b --validate -g 010
expect 2 "invalid size" -- plan --arch sm_90 --threads 256 --smem -4
expect 2 "exceeds the opt-in maximum" -- plan --arch sm_90 --threads 256 --dyn-smem 300K
expect 2 "static per-block maximum" -- plan --arch sm_90 --threads 256 --smem 64K
expect 2 "arch" -- plan --threads 256
expect 2 "threads" -- plan --arch sm_90
expect 2 "threads" -- plan --arch sm_90 --threads many
expect 2 "frob" -- plan --arch sm_90 --threads 256 --frob

# bench: bad input is judged before any GPU is touched
expect 2 "unknown collective 'allsum'" -- bench --collective allsum
expect 2 "unknown data type" -- bench -d int3
expect 2 "-e must not be below -b" -- bench -b 1G -e 1M
expect 2 "conflict" -- bench --compute builtin --blocks-per-sm 2 --pad 4K
expect 2 "launches we control" -- bench --modes shape

# tune: bad input is judged before any GPU is touched
expect 2 "0 CTAs cannot run" -- tune --ctas 0
expect 2 "--ctas: expected an integer" -- tune --ctas 99
expect 2 "cco bench option" -- tune --modes shape
expect 2 "one collective size" -- tune -b 1M -e 4M
expect 2 "--plan needs a value" -- tune --plan
expect 2 "unknown collective" -- tune --collective nope
expect 2 "--registers: unknown registration 'pinned'" -- tune --registers none,pinned
expect 2 "--rounds: expected an integer in 1..20" -- tune --rounds 0
expect 2 "--registers does not apply to --workload" -- tune --workload examples/workloads/ddp_llama7b.json --registers window
expect 2 "--nccl-register: unknown registration" -- bench --nccl-register pinned
# Steps take the run-wide budgets of pairs (--gemm-sms, --nccl-register), checked as for pairs.
expect 2 "^cco bench: error: --nccl-register: unknown registration 'pinned'" -- bench --workload examples/workloads/ddp_llama7b.json --nccl-register pinned
expect 2 "^cco bench: error: --gemm-sms: must be positive" -- bench --workload examples/workloads/ddp_llama7b.json --gemm-sms -3
expect 2 "^cco tune: error: --gemm-sms does not apply to --workload: cco tune --workload searches no GEMM SM budget" -- tune --workload examples/workloads/ddp_llama7b.json --gemm-sms 66

# bench --workload --validate needs no GPU; errors point at the line
for w in "$root"/examples/workloads/*.json; do
  "$cco" bench --workload "$w" --validate >"$tmp/v" 2>&1 || fail "validate $(basename "$w"): $(head -3 "$tmp/v")"
done
printf '{"schema": "ccoverlap.workload", "schema_version": "1.0.0",\n "bogus": 1}\n' >"$tmp/bad.json"
expect 2 "bad.json:2:[0-9]+: .*bogus" -- bench --workload "$tmp/bad.json" --validate
# --validate parses exactly what the run parses: flags the run refuses are refused here too.
expect 2 "^cco bench: error: -n: iterations must be 1..100000" -- bench --workload "$root/examples/workloads/ddp_llama7b.json" --validate -n 0
expect 2 "^cco bench: error: --modes: unknown mode 'bogus'" -- bench --workload "$root/examples/workloads/ddp_llama7b.json" --validate --modes bogus
# --gpu-memory goes with --validate (it was refused with it: review), and only with it.
expect 0 "" -- bench --workload tp_llama7b --validate --gpu-memory 80G
expect 0 "" -- bench --workload tp_llama7b --validate --gpu-memory=80G
expect 2 "more than the 0 B a 1.00 GiB GPU leaves" -- bench --workload tp_llama7b --validate --gpu-memory 1G
expect 2 "^cco bench: error: --gpu-memory goes with --validate" -- bench --workload tp_llama7b --gpu-memory 80G
expect 2 "^cco bench: error: --workload given 2 times \\(once at most\\)" -- bench --workload tp_llama7b --workload ddp_llama7b --validate
expect 2 "^cco plan: error: --threads given 2 times \\(once at most\\)" -- plan --arch sm_90 --threads 256 --threads 128
expect 2 "^cco tune: error: --candidates: unknown policy 'bogus'" -- tune --candidates off,bogus -- /bin/true
# Bad values are named before the GPU check (they reached "needs a CUDA GPU" first: review).
expect 2 "^cco bench: error: --modes needs a value \\(got an empty one\\)" -- bench --modes ""
expect 2 "^cco bench: error: -f: step factor must be greater than 1, got -2" -- bench -f -2
expect 2 "^cco tune: error: --json needs a value \\(got an empty one\\)" -- tune --json ""
# A name that is not a file is a shipped workload; an unknown one lists them.
expect 2 "^cco bench: error: --workload nosuch: no such file, and no shipped workload of that name \\(shipped: ddp_llama13b, ddp_llama7b, fsdp_llama7b, moe_mixtral, tp_llama7b\\)" -- bench --workload nosuch --validate
# A gzip file given as a workload says so; a control byte is shown as \xNN (review).
printf '{"a": 1}' | gzip >"$tmp/w.json.gz"
expect 2 "w.json.gz:1:1: JSON syntax: a gzip file: a workload file is plain JSON \\(gunzip it first\\)" -- bench --workload "$tmp/w.json.gz" --validate
printf '\001' >"$tmp/ctl.json"
expect 2 "unexpected character \\\\x01, expected a value" -- bench --workload "$tmp/ctl.json" --validate
# Expressions nest at most 200 levels (6000 parentheses crashed the evaluator: review).
expect 2 "nesting deeper than 200 levels" -- bench --workload "$root/tests/fuzz/regressions/workload/expr_nesting_6000.json" --validate
# No output may name an input: the workload file, a compared or candidate plan. Refused before
# anything runs, and the input is left as it was.
cp "$root/examples/workloads/ddp_llama7b.json" "$tmp/w.json"
before=$(cksum <"$tmp/w.json")
expect 2 "^cco bench: error: --json $tmp/w.json names the input $tmp/w.json: cco bench never overwrites its inputs" -- bench --workload "$tmp/w.json" --validate --json "$tmp/w.json"
expect 2 "^cco tune: error: --plan $tmp/w.json names the input $tmp/w.json: cco tune never overwrites its inputs" -- tune --workload "$tmp/w.json" -g 2 --plan "$tmp/w.json"
[ "$(cksum <"$tmp/w.json")" = "$before" ] || fail "the workload file was changed"
printf '{"schema": "ccoverlap.plan", "schema_version": "1.0.0", "policy": "priority"}\n' >"$tmp/p.json"
expect 2 "^cco tune: error: --out $tmp/p.json names the input $tmp/p.json: cco tune never overwrites its inputs" -- tune --candidates "off,$tmp/p.json" --out "$tmp/p.json" -- true
expect 2 "^cco run: error: --compare-json $tmp/p.json names the input $tmp/p.json: cco run never overwrites its inputs" -- run --compare "off,$tmp/p.json" --compare-json "$tmp/p.json" -- true
grep -q '"policy": "priority"' "$tmp/p.json" || fail "the plan file was changed"

# --validate --json FILE writes the expanded step (with its memory per GPU); "-" is stdout
"$cco" bench --workload "$root/examples/workloads/ddp_llama7b.json" --validate --json "$tmp/v.json" >/dev/null 2>&1 \
  || fail "--validate --json"
grep -q '"memory_per_gpu_bytes"' "$tmp/v.json" 2>/dev/null || fail "--validate --json wrote no step JSON"
"$cco" bench --workload "$root/examples/workloads/ddp_llama7b.json" --validate --json - 2>/dev/null | grep -q '"ops"' \
  || fail "--validate --json - wrote no JSON on stdout"
expect 2 "--json needs a value \\(got an empty one\\)" -- bench --workload "$root/examples/workloads/ddp_llama7b.json" --validate --json ''

# An unknown option is named (not the value after it) and a close one suggested.
expect 2 "^cco bench: error: unknown option '-t' \(nccl-tests' threads per process: cco runs one rank per GPU; give the GPU count with -g\) \(see cco bench --help\)$" -- bench -t 2
expect 2 "^cco bench: error: unknown option '--iter' \(did you mean --iters\?\)" -- bench --iter 5
expect 2 "^cco report: error: unknown option '--fromat' \(did you mean --format\?\)" -- report x.json --fromat csv
expect 2 "^cco run: error: unknown option '--polcy' \(did you mean --policy\?\)" -- run --polcy off -- true
expect 2 "^cco tune: error: unknown option '--candidate' \(did you mean --candidates\?\)" -- tune --candidate off -- true
expect 2 "^cco plan: error: unknown option '--zzzzzz' \(see" -- plan --zzzzzz

# report: unreadable input is one line, exit 2; a recorded bench JSON gives a chart
expect 2 "nonexistent" -- report "$tmp/nonexistent.json"
"$cco" report "$root/tests/fixtures/recorded/2026-11-22-h200x2/builtin2048x2_ar256M.json" --svg "$tmp/sweep.svg" >/dev/null 2>&1 \
  || fail "report of a recorded bench JSON"
grep -q "<svg" "$tmp/sweep.svg" 2>/dev/null || fail "report --svg wrote no SVG"
# "-" reads standard input, once
"$cco" report - <"$root/tests/fixtures/recorded/2026-11-22-h200x2/builtin2048x2_ar256M.json" >"$tmp/stdin.txt" 2>&1 \
  || fail "report - (standard input): $(cat "$tmp/stdin.txt")"
"$cco" report "$root/tests/fixtures/recorded/2026-11-22-h200x2/builtin2048x2_ar256M.json" >"$tmp/file.txt" 2>&1
# (the same report; only the source named in its first line differs)
cmp -s <(tail -n +2 "$tmp/stdin.txt") <(tail -n +2 "$tmp/file.txt") || fail "report - differs from the same file named"
expect 2 "standard input \(-\) can be read once" -- report - -

# run: a tuned plan (made_for) is not applied blindly
cat >"$tmp/tuned.json" <<'PLAN'
{"schema": "ccoverlap.plan", "schema_version": "1.0.0", "policy": "tuned",
 "priority": {"nccl": "high"}, "made_for": {"device": "Some Other GPU", "sms": 7}}
PLAN
expect 2 "made for Some Other GPU" -- run --plan "$tmp/tuned.json" -- true
# (needs the preload library, which only builds with CUDA)
if [ -f "$(dirname "$cco")/../../inject/preload/libcco_preload.so" ]; then
  "$cco" run --plan "$tmp/tuned.json" --force --dry-run -- true >/dev/null 2>&1 || fail "run --force --dry-run with a made_for plan"
fi
expect 2 "conflict" -- run --policy off --plan "$tmp/tuned.json" -- true
# --trace: a bad placeholder or a folder that does not exist is refused before anything runs
"$cco" run --trace "$tmp/t_%d.json" --policy off -- true >/dev/null 2>"$tmp/err"; rc=$?
[ $rc = 2 ] && [ "$(grep -c . "$tmp/err")" = 1 ] && grep -q "unknown placeholder %d" "$tmp/err" || fail "cco run --trace with %d: rc=$rc $(cat "$tmp/err")"
"$cco" run --trace "$tmp/no/such/t.json" --policy off -- true >/dev/null 2>"$tmp/err"; rc=$?
[ $rc = 2 ] && grep -q "does not exist" "$tmp/err" || fail "cco run --trace into a missing folder: rc=$rc $(cat "$tmp/err")"

if nvidia-smi -L >/dev/null 2>&1; then
  "$cco" info >"$tmp/info" || fail "cco info failed on a GPU machine"
  grep -q "^device 0:" "$tmp/info" || fail "cco info lists no device on a GPU machine"
  expect 2 "GPU\\(s\\) visible" -- bench -g 64 -n 1 -w 0 -b 1M
else
  "$cco" info >"$tmp/info" || fail "cco info must exit 0 without a GPU"
  grep -q "no CUDA GPU usable here" "$tmp/info" || fail "cco info without GPU: $(cat "$tmp/info")"
  grep -q "sm_90" "$tmp/info" || fail "cco info without GPU lists the built-in architectures"
  "$cco" info --json | python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["devices"]==[] and len(j["builtin"])==4' \
    || fail "cco info --json without a GPU"
  expect 1 "needs a CUDA GPU|built without CUDA \(CCO_ENABLE_CUDA=OFF\): measuring needs a build with the CUDA Toolkit" -- bench -n 1
  expect 1 "needs a CUDA GPU|built without CUDA \(CCO_ENABLE_CUDA=OFF\): measuring needs a build with the CUDA Toolkit" -- tune -b 1M
  expect 2 "live needs a (CUDA GPU|cco built with CUDA)" -- plan --arch live --threads 256
fi

# Every subcommand parses with CLI11 and words its errors the same way.
for c in plan info bench tune report doctor; do
  expect 2 "^cco $c: error: unknown option '--frob' \\(" -- $c --frob
done
expect 2 "^cco run: error: unknown option '--frob' \\(" -- run --frob -- true
expect 2 "^cco tune: error: unknown option '--frob' " -- tune --frob=3 -- true
expect 2 "^cco report: error: --range needs a value \\(" -- report --range= x.json
expect 2 "^cco bench: error: --iters needs a value \\(" -- bench --iters=
expect 2 "^cco bench: error: --iters: expected a whole number, got 'x' \\(" -- bench -n x
expect 2 "^cco run: error: --compare needs a value \\(" -- run --compare
expect 2 "^cco run: error: --compare needs a value \\(" -- run --compare= -- true
expect 2 "^cco run: error: --steps-out needs a value \\(" -- run --steps-out -- true
expect 2 "^cco doctor: error: --json takes no value \\(got 'x'\\) \\(" -- doctor --json=x
expect 2 "^cco tune: error: -d all: cco tune tunes one data type \\(give -d TYPE\\)" -- tune -d all -b 1M
expect 2 "^cco report: error: --json given twice \\(" -- report --json x.json y.json --json

# One flag vocabulary, one parser: bench, tune (a pair) and tune --workload word the same input
# the same way, and cco run and cco tune -- CMD their shared options. (As CLI11 does, an option
# takes the next argument as its value whatever it looks like: a value is missing at the end.)
w="$root/examples/workloads/ddp_llama7b.json"
for c in "bench" "bench --workload $w" "tune" "tune --workload $w"; do
  n=${c%% *}
  expect 2 "^cco $n: error: --iters: expected a whole number, got 'x' \\(see cco $n --help\\)$" -- $c -n x
  expect 2 "^cco $n: error: --json needs a value \\(see cco $n --help\\)$" -- $c --json=
  expect 2 "^cco $n: error: --json needs a value \\(see cco $n --help\\)$" -- $c -q --json
done
expect 2 "^cco tune: error: --plan needs a value \\(see cco tune --help\\)$" -- tune -b 1M --plan=
expect 2 "^cco tune: error: --top needs a value \\(see cco tune --help\\)$" -- tune --workload "$w" --top=
expect 2 "^cco tune: error: --retune takes no value \\(got 'x'\\) \\(see cco tune --help\\)$" -- tune --workload "$w" --retune=x
for c in bench tune; do
  expect 2 "^cco $c: error: --workload needs a value \\(see cco $c --help\\)$" -- $c --workload
done
expect 2 "^cco bench: error: --param needs a value \\(see cco bench --help\\)$" -- bench --workload "$w" --param
for c in run tune; do
  expect 2 "^cco $c: error: --warmup 'x' is not a step count \\(0 to 1000000\\) \\(see cco $c --help\\)$" -- $c --warmup x -- true
  expect 2 "^cco $c: error: --step-nvtx needs a range name \\(see cco $c --help\\)$" -- $c --step-nvtx= -- true
  expect 2 "^cco $c: error: --lib needs a value \\(see cco $c --help\\)$" -- $c --lib -- true
done

# doctor: one line per check; without a GPU the GPU check fails (exit 1), with one it passes.
expect 2 "unknown option '--frob'" -- doctor --frob
"$cco" doctor --no-python >"$tmp/doc" 2>&1
rc=$?
grep -qE '^(ok|warn|FAIL|skip) +preload library' "$tmp/doc" || fail "cco doctor: no preload line: $(cat "$tmp/doc")"
grep -qE '^skip +PyTorch +not asked' "$tmp/doc" || fail "cco doctor --no-python asked PyTorch"
if nvidia-smi -L >/dev/null 2>&1; then
  grep -qE '^ok +GPUs' "$tmp/doc" || fail "cco doctor on a GPU machine: $(cat "$tmp/doc")"
else
  [ $rc = 1 ] || fail "cco doctor without a GPU must exit 1 (got $rc)"
  grep -qE '^FAIL +GPUs' "$tmp/doc" || fail "cco doctor without a GPU: $(cat "$tmp/doc")"
fi
"$cco" doctor --no-python --json | python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["schema"]=="ccoverlap.doctor" and any(c["name"]=="launcher" for c in j["checks"]), j' \
  || fail "cco doctor --json"
# A ./torch.py in the current folder is never imported by doctor's PyTorch check (issue 46): it
# would run, and stand for the real PyTorch in the verdict.
if command -v python3 >/dev/null; then
  mkdir -p "$tmp/shadow"
  printf 'open("%s/shadow/RAN", "w").write("x")\n__version__ = "0.0-shadow"\n' "$tmp" >"$tmp/shadow/torch.py"
  (cd "$tmp/shadow" && "$cco" doctor >"$tmp/doc" 2>&1)
  [ ! -e "$tmp/shadow/RAN" ] && ! grep -q "0.0-shadow" "$tmp/doc" ||
    fail "cco doctor imported ./torch.py from the current folder: $(cat "$tmp/doc")"
fi
# Started by a parent that ignores SIGCHLD (inherited), cco still reads the program's own exit
# status: 7 stays 7 (it was 3 under --compare, 1 under tune; issue 46).
# (cco run and tune -- need the preload library: a GPU-free build without the CUDA headers has none.)
if ! "$cco" run --dry-run -- true >/dev/null 2>&1; then
  echo "cco run has no preload library in this build: the SIGCHLD checks are left out"
elif command -v python3 >/dev/null; then
  for args in "run --compare off,priority" "run" "tune --out $tmp/sigchld-plan.json"; do
    rc=$(cd "$tmp" && python3 -c 'import signal, subprocess, sys
print(subprocess.run(sys.argv[1:], preexec_fn=lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN),
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode)' "$cco" $args -- sh -c 'exit 7')
    [ "$rc" = 7 ] || fail "cco $args with SIGCHLD ignored by its parent: exit $rc, the program's was 7"
  done
fi
RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 "$cco" doctor --no-python >"$tmp/doc" 2>&1
grep -qE '^FAIL +launcher .*MASTER_PORT' "$tmp/doc" || fail "cco doctor: torchrun without MASTER_PORT: $(cat "$tmp/doc")"

# -d all and --in-place (issue 19, item 6): refused in one line before any GPU where they do not
# apply; cco report reads a result of several types (a table, rows and a chart per type) and
# compares two type by type.
expect 2 "^cco bench: error: -d: 'all' stands alone \\(it runs float, half and bfloat16\\), got 'all,half' \\(see cco bench --help\\)$" -- bench -d all,half
expect 2 "^cco bench: error: -d: half is given twice in 'half,fp16' \\(see cco bench --help\\)$" -- bench -d half,fp16
expect 2 "^cco bench: error: -d does not apply to --workload: the workload file sets sizes and types" -- bench --workload "$w" -d all
expect 2 "^cco bench: error: --in-place: expected 0 or 1 \\(see cco bench --help\\)$" -- bench --in-place 2
expect 2 "^cco bench: error: --in-place does not apply to --workload: " -- bench --workload "$w" --in-place 1
expect 2 "^cco tune: error: --in-place is a cco bench option: " -- tune -b 1M --in-place 1
expect 2 "^cco bench: error: -G does not apply to --workload: a step's runs are timed on streams" -- bench --workload "$w" -G 5
expect 2 "^cco tune: error: -G is a cco bench option: cco tune times runs on streams" -- tune -b 1M -G 5
rec="$root/tests/fixtures/recorded/2026-11-22-h200x2/builtin2048x2_ar256M.json"
python3 - "$rec" "$tmp" <<'PY' || fail "could not make the typed bench results"
import copy, json, sys
j = json.load(open(sys.argv[1]))
def typed(types, name):
    out = copy.deepcopy(j)
    out["workload"]["datatype"] = "all"
    out["results"] = []
    for t in types:
        for r in j["results"]:
            x = copy.deepcopy(r)
            x["dtype"] = t
            x["t_comm_in_place"] = copy.deepcopy(r["t_comm"])
            x["t_comm_in_place"]["median_us"] = 800.0
            x["comm_busbw_gbps"], x["in_place_busbw_gbps"] = 295.1, 335.5
            out["results"].append(x)
    json.dump(out, open(sys.argv[2] + "/" + name, "w"))
typed(["float", "half"], "all.json")
typed(["bfloat16", "half"], "bf.json")
PY
"$cco" report "$tmp/all.json" >"$tmp/out" 2>&1 || fail "report of a -d all result: $(head -3 "$tmp/out")"
[ "$(grep -c '^# bench sweep: ' "$tmp/out")" = 2 ] || fail "report -d all: one table per type: $(cat "$tmp/out")"
grep -q '|| allreduce half, 2 ranks' "$tmp/out" || fail "report -d all: the half table names its type"
grep -q '^# collective alone at 256M: out of place .* us, in place 800 us (busbw 295.1 and 335.5 GB/s)$' "$tmp/out" \
  || fail "report -d all: the in-place line: $(grep 'collective alone' "$tmp/out")"
"$cco" report "$tmp/all.json" --format csv >"$tmp/out" || fail "report -d all --format csv"
[ "$(head -1 "$tmp/out" | cut -d, -f1-2)" = "dtype,size_bytes" ] || fail "report -d all csv header: $(head -1 "$tmp/out")"
[ "$(grep -c '^dtype,' "$tmp/out")" = 1 ] || fail "report -d all csv: one header line"
[ "$(grep -c '^half,268435456,' "$tmp/out")" = 9 ] || fail "report -d all csv: half's nine rows"
"$cco" report "$tmp/all.json" --svg "$tmp/typed.svg" >"$tmp/out" || fail "report -d all --svg"
grep -q "<svg" "$tmp/typed.float.svg" && grep -q "<svg" "$tmp/typed.half.svg" || fail "report -d all --svg: a chart per type"
"$cco" report "$tmp/all.json" --json | python3 -c 'import json,sys; r=json.load(sys.stdin)["rows"]; assert len(r)==18 and r[0]["dtype"]=="float" and r[17]["dtype"]=="half", r' \
  || fail "report -d all --json: rows carry their type"
"$cco" report "$tmp/all.json" "$tmp/all.json" --format csv >"$tmp/out" || fail "compare two -d all results"
[ "$(grep -c ',~,' "$tmp/out")" = 18 ] && head -1 "$tmp/out" | grep -q '^dtype,size_bytes,label' || fail "compare -d all: $(head -3 "$tmp/out")"
"$cco" report "$rec" "$tmp/bf.json" >"$tmp/out" || fail "compare bfloat16 with a typed result"
grep -q '^# data type half: only in B, not compared$' "$tmp/out" && [ "$(grep -c '^ .* ~ ' "$tmp/out")" = 9 ] \
  || fail "compare bfloat16 with bfloat16+half: $(head -5 "$tmp/out")"
"$cco" report "$rec" "$tmp/bf.json" --json | python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["only_in_b"]==["half"] and len(j["rows"])==9 and j["rows"][0]["dtype"]=="bfloat16", j' \
  || fail "compare --json with types"
expect 2 "share no collective data type: nothing to compare$" -- report "$rec" "$tmp/all.json"

# Step and tune results (issue 19, item 4): one printed and drawn, two of one kind compared, two
# kinds refused in one line.
fx="$root/tests/fixtures/report"
"$cco" report "$fx/step_a.json" --svg "$tmp/step.svg" >"$tmp/out" 2>&1 || fail "report of a step result: $(head -3 "$tmp/out")"
grep -q '^# step result: ' "$tmp/out" && grep -q '<svg' "$tmp/step.svg" || fail "report step: table and chart"
"$cco" report "$fx/step_a.json" --format csv | head -1 | grep -q '^label,mode,t_us,p25_us,p75_us,spread,' \
  || fail "report step --format csv header"
"$cco" report "$fx/tune_step_a.plan.json" >"$tmp/out" 2>&1 || fail "report of a tune result: $(head -3 "$tmp/out")"
grep -qE '^  shape k=3 .* choice$' "$tmp/out" || fail "report tune: the choice is marked: $(cat "$tmp/out")"
"$cco" report "$fx/step_a.json" "$fx/step_b.json" --format csv >"$tmp/out" || fail "compare two steps"
grep -q '^concurrent,800,0.025,600,0.0333333,0.75,faster,' "$tmp/out" || fail "compare steps: $(cat "$tmp/out")"
"$cco" report "$fx/tune_step_a.plan.json" "$fx/tune_step_b.plan.json" --json \
  | python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["kind"]=="tune" and j["rows"][0]["verdict"]=="faster", j' \
  || fail "compare two tunes --json"
expect 2 "^cco report: error: cannot compare a step result \(.*step_a.json\) with a bench result \(.*\): give two results of one kind" -- report "$fx/step_a.json" "$rec"
"$cco" plan --arch sm_90 --threads 256 --regs 32 --json >"$tmp/plan.json" || fail "plan --json for report"
"$cco" report "$tmp/plan.json" >"$tmp/out" 2>&1 || fail "report of plan --json: $(cat "$tmp/out")"
grep -q "^# cco plan --json (.*plan.json): a kernel's footprint on" "$tmp/out" || fail "report of plan --json: $(cat "$tmp/out")"
grep -q "^# blocks per SM: 8 (limited by registers)" "$tmp/out" || fail "report of plan --json: $(cat "$tmp/out")"
"$cco" doctor --json >"$tmp/doctor.json" 2>/dev/null
"$cco" report "$tmp/doctor.json" >"$tmp/out" 2>&1 || fail "report of doctor --json: $(cat "$tmp/out")"
grep -qE "^(ok|FAIL|warn|skip) +GPUs: " "$tmp/out" || fail "report of doctor --json: $(cat "$tmp/out")"
"$cco" info --json >"$tmp/info.json"
"$cco" report "$tmp/info.json" >"$tmp/out" 2>&1 || fail "report of info --json: $(cat "$tmp/out")"
grep -q "^devices: " "$tmp/out" || fail "report of info --json: $(cat "$tmp/out")"
expect 2 "^cco report: error: --svg does not apply to .*info.json \(ccoverlap.info\): it is printed as text" -- report "$tmp/info.json" --svg "$tmp/x.svg"

if [ $fails -gt 0 ]; then
  echo "$fails CLI check(s) failed"
  exit 1
fi
echo "all CLI checks passed"
