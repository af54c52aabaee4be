#!/usr/bin/env bash
# cco starts without NCCL or cuBLASLt: neither is a link dependency (src/gpu/runtime/lazy.hpp), so
# the commands that need neither run, and those that do say what is missing in one line.
set -u
cco=${CCO_BIN:?set CCO_BIN to the cco binary}
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Not a DT_NEEDED of the binary (the loader would refuse to start it without them).
if command -v readelf >/dev/null; then
  needed=$(readelf -d "$cco" | grep NEEDED)
  echo "$needed" | grep -qiE "libnccl|libcublas" && fail "cco links NCCL or cuBLAS: $needed"
else
  echo "readelf not found: the DT_NEEDED check is not made"
fi

# Names that cannot load stand in for a machine without them.
export CCO_NCCL_LIB=/nonexistent/libnccl.so.2 CCO_CUBLASLT_LIB=/nonexistent/libcublasLt.so.13
"$cco" --help >/dev/null || fail "cco --help without NCCL"
"$cco" plan --arch sm_90 --threads 256 --regs 32 >/dev/null || fail "cco plan without NCCL"
"$cco" bench --workload "$(dirname "$0")/../../../examples/workloads/ddp_llama7b.json" -g 2 --validate >/dev/null ||
  fail "cco bench --workload --validate without NCCL"
out=$("$cco" info 2>&1)
echo "$out" | grep -q "cuBLASLt not found, NCCL not found" || fail "cco info without NCCL: $out"
out=$("$cco" info --json 2>/dev/null)
echo "$out" | python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["versions"]["nccl"]=="", j["versions"]' ||
  fail "cco info --json without NCCL: $out"
"$cco" doctor --no-python >"$tmp/doc" 2>&1
grep -qE "^FAIL +NCCL \(cco's\) +not loaded: /nonexistent/libnccl.so.2" "$tmp/doc" ||
  fail "cco doctor without NCCL: $(cat "$tmp/doc")"
grep -qE "^FAIL +cuBLASLt +not loaded: /nonexistent/libcublasLt.so.13" "$tmp/doc" ||
  fail "cco doctor without cuBLASLt: $(cat "$tmp/doc")"

# A name without '/' is a library-path name (as dlopen takes it): a file of that name here is not
# it, and the message says so (review: "No such file" for a file that exists).
echo "not a library" >"$tmp/local.so"
out=$(cd "$tmp" && CCO_NCCL_LIB=local.so "$cco" doctor --no-python 2>&1)
echo "$out" | grep -q "a name without '/' is looked up in the library path, not in this folder: write ./local.so" ||
  fail "CCO_NCCL_LIB=local.so with ./local.so present: $out"
[ $fails = 0 ] && echo "lazy libraries: all checks passed"
exit $((fails > 0))
