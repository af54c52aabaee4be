#!/usr/bin/env python3
"""The Python module's readers (python/ccoverlap) against cco's own (issue 35 item 2): one rule for
schema names and versions, and the same rows from the same recorded files.

- the module's schema table is src/core/model/schema_names.hpp's (names and the legacy names read);
- its match rule is model::match_schema's: major version 1 read, a legacy name read only as itself;
- for each fixture in tests/fixtures/ (a step file of the earlier name and the same file as cco
  writes it now, a run comparison, a bench, a step bench and a tune result) the rows the module
  gives are the rows `cco report FILE --format csv` prints: same count, labels and times;
- a file of another major version is refused by both.
Usage: test_python_readers.py CCO_BIN SOURCE_DIR. Exit 0 when all hold, 1 with one line per problem.
"""
import csv
import io
import json
import math
import os
import re
import subprocess
import sys
import tempfile

cco, src = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(src, "python"))
import ccoverlap  # noqa: E402

problems = []


def check(ok, what):
    if not ok:
        problems.append(what)


def rows_of(x):
    return x.to_dict("records") if hasattr(x, "to_dict") else x


def report_csv(path):
    out = subprocess.run([cco, "report", path, "--format", "csv"], capture_output=True, text=True)
    if out.returncode != 0:
        problems.append(f"cco report {path} --format csv: exit {out.returncode}: {out.stderr.strip()}")
        return []
    return list(csv.DictReader(io.StringIO(out.stdout)))


def same_number(a, b, what):
    """b as cco printed it (a CSV field: %.3f or %.6g, empty for none) against the module's a."""
    if a is None or (isinstance(a, float) and math.isnan(a)):
        check(b == "", f"{what}: module has none, cco printed '{b}'")
        return
    try:
        check(math.isclose(float(a), float(b), rel_tol=1e-5, abs_tol=6e-4), f"{what}: module {a}, cco {b}")
    except ValueError:
        problems.append(f"{what}: module {a}, cco printed '{b}'")


# --- the schema table and the match rule ---------------------------------------------------------
header = open(os.path.join(src, "src", "core", "model", "schema_names.hpp"), encoding="utf-8").read()
cpp = dict(re.findall(r'k(\w+?Schema(?:Legacy)?) = "([^"]+)"', header))
cpp_table = {v: cpp.get(k + "Legacy") for k, v in cpp.items() if not k.endswith("Legacy")}
check(cpp_table == ccoverlap._SCHEMAS,
      f"python's _SCHEMAS differs from schema_names.hpp: {sorted(set(cpp_table.items()) ^ set(ccoverlap._SCHEMAS.items()))}")

m = ccoverlap._match_schema
for doc, name, legacy, want in [
    ({"schema": "ccoverlap.steps", "schema_version": "1.4.0"}, "ccoverlap.steps", "cco.steps/1", "yes"),
    ({"schema": "ccoverlap.steps", "schema_version": "2.0.0"}, "ccoverlap.steps", "cco.steps/1", "other"),
    ({"schema": "ccoverlap.steps"}, "ccoverlap.steps", "cco.steps/1", "other"),
    ({"schema": "cco.steps/1"}, "ccoverlap.steps", "cco.steps/1", "yes"),
    ({"schema": "cco.steps/2"}, "ccoverlap.steps", "cco.steps/1", "other"),
    ({"schema": "ccoverlap.bench", "schema_version": "1.0.0"}, "ccoverlap.steps", "cco.steps/1", "no"),
    ({"schema": 3}, "ccoverlap.steps", None, "no"),
    (["ccoverlap.steps"], "ccoverlap.steps", None, "no"),
]:
    check(m(doc, name, legacy) == want, f"_match_schema({doc}, {name}, {legacy}) = {m(doc, name, legacy)}, want {want}")

fixtures = os.path.join(src, "tests", "fixtures")
tmp = tempfile.mkdtemp()

# --- step files: the earlier name, and the same file as cco writes it now ------------------------
legacy = os.path.join(fixtures, "report", "steps_legacy.json")
current = os.path.join(tmp, "steps.json")
subprocess.run([cco, "report", legacy, "--json=" + current], check=True, capture_output=True)
check(json.load(open(current))["schema"] == "ccoverlap.steps", "cco report --json did not write ccoverlap.steps")
for path in (legacy, current):
    py = rows_of(ccoverlap.read_steps(path))
    cc = report_csv(path)
    check(len(py) == len(cc) > 0, f"{path}: {len(py)} steps in python, {len(cc)} in cco")
    for p, c in zip(py, cc):
        w = f"{os.path.basename(path)} step {c['step']}"
        check(str(p["step"]) == c["step"] and str(p["config"]) == c["config"], f"{w}: step/config differ")
        check((p["config_name"] or "") == c["name"], f"{w}: config name {p['config_name']} vs {c['name']}")
        same_number(p["host_ms"], c["host_ms"], w + " host_ms")
        same_number(p["gpu_ms"], c["gpu_ms"], w + " gpu_ms")
        check(("1" if p["regular"] else "0") == c["regular"], f"{w}: regular differs")

# --- a run comparison ----------------------------------------------------------------------------
path = os.path.join(fixtures, "report", "run_compare.json")
py = rows_of(ccoverlap.read_compare(path))
cc = report_csv(path)
check(len(py) == len(cc) > 0, f"{path}: {len(py)} configurations in python, {len(cc)} in cco")
for i, (p, c) in enumerate(zip(py, cc)):
    w = f"run_compare config {c['config']}"
    check(p["name"] == c["config"] and str(p["n"]) == c["rounds"], f"{w}: name/rounds differ")
    for k in ("median_ms", "q1_ms", "q3_ms"):
        same_number(p[k], c[k], f"{w} {k}")
    if i > 0:
        same_number(p["vs_first_median_ms"], c["diff_ms"], f"{w} diff_ms")
        same_number(p["vs_first_lo_ms"], c["lo_ms"], f"{w} lo_ms")
        same_number(p["vs_first_hi_ms"], c["hi_ms"], f"{w} hi_ms")

# --- bench, step bench and tune results: the same rows --------------------------------------------
for rel, time_key in [("recorded/2026-11-22-h200x2/builtin2048x2_ar256M.json", "t_median_us"),
                      ("recorded/2026-11-24-h100-cta/step_tp_llama7b.json", "time_median_us"),
                      ("report/step_a.json", "time_median_us"),
                      ("recorded/2026-11-24-h100-search/tune_step.plan.json", "t_us"),
                      ("report/tune_pair.plan.json", "t_us")]:
    path = os.path.join(fixtures, rel)
    py = rows_of(ccoverlap.frame(path))
    cc = report_csv(path)
    check(len(py) == len(cc) > 0, f"{rel}: {len(py)} rows in python, {len(cc)} in cco")
    for p, c in zip(py, cc):
        w = f"{rel} row {c['label']}"
        if "label" in p and p["label"]:
            check(p["label"] == c["label"], f"{w}: label {p['label']} in python")
        if "size_bytes" in c:
            check(str(p["size_bytes"]) == c["size_bytes"], f"{w}: size differs")
        same_number(p[time_key], c["t_us"], w + " time")

# --- one column vocabulary: a file of every kind in one table ------------------------------------
# Every row has "kind", "label" and "time_us" (the kind's own time column, in us), so one file of
# each kind goes into one DataFrame with one time column (issue 45 item 4).
analysis = os.path.join(tmp, "analysis.json")
subprocess.run([cco, "report", os.path.join(fixtures, "report", "trace_rank0.json"),
                os.path.join(fixtures, "report", "trace_rank1.json"), "--json=" + analysis],
               check=True, capture_output=True)
trace = os.path.join(tmp, "trace.json.gz")
import gzip  # noqa: E402
with gzip.open(trace, "wb") as f:  # a PyTorch-like trace, gzip: its kernels and its step
    f.write(json.dumps({"schemaVersion": 1, "distributedInfo": {"rank": 3}, "traceEvents": [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#551", "pid": 9, "tid": 9, "ts": 10, "dur": 90},
        {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "pid": 0, "tid": 7,
         "ts": 20, "dur": 30, "args": {"device": 0, "stream": 7}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 9, "tid": 9, "ts": 12, "dur": 3}]}).encode())
own_time = {"bench": ("t_median_us", 1), "step_bench": ("time_median_us", 1), "tune": ("t_us", 1),
            "compare": ("median_ms", 1e3), "steps": ("gpu_ms", 1e3), "step_diagnosis": ("time_ns", 1e-3),
            "kernel": ("time_us", 1), "profiler_step": ("time_us", 1)}
together = []
for rel in ["recorded/2026-11-22-h200x2/builtin2048x2_ar256M.json", "report/step_a.json",
            "report/tune_pair.plan.json", "report/run_compare.json", "report/steps_legacy.json",
            analysis, os.path.join(fixtures, "report", "trace_rank0.json"), trace]:
    path = rel if os.path.isabs(rel) else os.path.join(fixtures, rel)
    together += rows_of(ccoverlap.frame(path))
tables = ccoverlap.read_trace(trace)
steps_of_trace, kernels_of_trace = rows_of(tables["steps"]), rows_of(tables["kernels"])
check([(r["step"], r["rank"], r["time_us"]) for r in steps_of_trace] == [(551, 3, 90)],
      f"read_trace's steps: {steps_of_trace}")
check([(r["rank"], r["category"], r["time_us"]) for r in kernels_of_trace] == [(3, "communication", 30)],
      f"read_trace's kernels: {kernels_of_trace}")
together += steps_of_trace
# A file cco merged holds the profiler's steps as ranges (domain "kineto"): read_trace finds them.
merged = os.path.join(tmp, "merged.json")
plain = os.path.join(tmp, "trace_plain.json")
with gzip.open(trace) as f:
    open(plain, "wb").write(f.read())
subprocess.run([cco, "report", plain, "--merge", merged], check=True, capture_output=True)
got = [(r["step"], r["rank"], r["time_us"]) for r in rows_of(ccoverlap.read_trace(merged)["steps"])]
check(got == [(551, 3, 90)], f"read_trace of a merged file: steps {got}")
# gzip of two members (as cco reads it): the same rows.
two = os.path.join(tmp, "two_members.json.gz")
text = open(plain, "rb").read()
open(two, "wb").write(gzip.compress(text[:100]) + gzip.compress(text[100:]))
check(rows_of(ccoverlap.frame(two)) == rows_of(ccoverlap.frame(plain)), "a gzip of two members reads as its text")
twice = os.path.join(tmp, "twice.json.gz")
open(twice, "wb").write(gzip.compress(gzip.compress(text)))
try:
    ccoverlap.frame(twice)
    problems.append("python read a trace gzipped twice")
except ValueError as e:
    check("compressed twice" in str(e), f"a trace gzipped twice: {e}")
kinds = sorted({r.get("kind") for r in together})
check(kinds == sorted(own_time), f"kinds in one table: {kinds}")
for r in together:
    w = f"{r.get('kind')} row {r.get('label')}"
    check(isinstance(r.get("label"), str) and r["label"] != "", f"{w}: no label")
    key, scale = own_time.get(r.get("kind"), (None, 1))
    own = r.get(key)
    if r.get("kind") == "steps" and own is None:
        own = r.get("host_ms")
    check(isinstance(r.get("time_us"), (int, float)) and own is not None and
          math.isclose(r["time_us"], own * scale, rel_tol=1e-9), f"{w}: time_us {r.get('time_us')} against {key} {own}")
try:
    import pandas as pd  # noqa: E402
    df = pd.DataFrame(together)
    check(df["time_us"].notna().all() and sorted(df["kind"].unique()) == sorted(own_time),
          "one DataFrame of every kind has a time_us of every row")
except ImportError:
    pass  # the rows above are what a DataFrame is made of

# --- another major version: refused by both ------------------------------------------------------
doc = json.load(open(current))
doc["schema_version"] = "2.0.0"
newer = os.path.join(tmp, "steps_v2.json")
json.dump(doc, open(newer, "w"))
try:
    ccoverlap.read_steps(newer)
    problems.append("python read a ccoverlap.steps 2.0.0 file")
except ValueError as e:
    check("version" in str(e), f"python's refusal does not name the version: {e}")
out = subprocess.run([cco, "report", newer], capture_output=True, text=True)
check(out.returncode == 2 and "version" in out.stderr, f"cco report on 2.0.0: exit {out.returncode}: {out.stderr}")

for p in problems:
    print("python readers: " + p)
if not problems:
    print("python readers: schema table and rule agree; the same rows as cco report from 7 fixtures; "
          "one column vocabulary over 9 kinds of rows")
sys.exit(1 if problems else 0)
