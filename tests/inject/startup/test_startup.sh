#!/usr/bin/env bash
# cco's Python start-up hook (src/inject/startup/sitecustomize.py) against a fake, PyTorch-free
# `torch` package whose DistributedDataParallel and fully_shard record the keywords they get:
# every control of model::kFrameworkControls reaches its keyword; a keyword the program passes
# (by name or position) is kept and said; torch is never imported for a program that does not;
# the program's own sitecustomize still runs; rank 1 is silent; a bad CCO_FRAMEWORK or a PyTorch
# without the keyword is one line and the program runs; a child after fork writes its own report.
# With CCO_BIN (and the preload library), `cco run --framework` end to end: its summary.
set -u
hook=${CCO_STARTUP_DIR:?}
cco=${CCO_BIN:-}
if ! command -v python3 >/dev/null; then
  echo "python3 not found: the start-up hook cannot be tested"; exit 1
fi
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset RANK CCO_FRAMEWORK CCO_FRAMEWORK_OUT

# --- the fake torch: torch.nn.parallel.distributed imported with torch, as in PyTorch ----------
fake=$tmp/fake
mkdir -p "$fake/torch/nn/parallel" "$fake/torch/distributed/fsdp" "$tmp/out" "$tmp/user"
printf 'from torch import nn\nclass cuda:\n    is_available = staticmethod(lambda: False)\n' >"$fake/torch/__init__.py"
echo "from torch.nn import parallel" >"$fake/torch/nn/__init__.py"
echo "from .distributed import DistributedDataParallel" >"$fake/torch/nn/parallel/__init__.py"
cat >"$fake/torch/nn/parallel/distributed.py" <<'PY'
class DistributedDataParallel:
    def __init__(self, module, device_ids=None, bucket_cap_mb=None, find_unused_parameters=False,
                 gradient_as_bucket_view=False):
        if module is None:
            raise TypeError("DistributedDataParallel needs a module")
        self.kw = dict(bucket_cap_mb=bucket_cap_mb, gradient_as_bucket_view=gradient_as_bucket_view)
PY
: >"$fake/torch/distributed/__init__.py"
echo "from ._fully_shard import fully_shard" >"$fake/torch/distributed/fsdp/__init__.py"
cat >"$fake/torch/distributed/fsdp/_fully_shard.py" <<'PY'
def fully_shard(module, *, mesh=None, reshard_after_forward=None):
    return dict(reshard_after_forward=reshard_after_forward)
PY
# An older PyTorch: DDP without gradient_as_bucket_view.
old=$tmp/old
mkdir -p "$old/torch/nn/parallel"
cp "$fake/torch/__init__.py" "$old/torch/"; cp "$fake/torch/nn/__init__.py" "$old/torch/nn/"
cp "$fake/torch/nn/parallel/__init__.py" "$old/torch/nn/parallel/"
printf 'class DistributedDataParallel:\n    def __init__(self, module, bucket_cap_mb=None):\n        self.kw = {}\n' \
  >"$old/torch/nn/parallel/distributed.py"

all="ddp.bucket_view:ddp:gradient_as_bucket_view:True;ddp.bucket_mb:ddp:bucket_cap_mb:100;fsdp.reshard:fsdp:reshard_after_forward:False"
py() {  # py ENV... -- python args: the hook first on the path, the fake torch after it
  env PYTHONPATH="$hook:$fake" "$@"
}

# --- each control reaches its keyword; the program's own value is kept -----------------------
cat >"$tmp/prog.py" <<'PY'
import torch
from torch.distributed.fsdp import fully_shard
DDP = torch.nn.parallel.DistributedDataParallel
class Mine(DDP):
    def __init__(self, m):
        super().__init__(m)
a, b, c, s = DDP("m"), DDP("m", None, 25), DDP("m", gradient_as_bucket_view=True), Mine("m")
assert a.kw == {"bucket_cap_mb": 100, "gradient_as_bucket_view": True}, a.kw
assert b.kw == {"bucket_cap_mb": 25, "gradient_as_bucket_view": True}, b.kw    # positional: kept
assert c.kw == {"bucket_cap_mb": 100, "gradient_as_bucket_view": True}, c.kw   # the same value
assert s.kw == a.kw, s.kw                                                      # a subclass
assert isinstance(s, DDP) and type(a) is DDP
assert fully_shard("blk") == {"reshard_after_forward": False}
assert fully_shard("blk", reshard_after_forward=True) == {"reshard_after_forward": True}
try:
    DDP(None)
except TypeError as e:
    assert "needs a module" in str(e)  # the program's own error, as without cco
else:
    raise AssertionError("DDP(None) did not raise")
print("ok")
PY
out=$(py CCO_FRAMEWORK="$all" CCO_FRAMEWORK_OUT="$tmp/out" python3 "$tmp/prog.py" 2>"$tmp/err")
[ "$out" = ok ] || fail "controls not applied as asked: $out $(cat "$tmp/err")"
grep -q "DistributedDataParallel built with gradient_as_bucket_view=True (ddp.bucket_view)" "$tmp/err" ||
  fail "no 'built with' line: $(cat "$tmp/err")"
grep -q "the program sets bucket_cap_mb=25 itself: kept (ddp.bucket_mb not applied)" "$tmp/err" ||
  fail "the program's own bucket size not said: $(cat "$tmp/err")"
n=$(grep -c "built with gradient_as_bucket_view" "$tmp/err")
[ "$n" = 1 ] || fail "the same line printed $n times"
python3 - "$tmp/out" <<'PY' || fail "report: $(cat "$tmp"/out/*.json)"
import glob, json, sys
files = glob.glob(sys.argv[1] + "/framework-*.json")
assert len(files) == 1, files
ev = json.load(open(files[0]))["events"]
count = lambda c, o: sum(1 for e in ev if e["control"] == c and e["outcome"] == o)
assert count("ddp.bucket_view", "applied") == 3 and count("ddp.bucket_view", "same") == 1, ev
assert count("ddp.bucket_mb", "applied") == 3 and count("ddp.bucket_mb", "kept") == 1, ev
assert count("fsdp.reshard", "applied") == 1 and count("fsdp.reshard", "kept") == 1, ev
PY

# --- nothing when unset; torch never imported for a program that does not ---------------------
out=$(py CCO_FRAMEWORK="$all" python3 -c 'import sys; print("torch" in sys.modules)' 2>"$tmp/err")
[ "$out" = False ] || fail "the hook imported torch: $out"
[ -s "$tmp/err" ] && fail "a program without torch got lines: $(cat "$tmp/err")"
out=$(py python3 -c 'import torch; print(torch.nn.parallel.DistributedDataParallel("m").kw)' 2>&1)
[ "$out" = "{'bucket_cap_mb': None, 'gradient_as_bucket_view': False}" ] ||
  fail "without CCO_FRAMEWORK the program changed: $out"

# --- the program's own sitecustomize still runs, after ours ----------------------------------
echo 'import os; os.environ["USER_SITE_RAN"] = "1"' >"$tmp/user/sitecustomize.py"
out=$(env PYTHONPATH="$hook:$tmp/user:$fake" CCO_FRAMEWORK="$all" python3 -c '
import os, torch
print(os.environ.get("USER_SITE_RAN"), torch.nn.parallel.DistributedDataParallel("m").kw["gradient_as_bucket_view"])' 2>/dev/null)
[ "$out" = "1 True" ] || fail "the program's sitecustomize or the control lost: $out"

# --- the hook never breaks the program --------------------------------------------------------
# A stderr without flush (a program's own tee): the line is lost, not the DDP module.
out=$(py CCO_FRAMEWORK="$all" python3 -c '
import sys, torch
class Tee:
    def write(self, s): return len(s)
sys.stderr = Tee()
print(torch.nn.parallel.DistributedDataParallel("m").kw["gradient_as_bucket_view"])' 2>&1)
[ "$out" = True ] || fail "a stderr without flush broke the program: $out"
# Two cco hook folders on the path (two installs): one hook acts, torch imports, the program's own
# sitecustomize after both still runs.
mkdir -p "$tmp/hook2" && cp "$hook/sitecustomize.py" "$tmp/hook2/"
out=$(env PYTHONPATH="$tmp/hook2:$hook:$tmp/user:$fake" CCO_FRAMEWORK="$all" python3 -c '
import os, sys, torch
print(os.environ.get("USER_SITE_RAN"), torch.nn.parallel.DistributedDataParallel("m").kw["bucket_cap_mb"],
      sum(1 for f in sys.meta_path if getattr(f, "_cco_framework", False)))' 2>/dev/null)
[ "$out" = "1 100 1" ] || fail "two hook folders: $out"
# A target whose visible signature is (*args, **kwargs): the program's keyword is still its own.
cat >"$fake/torch/distributed/fsdp/__init__.py" <<'PY'
from ._fully_shard import fully_shard as _real
def fully_shard(*args, **kwargs):
    return _real(*args, **kwargs)
PY
out=$(py CCO_FRAMEWORK="$all" python3 -c '
from torch.distributed.fsdp import fully_shard
print(fully_shard("b", reshard_after_forward=True)["reshard_after_forward"])' 2>/dev/null)
[ "$out" = True ] || fail "a keyword passed through **kwargs was replaced: $out"
echo "from ._fully_shard import fully_shard" >"$fake/torch/distributed/fsdp/__init__.py"
# The program's own module named like a standard one (random.py beside the script) is its own.
mkdir -p "$tmp/prog2" && echo 'MINE = 1' >"$tmp/prog2/random.py"
echo 'import random; print(getattr(random, "MINE", 0))' >"$tmp/prog2/main.py"
# (Some Pythons load random at start-up anyway: the answer must be the one without cco.)
want=$(env PYTHONPATH="$fake" python3 "$tmp/prog2/main.py" 2>&1)
out=$(py CCO_FRAMEWORK="$all" CCO_FRAMEWORK_OUT="$tmp/out" python3 "$tmp/prog2/main.py" 2>&1)
[ "$out" = "$want" ] || fail "the hook changed which random the program imports: $out, without cco $want"
want=$(env PYTHONPATH="$fake" python3 -c 'import sys; print(sorted(sys.modules))')
out=$(py CCO_FRAMEWORK="$all" CCO_FRAMEWORK_OUT="$tmp/out" python3 -c 'import sys; print(sorted(sys.modules))' 2>/dev/null)
extra=$(comm -13 <(tr -d "[]' " <<<"$want" | tr , '\n' | sort) <(tr -d "[]' " <<<"$out" | tr , '\n' | sort) |
  grep -v '^sitecustomize$' | tr '\n' ' ')
[ -z "$extra" ] || fail "modules the hook imported that Python without cco does not: $extra"

# --- rank 1 is silent but reports; bad items and old PyTorch are one line ---------------------
rm -f "$tmp"/out/*
py RANK=1 CCO_FRAMEWORK="$all" CCO_FRAMEWORK_OUT="$tmp/out" python3 "$tmp/prog.py" >/dev/null 2>"$tmp/err" ||
  fail "rank 1 run failed: $(cat "$tmp/err")"
[ -s "$tmp/err" ] && fail "rank 1 printed: $(cat "$tmp/err")"
ls "$tmp"/out/framework-*.json >/dev/null 2>&1 || fail "rank 1 wrote no report"
out=$(py CCO_FRAMEWORK="bogus;ddp.bucket_view:ddp:gradient_as_bucket_view:maybe;$all" python3 "$tmp/prog.py" 2>"$tmp/err")
[ "$out" = ok ] || fail "a bad item broke the good ones: $out $(cat "$tmp/err")"
grep -q "CCO_FRAMEWORK item 'bogus'" "$tmp/err" || fail "bad item not said: $(cat "$tmp/err")"
out=$(env PYTHONPATH="$hook:$old" CCO_FRAMEWORK="$all" python3 -c '
import torch; print(torch.nn.parallel.DistributedDataParallel("m", bucket_cap_mb=5).kw)' 2>"$tmp/err")
[ "$out" = "{}" ] || fail "old PyTorch: $out $(cat "$tmp/err")"
grep -q "takes no keyword gradient_as_bucket_view in this PyTorch: ddp.bucket_view not applied" "$tmp/err" ||
  fail "old PyTorch not said: $(cat "$tmp/err")"

# --- a child after fork reports in its own file ------------------------------------------------
rm -f "$tmp"/out/*
py CCO_FRAMEWORK="$all" CCO_FRAMEWORK_OUT="$tmp/out" python3 -c '
import os, torch
pid = os.fork()
torch.nn.parallel.DistributedDataParallel("m")
if pid == 0: os._exit(0)
os.waitpid(pid, 0)' 2>/dev/null
n=$(ls "$tmp"/out/framework-*.json 2>/dev/null | wc -l)
[ "$n" = 2 ] || fail "parent and child after fork: $n report files"
# Built once before the fork and once in each: each report holds its own events only.
rm -f "$tmp"/out/*
py CCO_FRAMEWORK="$all" CCO_FRAMEWORK_OUT="$tmp/out" python3 -c '
import os, torch
torch.nn.parallel.DistributedDataParallel("m")
pid = os.fork()
torch.nn.parallel.DistributedDataParallel("m")
if pid == 0: os._exit(0)
os.waitpid(pid, 0)' 2>/dev/null
python3 - "$tmp/out" <<'PY' || fail "a forked child's report holds its parent's events"
import glob, json, sys
counts = sorted(len(json.load(open(f))["events"]) for f in glob.glob(sys.argv[1] + "/framework-*.json"))
assert counts == [2, 4], counts  # the child: 1 construction x 2 DDP controls; the parent: 2 x 2
PY

# --- cco run --framework end to end ------------------------------------------------------------
if [ -n "$cco" ] && [ -n "${CCO_PRELOAD_LIB:-}" ]; then
  export LD_LIBRARY_PATH=${CCO_FAKE_CUDA_DIR:-}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  mkdir "$tmp/t" && export TMPDIR=$tmp/t  # cco run's own folder goes here, and must go away
  all_flag=$("$cco" run --dry-run --lib "$CCO_PRELOAD_LIB" --framework ddp.bucket_view,ddp.bucket_mb=100,fsdp.reshard=off -- true |
    sed -n 's/^CCO_FRAMEWORK=//p' | tr -d "'")
  [ "$all_flag" = "$all" ] || fail "cco run's CCO_FRAMEWORK: '$all_flag', expected '$all'"
  PYTHONPATH=$fake "$cco" run --lib "$CCO_PRELOAD_LIB" --framework ddp.bucket_view,ddp.bucket_mb=100,fsdp.reshard=off \
    -- python3 "$tmp/prog.py" >"$tmp/o" 2>"$tmp/err" || fail "cco run --framework: $(cat "$tmp/err")"
  grep -q "^ok$" "$tmp/o" || fail "the program under cco run: $(cat "$tmp/o")"
  grep -q "cco run: framework: ddp.bucket_view: applied to DistributedDataParallel (gradient_as_bucket_view=True), 3 times in 1 process" "$tmp/err" ||
    fail "no summary line for ddp.bucket_view: $(cat "$tmp/err")"
  grep -q "ddp.bucket_mb: not applied, 1 time in 1 process: the program sets bucket_cap_mb=25" "$tmp/err" ||
    fail "no 'kept' summary: $(cat "$tmp/err")"
  grep -q "answers may differ" "$tmp/err" || fail "ddp.bucket_mb's rounding not said before the start"
  PYTHONPATH=$fake "$cco" run --lib "$CCO_PRELOAD_LIB" --framework ddp.bucket_view -- python3 -c 'print(1)' \
    >/dev/null 2>"$tmp/err" || fail "cco run --framework, no DDP: $(cat "$tmp/err")"
  grep -q "ddp.bucket_view: did nothing: no process built a DistributedDataParallel" "$tmp/err" ||
    fail "a program without DDP not said: $(cat "$tmp/err")"
  "$cco" run --lib "$CCO_PRELOAD_LIB" --framework ddp.bucket_view,ddp.bucket_view -- true 2>"$tmp/err"
  [ $? = 2 ] && grep -q "named twice" "$tmp/err" || fail "a control named twice: $(cat "$tmp/err")"
  # A plan's framework controls: applied as --framework; with --framework too, refused.
  printf '{"schema": "ccoverlap.plan", "schema_version": "1.0.0", "framework": "ddp.bucket_view"}' >"$tmp/plan.json"
  x=$("$cco" run --dry-run --lib "$CCO_PRELOAD_LIB" --plan "$tmp/plan.json" -- true | sed -n 's/^CCO_FRAMEWORK=//p' | tr -d "'")
  [ "$x" = "ddp.bucket_view:ddp:gradient_as_bucket_view:True" ] || fail "the plan's framework: '$x'"
  "$cco" run --lib "$CCO_PRELOAD_LIB" --plan "$tmp/plan.json" --framework fsdp.reshard=off -- true 2>"$tmp/err"
  [ $? = 2 ] && grep -q "conflicts with the framework controls of plan" "$tmp/err" ||
    fail "--framework with a plan's: $(cat "$tmp/err")"
  "$cco" run --lib "$CCO_PRELOAD_LIB" --compare "off,$tmp/plan.json" -- true 2>"$tmp/err"
  [ $? = 2 ] && grep -q "cannot switch between steps: its framework controls" "$tmp/err" ||
    fail "a plan with framework controls compared: $(cat "$tmp/err")"
  # cco tune -- CMD --framework: held through the search, reported, written into the plan.
  if [ -n "${CCO_SOURCE_DIR:-}" ]; then
    cat >"$tmp/tune.py" <<'PY'
import ctypes, sys, time
import torch, ccoverlap
ctypes.CDLL("libcuda.so.1", mode=ctypes.RTLD_GLOBAL)
assert torch.nn.parallel.DistributedDataParallel("m").kw["gradient_as_bucket_view"] is True
cost = {"priority": 0.004, "off": 0.012}
for k in range(int(sys.argv[1])):
    ccoverlap.step()
    time.sleep(cost[ccoverlap.current_policy()])
PY
    (cd "$tmp" && PYTHONPATH="$CCO_SOURCE_DIR/python:$fake" "$cco" tune --lib "$CCO_PRELOAD_LIB" \
      --framework ddp.bucket_view --candidates off,priority --steps 20 --warmup 2 --out "$tmp/tuned.json" \
      -- python3 "$tmp/tune.py" 300 >"$tmp/o" 2>"$tmp/err") || fail "cco tune --framework: $(cat "$tmp/err")"
    grep -q '"framework": "ddp.bucket_view=on"' "$tmp/tuned.json" 2>/dev/null ||
      fail "the tuned plan lacks the framework controls: $(cat "$tmp/tuned.json" 2>&1)"
    grep -q "cco tune: framework: ddp.bucket_view: applied to DistributedDataParallel" "$tmp/err" ||
      fail "cco tune's framework summary: $(cat "$tmp/err")"
    x=$("$cco" run --dry-run --lib "$CCO_PRELOAD_LIB" --plan "$tmp/tuned.json" -- true | sed -n 's/^CCO_FRAMEWORK=//p' | tr -d "'")
    [ "$x" = "ddp.bucket_view:ddp:gradient_as_bucket_view:True" ] || fail "the tuned plan's framework under cco run: '$x'"
    # Whole runs: the fake step costs 12 ms plainly, 4 ms with the bucket view, 10 ms more with
    # 100 MB buckets: the bucket view alone must win, the pair must be found slower.
    cat >"$tmp/fw.py" <<'PY'
import ctypes, sys, time
import torch, ccoverlap
ctypes.CDLL("libcuda.so.1", mode=ctypes.RTLD_GLOBAL)
kw = torch.nn.parallel.DistributedDataParallel("m").kw
if kw["gradient_as_bucket_view"] and "FW_FAIL_VIEW" in __import__("os").environ:
    sys.exit(9)  # out of memory, say
cost = (0.004 if kw["gradient_as_bucket_view"] else 0.012) + (0.010 if kw["bucket_cap_mb"] == 100 else 0)
for k in range(int(sys.argv[1])):
    ccoverlap.step()
    time.sleep(cost)
import os
if os.environ.get("FW_PEAK_VIEW"):  # CUDA "started": the hook reports the peak memory at exit
    class _Props:
        total_memory = 100 << 30
    class _Cuda:
        is_available = staticmethod(lambda: True)
        is_initialized = staticmethod(lambda: True)
        current_device = staticmethod(lambda: 0)
        get_device_properties = staticmethod(lambda d: _Props)
        max_memory_reserved = staticmethod(
            lambda d: (int(os.environ["FW_PEAK_VIEW"]) if kw["gradient_as_bucket_view"] else 50) << 30)
    torch.cuda = _Cuda
PY
    (cd "$tmp" && PYTHONPATH="$CCO_SOURCE_DIR/python:$fake" "$cco" tune --lib "$CCO_PRELOAD_LIB" \
      --framework-candidate ddp.bucket_view --framework-candidate ddp.bucket_view,ddp.bucket_mb=100 \
      --warmup 3 --out "$tmp/fw.json" -- python3 "$tmp/fw.py" 40 >"$tmp/o" 2>"$tmp/err") ||
      fail "cco tune --framework-candidate: $(cat "$tmp/o" "$tmp/err")"
    grep -q '"framework": "ddp.bucket_view=on"' "$tmp/fw.json" 2>/dev/null || fail "whole runs' plan: $(cat "$tmp/fw.json" 2>&1)"
    grep -qE '^ddp.bucket_view=on +[0-9.]+, [0-9.]+ +-[0-9.]+ \[-[0-9.]+, -[0-9.]+\] +- +faster in every round' "$tmp/o" ||
      fail "no winning row: $(cat "$tmp/o")"
    grep -qE '^ddp.bucket_view=on,ddp.bucket_mb=100 .* slower$' "$tmp/o" || fail "no slower row: $(cat "$tmp/o")"
    n=$(grep -c '^cco tune: run [0-9] of 6: .*median' "$tmp/err")
    [ "$n" = 6 ] || fail "expected 6 whole runs, saw $n: $(cat "$tmp/err")"
    order=$(sed -n 's/^cco tune: run [0-9] of 6: \([^:]*\)$/\1/p' "$tmp/err" | tr '\n' ' ')
    [ "$order" = "(none) ddp.bucket_view=on ddp.bucket_view=on,ddp.bucket_mb=100 ddp.bucket_view=on,ddp.bucket_mb=100 ddp.bucket_view=on (none) " ] ||
      fail "runs not in alternating order: '$order'"
    # A faster candidate that leaves no margin of device memory (95% of it at its peak) is not
    # chosen; its memory and the baseline's are in the table.
    (cd "$tmp" && FW_PEAK_VIEW=95 PYTHONPATH="$CCO_SOURCE_DIR/python:$fake" "$cco" tune --lib "$CCO_PRELOAD_LIB" \
      --framework-candidate ddp.bucket_view --warmup 3 --out "$tmp/fwm.json" --steps-out "$tmp/fwm.steps" \
      -- python3 "$tmp/fw.py" 40 >"$tmp/o" 2>"$tmp/err") || fail "whole runs with memory: $(cat "$tmp/o" "$tmp/err")"
    grep -qE '^\(none\) .* 50% +baseline$' "$tmp/o" || fail "the baseline's memory: $(cat "$tmp/o")"
    grep -q "held 95% of the device's memory at its peak" "$tmp/o" || fail "no memory refusal: $(cat "$tmp/o")"
    grep -q '"framework"' "$tmp/fwm.json" && fail "a candidate without a memory margin was chosen: $(cat "$tmp/fwm.json")"
    grep -q "peak memory 95.0 of 100.0 GiB" "$tmp/err" || fail "no memory in the run lines: $(cat "$tmp/err")"
    # A candidate whose run fails is ruled out; the search goes on and keeps the baseline.
    (cd "$tmp" && FW_FAIL_VIEW=1 PYTHONPATH="$CCO_SOURCE_DIR/python:$fake" "$cco" tune --lib "$CCO_PRELOAD_LIB" \
      --framework-candidate ddp.bucket_view --warmup 3 --out "$tmp/fwf.json" --steps-out "$tmp/fwf.steps" \
      -- python3 "$tmp/fw.py" 40 >"$tmp/o" 2>"$tmp/err") || fail "a failing candidate ended the search: $(cat "$tmp/o" "$tmp/err")"
    grep -q "a run of it exited 9: ruled out" "$tmp/o" || fail "no ruled-out row: $(cat "$tmp/o")"
    n=$(grep -c "ddp.bucket_view=on exited 9: ruled out" "$tmp/err")
    [ "$n" = 1 ] || fail "the failed candidate ran again ($n failures): $(cat "$tmp/err")"
    "$cco" tune --lib "$CCO_PRELOAD_LIB" --framework-rounds 3 -- true 2>"$tmp/err"
    [ $? = 2 ] && grep -q "needs --framework-candidate" "$tmp/err" || fail "--framework-rounds alone: $(cat "$tmp/err")"
    "$cco" tune --lib "$CCO_PRELOAD_LIB" --framework-candidate ddp.bucket_view --framework-rounds 0 -- true 2>"$tmp/err"
    [ $? = 2 ] || fail "--framework-rounds 0 accepted: $(cat "$tmp/err")"
    "$cco" tune --lib "$CCO_PRELOAD_LIB" --framework-candidate ddp.bucket_view --online -- true 2>"$tmp/err"
    [ $? = 2 ] && grep -q "does not apply to --framework-candidate" "$tmp/err" || fail "--online with whole runs: $(cat "$tmp/err")"
  fi
  left=$(ls -A "$tmp/t")
  [ -z "$left" ] || fail "cco run left its folder behind: $left"
else
  echo "note: CCO_BIN or CCO_PRELOAD_LIB not given: cco run --framework not tested end to end"
fi

[ "$fails" = 0 ] && echo "start-up hook: all checks passed"
[ "$fails" = 0 ]
