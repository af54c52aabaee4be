#!/usr/bin/env bash
# `cco run` (through tests' run driver, the same code cco links): options, one-line errors and
# exit codes, finding the library, the environment it sets, exec (exit codes and signals are the
# command's own), and a fake-driver program under it.
set -u
run=${CCO_RUN:?}
lib=${CCO_PRELOAD_LIB:?}
fakedir=${CCO_FAKE_CUDA_DIR:?}
app=${CCO_FAKE_APP:?}
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset CCO_DISABLE CCO_POLICY CCO_PLAN CCO_STATS CCO_VERBOSE CCO_PRIORITY_METHOD LD_PRELOAD NCCL_MIN_CTAS TORCH_NCCL_HIGH_PRIORITY
libabs=$(readlink -f "$lib")

# expect CODE PATTERN -- ARGS: exit code CODE, and (CODE != 0) one stderr line matching PATTERN
expect() {
  local code=$1 pattern=$2
  shift 3
  "$run" "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  [ "$got" = "$code" ] || fail "cco run $* exited $got, expected $code: $(head -c 300 "$tmp/err")"
  if [ "$code" != 0 ]; then
    [ "$(wc -l <"$tmp/err")" = 1 ] || fail "cco run $*: expected one error line, got: $(cat "$tmp/err")"
    grep -qE -- "$pattern" "$tmp/err" || fail "cco run $*: '$(cat "$tmp/err")' does not match '$pattern'"
  fi
}

echo '{"schema": "ccoverlap.plan", "schema_version": "1.0.0", "shaping": {"default": 0}}' >"$tmp/bad.json"
cat >"$tmp/good.json" <<'JSON'
{"schema": "ccoverlap.plan", "schema_version": "1.0.0", "policy": "tuned",
 "shaping": {"default": 2}, "priority": {"nccl": "high"},
 "environment": {"NCCL_MIN_CTAS": "32", "NCCL_MAX_CTAS": "32"}}
JSON

export CCO_PRELOAD_LIB=$lib
expect 2 "^cco run: error: no command to run \(cco run \[options\] -- CMD \[ARGS...\]\) \(see cco run --help\)$" --
expect 2 "no command to run" -- --policy off
expect 2 "^cco run: error: --policy and --plan conflict: give one" -- --policy off --plan "$tmp/good.json" -- true
expect 2 "^cco run: error: --policy: unknown policy 'fast' \(known: off, priority" -- --policy fast -- true
expect 2 "^cco run: error: --policy: policy 'shape:0': K must be >= 1" -- --policy shape:0 -- true
expect 2 "^cco run: error: --policy needs a value" -- --policy
expect 2 "^cco run: error: unknown option '--frob'" -- --frob -- true
expect 2 "^cco run: error: plan $tmp/missing.json: cannot be read$" -- --plan "$tmp/missing.json" -- true
expect 2 "^cco run: error: plan $tmp/bad.json: shaping.default: must be >= 1 \(blocks per SM\), got 0$" -- --plan "$tmp/bad.json" -- true
expect 1 "^cco run: error: --lib /nonexistent/libcco_preload.so: no such file$" -- --lib /nonexistent/libcco_preload.so -- true
echo "not a library" >"$tmp/fake.so"
expect 1 "^cco run: error: cannot load $tmp/fake.so: " -- --lib "$tmp/fake.so" -- true
expect 127 "^cco run: error: cannot run 'no-such-command-cco': No such file or directory$" -- --policy off -- no-such-command-cco
expect 126 "^cco run: error: cannot run '$tmp/good.json': Permission denied$" -- --policy off -- "$tmp/good.json"

# Finding the library next to the binary (same folder, ../preload, ../lib) when nothing says where.
unset CCO_PRELOAD_LIB
mkdir -p "$tmp/a/bin" "$tmp/a/lib" "$tmp/b/cli" "$tmp/b/preload" "$tmp/c" "$tmp/d/bin"
cp "$run" "$tmp/a/bin/cco"; cp "$lib" "$tmp/a/lib/libcco_preload.so"
cp "$run" "$tmp/b/cli/cco"; cp "$lib" "$tmp/b/preload/libcco_preload.so"
cp "$run" "$tmp/c/cco"; cp "$lib" "$tmp/c/libcco_preload.so"
cp "$run" "$tmp/d/bin/cco"
for layout in "a/bin:a/lib" "b/cli:b/preload" "c:c"; do
  bin=${layout%%:*}; want=$(readlink -f "$tmp/${layout##*:}/libcco_preload.so")
  out=$("$tmp/$bin/cco" --dry-run -- true 2>&1) || fail "lookup in $layout: $out"
  echo "$out" | grep -qx "LD_PRELOAD=$want" || fail "lookup in $layout: $out"
done
"$tmp/d/bin/cco" -- true >"$tmp/out" 2>"$tmp/err"
[ $? = 1 ] && grep -q "^cco run: error: libcco_preload.so not found (looked in $tmp/d/bin/, $tmp/d/bin/../preload/, $tmp/d/bin/../lib/, $tmp/d/bin/../lib64/); pass --lib PATH or set CCO_PRELOAD_LIB$" "$tmp/err" \
  || fail "no library: $(cat "$tmp/err")"
export CCO_PRELOAD_LIB=$lib

# The environment (--dry-run prints it).
out=$("$run" --dry-run -- python3 -c 'print(1)')
[ "$out" = "LD_PRELOAD=$libabs
CCO_POLICY=shape+priority:model
unset CCO_PLAN
python3 -c 'print(1)'" ] || fail "default dry run: $out"
# (ASAN_OPTIONS: a sanitized build of the driver itself must accept a preload list.)
out=$(ASAN_OPTIONS=verify_asan_link_order=0 LD_PRELOAD=/x/other.so CCO_PLAN=/old.json "$run" --policy torch-priority --stats -v --dry-run -- true 2>/dev/null)
[ "$out" = "LD_PRELOAD=/x/other.so:$libabs
CCO_POLICY=torch-priority
unset CCO_PLAN
CCO_STATS=1
CCO_VERBOSE=1
TORCH_NCCL_HIGH_PRIORITY=1
true" ] || fail "torch-priority dry run: $out"
out=$(ASAN_OPTIONS=verify_asan_link_order=0 LD_PRELOAD="$libabs" "$run" --policy off --dry-run -- true)
echo "$out" | grep -q '^LD_PRELOAD=' && fail "the library already in LD_PRELOAD was added again: $out"
cd "$tmp"
out=$(NCCL_MIN_CTAS=16 "$run" --plan good.json --dry-run -- true 2>"$tmp/err")
[ "$out" = "LD_PRELOAD=$libabs
CCO_PLAN=$tmp/good.json
unset CCO_POLICY
NCCL_MAX_CTAS=32
true" ] || fail "plan dry run: $out"
grep -qx "cco run: warning: keeping NCCL_MIN_CTAS=16 from the environment (the plan asks for 32)" "$tmp/err" \
  || fail "conflicting variable: $(cat "$tmp/err")"
cd - >/dev/null
out=$(CCO_DISABLE=1 "$run" --policy off --dry-run -- true 2>&1 >/dev/null)
[ "$out" = "cco run: warning: CCO_DISABLE=1 is set: the library will change nothing" ] || fail "CCO_DISABLE warning: $out"
out=$("$run" --policy=shape:2 --dry-run echo hi)
echo "$out" | grep -qx "CCO_POLICY=shape:2" || fail "--policy=VALUE and a command without --: $out"
echo "$out" | tail -1 | grep -qx "echo hi" || fail "command without --: $out"

# exec: the command's exit code and signals are its own; children inherit the environment.
"$run" --policy off -- sh -c 'exit 3'
[ $? = 3 ] || fail "exit code not forwarded"
"$run" --policy off -- sh -c 'kill -TERM $$' 2>/dev/null
[ $? = 143 ] || fail "a command killed by SIGTERM must look killed by SIGTERM (143)"
out=$("$run" --policy shape:2 --stats -- sh -c 'sh -c "echo \$LD_PRELOAD \$CCO_POLICY \$CCO_STATS"')
[ "$out" = "$libabs shape:2 1" ] || fail "grandchild environment: $out"
out=$("$run" --plan "$tmp/good.json" -- sh -c 'cd / && echo $CCO_PLAN $NCCL_MIN_CTAS')
[ "$out" = "$tmp/good.json 32" ] || fail "plan environment: $out"

# A program under it, end to end (fake libcuda): shaped, prioritised, statistics at exit.
out=$(LD_LIBRARY_PATH="$fakedir" "$run" --policy shape+priority:1 --stats -- "$app" 2>"$tmp/err")
echo "$out" | grep -q "^gemm-legacy variant=0 shmem=115713 " || fail "fake app under cco run: $out"
echo "$out" | grep -q "^nccl-ex variant=2 shmem=0 attrs=1 priority=-5 " || fail "fake app NCCL priority: $out"
grep -q "^cco-preload: stats pid=[0-9]* policy=shape+priority:1 method=launch-attr seen=9 shaped=6" "$tmp/err" \
  || fail "stats under cco run: $(cat "$tmp/err")"

[ $fails = 0 ] && echo "cco run tests: all passed" || echo "cco run tests: $fails failed"
[ $fails = 0 ]
