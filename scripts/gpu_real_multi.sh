#!/usr/bin/env bash
# Real PyTorch training on several GPUs under ccoverlap (the measurement of the closed issue 20,
# run when a multi-GPU kind is lent), on a staged build (scripts/stage_gpu.sh -> build-gpu,
# carried). A GPT-style model of about 1.3B parameters (24 layers, width 2048), bf16 autocast,
# DDP with 25 MB buckets or FSDP2. Logs and step files come back as $OUT/logs.tgz beside
# $OUT/summary.txt.
#   m  the parts: compute only (no_sync), communication only (DDP's buckets), DDP plain
#   k  PyTorch's own knob: plain against TORCH_NCCL_HIGH_PRIORITY=1, whole runs A B B A
#   x  answers: DDP under cco run's default policy, checksums against the plain run of `m`
#   p  paired in one process (cco run --compare): off, priority, shaping while NCCL works
#      (shape+priority:model@overlap, the default until 2026-11-26), and a GEMM SM budget only
#      while NCCL works
#   q  the same under TORCH_NCCL_HIGH_PRIORITY=1: does cco add to PyTorch's knob?
#   t  cco tune -- torchrun ... (online search in the program's own steps)
#   f  FSDP2: paired, off, priority and shape+priority:model@overlap
#   d  the default policy (priority since 2026-11-26) against off, paired, over more steps
#   c  NCCL channel caps through the tuner plugin (fewer SMs for DDP's all-reduces), paired
#   s  the per-step diagnosis checked (issue 32): DDP and FSDP2 traced (steps as NVTX ranges), DDP
#      without gradient sync traced as the alone trace; cco report's parts and bounds beside the
#      program's own step times and the paired gains of the controls (cco run --compare)
#   b  cco run --compare with --trace: the bounds of the baseline's traced steps printed beside the
#      measured differences (DDP)
#   w  the same check on bench traces: the TP step (copy engines), the memory-bound pair
#      (shaping) and the built-in GEMM pair (priority), rows measured in the traced run
# (Stage x measures whatever the default is: shape+priority:model@overlap before 2026-11-26,
# priority since.) Exits non-zero when a run failed or the answers differ.
# Usage: BUILD=build-gpu scripts/gpu_real_multi.sh G [stages, default "m k x p q t f"]
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_env.sh
source scripts/gpu_logs.sh
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" OMP_NUM_THREADS=4
export CCO_TUNER_LIB="$PWD/$B/src/tuner/libcco_tuner.so"
G=${1:-2}
[[ $G =~ ^[1-9][0-9]*$ ]] || { echo "usage: scripts/gpu_real_multi.sh G [stages]: G is the number of GPUs, not '$G'" >&2; exit 2; }
shift || true
status=0
stages=${*:-m k x p q t f}
STEPS=${STEPS:-30}
model=(--layers "${LAYERS:-24}" --d-model "${DMODEL:-2048}" --heads 16)
prog=(torchrun --standalone --nproc-per-node "$G" scripts/ddp_gpt.py "${model[@]}")

say "# gpu_real_multi $(date -u +%FT%TZ) G=$G $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
say "# torch $(python3 -c 'import torch;print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())' 2>/dev/null)"

plain() {  # NAME ARGS...: one whole run of the program, its result line to the summary
  local name=$1; shift
  local t0=$SECONDS
  timeout 200 "$@" >"$O/$name.log" 2>&1
  local rc=$?
  [ $rc = 0 ] || status=1
  say "== $name: rc=$rc $((SECONDS - t0)) s $(grep -h '^result:' "$O/$name.log" | tail -1)"
}
cmp_run() {  # NAME ITEMS [cco run options] -- CMD...: a paired comparison; its table to the summary
  local name=$1 items=$2; shift 2
  local t0=$SECONDS
  timeout 240 "$cco" run --compare "$items" --compare-json "$O/$name.json" "$@" >"$O/$name.log" 2>&1
  local rc=$?
  [ $rc = 0 ] || status=1
  say "== $name ($items): rc=$rc $((SECONDS - t0)) s"
  grep -E '^(# compare|#config|cco: |cco run: )|^[a-z/:@0-9+-]+ +[0-9]' "$O/$name.log" \
    | grep -vE '^(result|step|rank|world|model|W[0-9]|I[0-9])' | tail -8 | tee -a "$O/summary.txt"
  grep -h '^result:' "$O/$name.log" | tail -1 | tee -a "$O/summary.txt"
}

if has m; then
  for mode in compute-only comm-only ddp; do
    plain "m_$mode" "${prog[@]}" --mode "$mode" --steps "$STEPS" --warmup 3
  done
fi
if has k; then
  for rep in 1 2; do  # A B B A
    [ $rep = 1 ] && order="plain high" || order="high plain"
    for c in $order; do
      if [ $c = plain ]; then
        plain "k_plain_$rep" "${prog[@]}" --steps "$STEPS" --warmup 3
      else
        plain "k_high_$rep" env TORCH_NCCL_HIGH_PRIORITY=1 "${prog[@]}" --steps "$STEPS" --warmup 3
      fi
    done
  done
fi
if has x; then
  plain x_default "$cco" run -- "${prog[@]}" --steps "$STEPS" --warmup 3
  a=$(grep -ho 'loss_checksum=[^ ]* param_checksum=[^ ]*' "$O/m_ddp.log" 2>/dev/null | tail -1)
  b=$(grep -ho 'loss_checksum=[^ ]* param_checksum=[^ ]*' "$O/x_default.log" | tail -1)
  [ -n "$a" ] && [ "$a" = "$b" ] && say "answers: identical checksums, plain and the default policy" \
    || { say "answers: DIFFER or missing: plain '$a' default '$b'"; status=1; }
fi
pol="off,priority,shape+priority:model@overlap,sm-target:-16@overlap"
if has p; then
  cmp_run p_ddp "$pol" --warmup 5 -- "${prog[@]}" --steps 100 --warmup 3
fi
if has q; then
  cmp_run q_ddp_high "off,shape+priority:model@overlap,sm-target:-16@overlap" --warmup 5 -- \
    env TORCH_NCCL_HIGH_PRIORITY=1 "${prog[@]}" --steps 80 --warmup 3
fi
if has t; then
  t0=$SECONDS
  timeout 240 "$cco" tune --candidates "$pol" --out "$O/t_plan.json" -- "${prog[@]}" --steps 400 --warmup 3 \
    >"$O/t_tune.log" 2>&1
  say "== t cco tune -- DDP: rc=$? $((SECONDS - t0)) s"
  grep -E '^(cco tune|# tune|cco: )' "$O/t_tune.log" | tail -12 | tee -a "$O/summary.txt"
  python3 -c "import json,sys; p=json.load(open(sys.argv[1])); print('plan policy:', p.get('policy'))" \
    "$O/t_plan.json" 2>&1 | tee -a "$O/summary.txt"
fi
if has f; then
  cmp_run f_fsdp "off,priority,shape+priority:model@overlap" --warmup 5 -- "${prog[@]}" --mode fsdp \
    --steps 60 --warmup 3
fi
if has d; then
  cmp_run d_ddp_default "off,priority" --warmup 5 -- "${prog[@]}" --steps 120 --warmup 3
fi
if has c; then
  cmp_run c_ddp_channels "off,channels:16,channels:8,channels:4" --warmup 5 --stats -- "${prog[@]}" \
    --steps 120 --warmup 3
  grep -E '^cco-(tuner|preload): (stats|warning)' "$O/c_ddp_channels.log" | cut -c1-260 | head -4 | tee -a "$O/summary.txt"
fi
check() {  # check KIND ARGS: the bound table of issue 32 (docs/results), from the files of s and w
  python3 - "$O" "$@" <<'EOF' | tee -a "$O/summary.txt"
import json, re, statistics, sys
O, kind, args = sys.argv[1], sys.argv[2], sys.argv[3:]
def bounds(path):
    d = json.load(open(path))["diagnosis"]
    b = {}
    for r in d["ranks"]:  # a step is as slow as its slowest rank: the largest bound of any rank
        for k, v in r["typical"]["bounds_ns"].items():
            b[k] = max(b.get(k, 0), v / 1e6)
    return d, b
lever = {"priority": "priority_shaping", "shape": "priority_shaping",
         "sm-target": "sm_budget_channels_copy_engines", "channels": "sm_budget_channels_copy_engines",
         "cta=zero": "sm_budget_channels_copy_engines"}
def lever_of(name):  # the bound groups a row's controls belong to ("+": a row of several)
    found = sorted({v for k, v in lever.items() if k in name})
    return "+".join(found) if found else None
def bound_of(b, lv):  # a row of several kinds of control wins at most the sum of their bounds
    return sum(b[x] for x in lv.split("+"))
if kind == "program":
    rep, cmp_file, log = args
    d, b = bounds(rep)
    print("check %s: %s" % (rep.split("/")[-1], d["sentence"]))
    c = json.load(open(cmp_file))
    for e in c["configs"][1:]:
        v = e.get("vs_first") or {}
        if v.get("lo_ms") is None:
            print("  %-34s no interval" % e["name"]); continue
        gain, noise = -v["median_ms"], (v["hi_ms"] - v["lo_ms"]) / 2
        lv = lever_of(e["name"])
        ok = lv is None or gain <= bound_of(b, lv) + noise
        print("  %-34s measured gain %+7.2f ms (95%% interval %+.2f..%+.2f)  bound %-32s %7.2f ms  %s"
              % (e["name"], gain, -v["hi_ms"], -v["lo_ms"], lv, bound_of(b, lv) if lv else float("nan"),
                 "holds" if ok else "FAILS"))
elif kind == "bench":
    rep, bench = args
    d, b = bounds(rep)
    print("check %s: %s" % (rep.split("/")[-1], d["sentence"]))
    doc = json.load(open(bench))
    # A pair's rows ("results", samples in t.samples_us) or a step's ("rows", time_us.samples).
    rows = [dict(r, samples=r["t"]["samples_us"]) for r in doc["results"]] if "results" in doc \
        else [dict(r, samples=r["time_us"]["samples"]) for r in doc["rows"]]
    base = [r for r in rows if r["label"] == "concurrent"]
    if not base:
        print("  no concurrent row"); sys.exit(0)
    bs = base[0]["samples"]
    for r in rows:
        lv = lever_of(r["label"])
        if r["label"] == "concurrent" or r["mode"] == "seq" or lv is None:
            continue
        diffs = sorted((a - x) / 1e3 for a, x in zip(bs, r["samples"]))
        gain = statistics.median(diffs)
        q = statistics.quantiles(diffs, n=4) if len(diffs) > 3 else [gain, gain, gain]
        noise = (q[2] - q[0]) / 2
        ok = gain <= bound_of(b, lv) + noise
        print("  %-34s measured gain %+7.3f ms (paired by iteration, IQR/2 %.3f)  bound %-32s %7.3f ms  %s"
              % (r["label"], gain, noise, lv, bound_of(b, lv), "holds" if ok else "FAILS"))
elif kind == "steps":  # per-step times against the program's own (CUDA events, max over ranks)
    rep, log = args
    d = json.load(open(rep))["diagnosis"]
    prog = {int(m.group(1)): float(m.group(2)) for m in
            re.finditer(r"^step +(\d+) .*step_ms ([0-9.]+)", open(log).read(), re.M)}
    per = {}
    for r in d["ranks"]:
        for p in r["steps"]:
            per[p["step"]] = max(per.get(p["step"], 0), p["time_ns"] / 1e6)
    errs = [abs(per[k] - prog[k]) / prog[k] for k in per if k in prog]
    adds = all(sum(p[k] for k in ("compute_alone_ns", "compute_slowed_ns", "exposed_rank_wait_ns",
               "exposed_slowed_ns", "exposed_tail_ns", "exposed_dependent_ns", "idle_ns")) == p["time_ns"]
               for r in d["ranks"] for p in r["steps"])
    print("check steps %s: %d steps matched; |trace - program| / program: median %.2f%%, max %.2f%%; parts add up: %s"
          % (rep.split("/")[-1], len(errs), 100 * statistics.median(errs) if errs else float("nan"),
             100 * max(errs) if errs else float("nan"), adds))
EOF
}

if has s; then
  S=${DSTEPS:-20}
  nv=(--nvtx-steps --steps "$S" --warmup 3)
  plain s_ddp_trace "$cco" run --policy off --trace "$O/s_ddp_%r.json" -- "${prog[@]}" "${nv[@]}"
  plain s_co_trace "$cco" run --policy off --trace "$O/s_co_%r.json" -- "${prog[@]}" --mode compute-only "${nv[@]}"
  plain s_fsdp_trace "$cco" run --policy off --trace "$O/s_fsdp_%r.json" -- "${prog[@]}" --mode fsdp "${nv[@]}"
  alone=()
  for f in "$O"/s_co_*.json; do alone+=(--alone "$f"); done
  for x in ddp fsdp; do
    t0=$(date +%s.%N)
    "$cco" report "$O"/s_${x}_[0-9]*.json "${alone[@]}" >"$O/s_${x}_report.txt" 2>&1
    t1=$(date +%s.%N)
    "$cco" report "$O"/s_${x}_[0-9]*.json "${alone[@]}" --json="$O/s_${x}_report.json" --format csv \
      >"$O/s_${x}_report.csv" 2>&1
    say "== s report $x: $(python3 -c "print('%.2f' % ($t1 - $t0))") s for the analysis"
    head -4 "$O/s_${x}_report.txt" | tee -a "$O/summary.txt"
    check steps "$O/s_${x}_report.json" "$O/s_${x}_trace.log"
  done
  "$cco" report "$O"/s_co_[0-9]*.json >"$O/s_co_report.txt" 2>&1
  say "ddp vs compute-only (program medians, traced): $(grep -h '^result:' "$O/s_ddp_trace.log" | grep -o 'median_step_ms=[0-9.]*') $(grep -h '^result:' "$O/s_co_trace.log" | grep -o 'median_step_ms=[0-9.]*')"
  cmp_run s_ddp_cmp "off,priority,sm-target:-16@overlap,channels:8" --warmup 5 -- "${prog[@]}" --steps 80 --warmup 3
  cmp_run s_fsdp_cmp "off,priority" --warmup 5 -- "${prog[@]}" --mode fsdp --steps 50 --warmup 3
  check program "$O/s_ddp_report.json" "$O/s_ddp_cmp.json" "$O/s_ddp_cmp.log"
  check program "$O/s_fsdp_report.json" "$O/s_fsdp_cmp.json" "$O/s_fsdp_cmp.log"
  # The raw traces (tens of MB) travel apart from logs.tgz, one file each (the device returns
  # files of at most 16 MiB).
  if [ "${KEEP_TRACES:-1}" = 1 ]; then  # KEEP_TRACES=0: the device returns at most 8 files
    for f in "$O"/s_ddp_[0-9]*.json "$O"/s_co_[0-9]*.json "$O"/s_fsdp_[0-9]*.json; do
      gzip -c "$f" >"$OUTDIR/$(basename "$f").gz"
    done
  fi
  rm -f "$O"/s_*_[0-9]*.json
fi
if has b; then
  cmp_run b_ddp_trace "off,priority,sm-target:-16@overlap" --warmup 5 --trace "$O/b_%r.json" -- \
    "${prog[@]}" --steps 60 --warmup 3
  grep -E '^(# the steps under|#   |cco: trace)' "$O/b_ddp_trace.log" | tee -a "$O/summary.txt"
  rm -f "$O"/b_[0-9]*.json
fi
if has w; then
  wb() {  # wb NAME BENCH-ARGS...: one traced bench run, its diagnosis and the check
    local name=$1; shift
    timeout 200 "$cco" bench -g "$G" -n 12 -w 3 --trace "$O/w_$name.trace.json" --json "$O/w_$name.json" "$@" \
      >"$O/w_$name.log" 2>&1 || status=1
    "$cco" report "$O/w_$name.trace.json" --steps 'nvtx:concurrent, iteration *' --warmup-steps 3 \
      --alone "$O/w_$name.trace.json" --alone-steps 'nvtx:seq, iteration *' --json="$O/w_$name.report.json" \
      >"$O/w_$name.report.txt" 2>&1 || status=1
    head -4 "$O/w_$name.report.txt" | tee -a "$O/summary.txt"
    check bench "$O/w_$name.report.json" "$O/w_$name.json"
  }
  wb tp --workload workloads/tp_llama7b.json --param layers=2 --modes seq,concurrent,priority \
    --nccl-cta-policy default,zero
  wb membound --compute membound --count 2 --mem-bytes 512M -b 256M -d bfloat16 \
    --modes seq,concurrent,priority,shape+priority --blocks-per-sm 4,5
  wb builtin --compute builtin --gemm 2048 --count 2 -b 256M -d bfloat16 --modes seq,concurrent,priority
fi
exit $status
