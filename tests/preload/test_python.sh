#!/usr/bin/env bash
# The Python module ccoverlap (python/ccoverlap) against the real libcco_preload.so and a fake
# libcuda.so.1, GPU-free: without the library it says so once and does nothing; with it, step
# marks make a step file, policies switch and are restored, bad ones raise; under
# `cco run --compare` the policy in force follows the rotation schedule step by step.
set -u
lib=${CCO_PRELOAD_LIB:?}
fakedir=${CCO_FAKE_CUDA_DIR:?}
cco=${CCO_BIN:?}
src=${CCO_SOURCE_DIR:?}
if ! command -v python3 >/dev/null; then
  echo "python3 not found: the Python module cannot be tested"; exit 1
fi
export PYTHONPATH="$src/python"
unset CCO_DISABLE CCO_POLICY CCO_PLAN CCO_STATS CCO_VERBOSE CCO_PRIORITY_METHOD CCO_COMPARE \
  CCO_STEPS_DIR CCO_WARMUP_STEPS CCO_TUNE CCO_TUNE_STEPS CCO_TUNE_TIME CCO_TUNE_WAIT RANK OMPI_COMM_WORLD_RANK PMI_RANK SLURM_PROCID
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# --- without the library: one line, nothing done ---------------------------------------------
python3 - 2>"$tmp/err" <<'PY' || fail "module without the library: $(cat "$tmp/err")"
import ccoverlap
assert not ccoverlap.available()
assert ccoverlap.step() is False
with ccoverlap.policy("shape:1"):
    pass
assert ccoverlap.stats() == []
assert ccoverlap.current_policy() is None
PY
n=$(grep -c "not loaded" "$tmp/err")
[ "$n" = 1 ] || fail "expected one 'not loaded' line, got $n: $(cat "$tmp/err")"

# --- with the library: marks, policies, stats, the step file ---------------------------------
mkdir "$tmp/steps"
env LD_LIBRARY_PATH="$fakedir" LD_PRELOAD="$lib" CCO_STEPS_DIR="$tmp/steps" python3 - \
  2>"$tmp/err" <<'PY' || fail "module with the library: $(cat "$tmp/err")"
import ctypes, time, ccoverlap
ctypes.CDLL("libcuda.so.1", mode=ctypes.RTLD_GLOBAL)  # the driver is up, as once PyTorch starts CUDA
assert ccoverlap.available()
for _ in range(10):
    assert ccoverlap.step() is True
    time.sleep(0.01)
before = ccoverlap.current_policy()
assert before == "priority", before
with ccoverlap.policy("shape:1"):
    assert ccoverlap.current_policy() == "shape:1"
assert ccoverlap.current_policy() == before
for bad in ("no-such-policy", "channels:4", "priority@stream"):
    try:
        with ccoverlap.policy(bad):
            raise SystemExit(f"{bad} was accepted")
    except ValueError as e:
        assert "ccoverlap.policy" in str(e), e
        if bad == "channels:4":  # a rank's own switch could come at another collective
            assert "same collective on every rank" in str(e), e
assert ccoverlap.current_policy() == before
with ccoverlap.policy("sm-target:66"):  # the SM budget is read at every GEMM: it switches
    assert ccoverlap.current_policy() == "sm-target:66"
assert ccoverlap.current_policy() == before
st = ccoverlap.stats()
assert any(d.get("policy") == "shape:1" for d in st), st
PY
f=$(ls "$tmp/steps"/steps-*.json 2>/dev/null | head -1)
if [ -z "$f" ]; then
  fail "no step file written"
else
  python3 - "$f" <<'PY' || fail "step file: $(cat "$f")"
import sys, ccoverlap
rows = ccoverlap.read_steps(sys.argv[1])
rows = rows.to_dict("records") if hasattr(rows, "to_dict") else rows
assert len(rows) == 9, len(rows)
assert all(r["source"] == "marker" for r in rows)
assert all(9.0 <= r["host_ms"] < 200 for r in rows), [r["host_ms"] for r in rows]
PY
fi

# --- cco run --compare: the policy in force follows the schedule ----------------------------
cat >"$tmp/loop.py" <<'PY'
import ctypes, sys, time, ccoverlap
ctypes.CDLL("libcuda.so.1", mode=ctypes.RTLD_GLOBAL)
seen = []
for _ in range(int(sys.argv[1])):
    ccoverlap.step()
    seen.append(ccoverlap.current_policy())
    time.sleep(0.005)
print("seen " + " ".join(seen))
PY
out=$(env LD_LIBRARY_PATH="$fakedir" CCO_PRELOAD_LIB="$lib" "$cco" run --compare off,shape:1 \
  --warmup 2 --compare-json "$tmp/cmp.json" -- python3 "$tmp/loop.py" 16 2>"$tmp/err")
rc=$?
[ $rc = 0 ] || fail "cco run --compare exited $rc: $out $(cat "$tmp/err")"
# Steps 0-1 warm up under off; then A B B A A B B A ... (the mark of step k switches to its config).
want="seen off off off shape:1 shape:1 off off shape:1 shape:1 off off shape:1 shape:1 off off shape:1"
got=$(grep '^seen' <<<"$out")
[ "$got" = "$want" ] || fail "rotation: got '$got', want '$want'"
grep -q '^# compare: 6 rounds of 2 steps (steps found from marker)' <<<"$out" ||
  fail "no comparison of 6 rounds: $out"
grep -q 'too few rounds (6)\|within noise\|slower\|faster' <<<"$out" || fail "no paired line: $out"
python3 -c "import ccoverlap; r=ccoverlap.read_compare('$tmp/cmp.json'); r=r.to_dict('records') if hasattr(r,'to_dict') else r; assert [x['name'] for x in r]==['off','shape:1'], r" 2>"$tmp/err" ||
  fail "compare JSON: $(cat "$tmp/err")"

# A program with neither collectives nor marks: refused, one line, exit 3.
out=$(env LD_LIBRARY_PATH="$fakedir" CCO_PRELOAD_LIB="$lib" "$cco" run --compare off,shape:1 \
  -- python3 -c "import ccoverlap; ccoverlap.available()" 2>&1)
rc=$?
[ $rc = 3 ] || fail "no steps: exit $rc, want 3: $out"
grep -q "refused: no step file was written: the program made no kernel launch" <<<"$out" ||
  fail "no refusal line: $out"

# --- cco tune -- CMD: the online search picks the fastest policy; ranks agree ------------------
# Each marked step sleeps by the policy in force: priority 4 ms, off 12 ms, shape:1 20 ms (host
# times: the fake driver has no event timing).
cat >"$tmp/tune.py" <<'PY'
import ctypes, os, sys, time, ccoverlap
ctypes.CDLL("libcuda.so.1", mode=ctypes.RTLD_GLOBAL)
cost = {"priority": 0.004, "off": 0.012, "shape:1": 0.020}
seen = []
for _ in range(int(sys.argv[1])):
    ccoverlap.step()
    p = ccoverlap.current_policy()
    seen.append(p)
    time.sleep(cost[p])
print("rank%s %s" % (os.environ.get("RANK", "-"), " ".join(seen)), flush=True)
PY
out=$(cd "$tmp" && env LD_LIBRARY_PATH="$fakedir" CCO_PRELOAD_LIB="$lib" "$cco" tune \
  --candidates off,priority,shape:1 --steps 30 --warmup 2 --out "$tmp/plan.json" \
  -- python3 "$tmp/tune.py" 400 2>"$tmp/err")
rc=$?
[ $rc = 0 ] || fail "cco tune exited $rc: $out $(cat "$tmp/err")"
grep -q '"policy": "priority"' "$tmp/plan.json" 2>/dev/null || fail "tuned plan: $(cat "$tmp/plan.json" 2>&1) $(cat "$tmp/err")"
grep -q '"generated_by": "cco tune -- CMD"' "$tmp/plan.json" || fail "plan provenance: $(cat "$tmp/plan.json")"
grep -q 'stage 2 of 2 keeps off, priority' "$tmp/err" || fail "no stage line (shape:1 dropped): $(cat "$tmp/err")"
grep -q 'the winner is priority (one left)' "$tmp/err" || fail "no winner line: $(cat "$tmp/err")"
grep -q 'stopping the program' "$tmp/err" || fail "the program was not stopped after the search: $(cat "$tmp/err")"
grep -q '^# plan written to' <<<"$out" || fail "no plan line: $out"
grep -qE '^priority +[0-9]+ +[0-9.]+ .* -[0-9.]+ \[-[0-9.]+, -[0-9.]+\] over' <<<"$out" ||
  fail "no paired line for the winner: $out"
[ -f "$tmp/plan.steps/tune.json" ] || fail "no decision file kept in plan.steps"
"$cco" run --plan "$tmp/plan.json" --dry-run -- true | grep -q '^CCO_PLAN=' || fail "the plan does not apply with cco run --plan"
# An earlier run's folder is refused, one line.
out=$(cd "$tmp" && env CCO_PRELOAD_LIB="$lib" "$cco" tune --out "$tmp/plan.json" -- true 2>&1)
[ $? = 2 ] && grep -q 'already holds a tuning run' <<<"$out" || fail "reused folder: $out"

# Two ranks (one deciding, one following), --online: both run the same policy at every step.
cat >"$tmp/two.sh" <<SH
RANK=0 python3 "$tmp/tune.py" 80 >"$tmp/rank0.out" &
RANK=1 python3 "$tmp/tune.py" 80 >"$tmp/rank1.out"
wait
SH
out=$(env LD_LIBRARY_PATH="$fakedir" CCO_PRELOAD_LIB="$lib" "$cco" tune --online \
  --candidates off,priority,shape:1 --steps 30 --warmup 2 --out "$tmp/plan2.json" \
  -- bash "$tmp/two.sh" 2>"$tmp/err")
rc=$?
[ $rc = 0 ] || fail "cco tune --online, two ranks: exit $rc: $out $(cat "$tmp/err")"
r0=$(sed 's/^rank0 //' "$tmp/rank0.out" 2>/dev/null); r1=$(sed 's/^rank1 //' "$tmp/rank1.out" 2>/dev/null)
[ -n "$r0" ] && [ "$r0" = "$r1" ] || fail "ranks disagree: rank0 '$r0' rank1 '$r1'"
[ "$(tr ' ' '\n' <<<"$r0" | tail -1)" = priority ] || fail "--online: the winner does not run to the end: $r0"
grep -q '^# cco tune: search complete' <<<"$out" || fail "two ranks: $out"

[ $fails = 0 ] && echo "all python checks passed"
exit $fails
