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

# ccoverlap.frame(): a tuned plan gives the rows its search tried; nested numbers become flat
# columns (t_us {median} -> t_median_us).
cat >"$tmp/tplan.json" <<'JSON'
{"schema": "ccoverlap.plan", "schema_version": "1.0.0", "policy": "tuned",
 "tuning": {"choice": {"label": "shape k=2"}, "notes": [],
            "tried": [{"label": "concurrent", "t_us": 120.5, "reduction": 0.1},
                      {"label": "shape k=2", "t_us": 100.0, "reduction": 0.2}]}}
JSON
cat >"$tmp/nested.json" <<'JSON'
{"schema": "x", "rows": [{"label": "seq", "t_us": {"median": 5.0, "p25": 4.0}, "n": 3}]}
JSON
python3 -c "
import ccoverlap, sys
rows = ccoverlap.frame(sys.argv[1])
rows = rows.to_dict('records') if hasattr(rows, 'to_dict') else rows
assert [r['label'] for r in rows] == ['concurrent', 'shape k=2'], rows
assert rows[1]['t_us'] == 100.0, rows
rows = ccoverlap.frame(sys.argv[2])
rows = rows.to_dict('records') if hasattr(rows, 'to_dict') else rows
assert rows[0]['t_median_us'] == 5.0 and rows[0]['t_p25_us'] == 4.0 and rows[0]['n'] == 3, rows
" "$tmp/tplan.json" "$tmp/nested.json" 2>"$tmp/err" || fail "ccoverlap.frame: $(cat "$tmp/err")"

# ccoverlap.frame() of a trace analysis (cco report TRACE --json): a row per rank and step of the
# diagnosis, its bounds as flat columns (issue 34 item 6).
"$cco" report "$src/tests/fixtures/report/trace_rank0.json" "$src/tests/fixtures/report/trace_rank1.json" \
  --json="$tmp/analysis.json" >/dev/null 2>"$tmp/err" || fail "cco report --json of two ranks: $(cat "$tmp/err")"
python3 -c "
import ccoverlap, sys
rows = ccoverlap.frame(sys.argv[1])
rows = rows.to_dict('records') if hasattr(rows, 'to_dict') else rows
assert sorted({r['rank'] for r in rows}) == [0, 1], rows
assert all('bounds_scheduling_ns' in r and 'time_ns' in r for r in rows), rows[0].keys()
" "$tmp/analysis.json" 2>"$tmp/err" || fail "ccoverlap.frame of a trace analysis: $(cat "$tmp/err")"

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
kill_at = int(os.environ.get("KILL_AT", "-1"))  # this rank dies (SIGKILL) at that step
for k in range(int(sys.argv[1])):
    if k == kill_at:
        os.kill(os.getpid(), 9)
    ccoverlap.step()
    p = ccoverlap.current_policy()
    seen.append(p)
    time.sleep(cost[p])
print("rank%s %s" % (os.environ.get("RANK", "-"), " ".join(seen)), flush=True)
PY
# The program runs under a launcher that, like torchrun, answers a signal with a traceback: the
# rank ends itself at the decision's step (status 0), so the launcher ends quietly, never signalled.
cat >"$tmp/launcher.sh" <<SH
trap 'echo "Traceback: the launcher got SIGTERM"; exit 1' TERM
python3 "$tmp/tune.py" 400 & w=\$!
wait \$w; echo "launcher: the rank exited \$?"
SH
out=$(cd "$tmp" && env LD_LIBRARY_PATH="$fakedir" CCO_PRELOAD_LIB="$lib" "$cco" tune \
  --candidates off,priority,shape:1 --steps 30 --warmup 2 --out "$tmp/plan.json" \
  -- bash "$tmp/launcher.sh" 2>"$tmp/err")
rc=$?
[ $rc = 0 ] || fail "cco tune exited $rc: $out $(cat "$tmp/err")"
grep -q '^launcher: the rank exited 0$' <<<"$out" || fail "the rank did not end itself with status 0: $out $(cat "$tmp/err")"
grep -q 'Traceback' <<<"$out" && fail "the launcher was signalled: $out"
grep -q '^rank- ' <<<"$out" && fail "the rank ran on to its end after the search: $out"
grep -q '"policy": "priority"' "$tmp/plan.json" 2>/dev/null || fail "tuned plan: $(cat "$tmp/plan.json" 2>&1) $(cat "$tmp/err")"
grep -q '"generated_by": "cco tune -- CMD"' "$tmp/plan.json" || fail "plan provenance: $(cat "$tmp/plan.json")"
grep -q 'stage 2 of 2 keeps off, priority' "$tmp/err" || fail "no stage line (shape:1 dropped): $(cat "$tmp/err")"
grep -q 'the winner is priority (one left)' "$tmp/err" || fail "no winner line: $(cat "$tmp/err")"
grep -q "every rank ends at the decision's step" "$tmp/err" || fail "no line says the program ends after the search: $(cat "$tmp/err")"
grep -q 'stopping it' "$tmp/err" && fail "cco tune had to stop the program: $(cat "$tmp/err")"
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

# The deciding rank killed mid-search (SIGKILL at its step 10, inside the first stage): the other
# rank stops waiting for the decision once it sees the deciding process gone (at most --wait),
# says so once and goes on under the baseline; the job's status is the killed rank's (137), cco
# tune's too; the step files stay readable and the report says the search did not finish.
cat >"$tmp/killed.sh" <<SH
KILL_AT=10 RANK=0 python3 "$tmp/tune.py" 80 >"$tmp/k0.out" & p0=\$!
RANK=1 python3 "$tmp/tune.py" 80 >"$tmp/k1.out"
wait \$p0; s0=\$?
exit \$s0
SH
t0=$(date +%s)
out=$(env LD_LIBRARY_PATH="$fakedir" CCO_PRELOAD_LIB="$lib" "$cco" tune --wait 2 \
  --candidates off,priority,shape:1 --steps 30 --warmup 2 --out "$tmp/plan3.json" \
  -- bash "$tmp/killed.sh" 2>"$tmp/err")
rc=$?
[ $rc = 137 ] || fail "a killed deciding rank: cco tune exited $rc, want 137: $out $(cat "$tmp/err")"
[ $(( $(date +%s) - t0 )) -le 30 ] || fail "a killed deciding rank: cco tune took over 30 s"
# The other rank sees the deciding process gone (its pid, in the step folder's "decider" file) and
# stops waiting at once, saying so, before --wait runs out.
[ "$(grep -c "tune: the deciding rank has ended without a decision for step 20; this rank keeps candidate 0 (off)" "$tmp/err")" = 1 ] \
  || fail "a killed deciding rank: the other rank's line: $(cat "$tmp/err")"
grep -q "^rank1 " "$tmp/k1.out" || fail "a killed deciding rank: the other rank did not run to its end"
grep -q '^# cco tune: search NOT complete' <<<"$out" || fail "a killed deciding rank: report: $out"
grep -q '^# no plan written' <<<"$out" || fail "a killed deciding rank: a plan was written: $out"
[ -f "$tmp/plan3.json" ] && fail "a killed deciding rank: a plan file exists"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['steps'], d" "$tmp/plan3.steps/steps-rank1.json" 2>"$tmp/perr" \
  || fail "a killed deciding rank: rank 1's step file: $(cat "$tmp/perr")"

# cco run --compare with a rank killed mid-run: the job's status (137), and the comparison from
# the steps each rank wrote, the killed one's marked partial in one line.
cat >"$tmp/killed2.sh" <<SH
RANK=0 python3 "$tmp/tune.py" 60 >/dev/null & p0=\$!
KILL_AT=30 RANK=1 python3 "$tmp/tune.py" 60 >/dev/null; s1=\$?
wait \$p0
exit \$s1
SH
out=$(env LD_LIBRARY_PATH="$fakedir" CCO_PRELOAD_LIB="$lib" "$cco" run --compare off,priority \
  --steps-out "$tmp/k.steps" -- bash "$tmp/killed2.sh" 2>&1)
rc=$?
[ $rc = 137 ] || fail "cco run --compare, a killed rank: exit $rc, want 137: $out"
[ "$(grep -c "rank 1: the process did not exit normally; its steps until the last flush are used (partial)" <<<"$out")" = 1 ] \
  || fail "cco run --compare, a killed rank: no partial line: $out"
grep -qE '^priority +[0-9.]+ .*faster' <<<"$out" || fail "cco run --compare, a killed rank: no comparison: $out"

# An earlier run's step files in --steps-out are refused before the program runs (they would be
# read as this run's and mixed into its comparison).
out=$(env LD_LIBRARY_PATH="$fakedir" CCO_PRELOAD_LIB="$lib" "$cco" run --compare off,priority \
  --steps-out "$tmp/k.steps" -- sh -c 'echo RAN' 2>&1)
rc=$?
[ $rc = 2 ] || fail "a --steps-out folder with step files: exit $rc, want 2: $out"
grep -q "already holds step files of an earlier run (steps-rank" <<<"$out" || fail "a --steps-out folder with step files: $out"
grep -q RAN <<<"$out" && fail "a --steps-out folder with step files: the program ran"

[ $fails = 0 ] && echo "all python checks passed"
exit $fails
