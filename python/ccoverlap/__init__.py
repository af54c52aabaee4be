"""ccoverlap for PyTorch programs: talk to libcco_preload.so from Python (docs/STEPS.md).

The module works only inside a program started under the preload library (``cco run``); without
it every call says so once (on stderr) and does nothing, so a program may import it
unconditionally.

    import ccoverlap
    for batch in loader:
        ccoverlap.step()                  # a step starts here (when automatic detection is not wanted)
        ...
    with ccoverlap.policy("off"):         # a region under another (switchable) policy
        evaluate()
    print(ccoverlap.stats())              # the library's counters, one dict per policy used

Loaders read ccoverlap's JSON files (step files, comparisons, bench/tune/plan files) into pandas
DataFrames when pandas is installed, else into lists of dicts.

It talks to the library through its versioned C API (src/inject/preload/cco_api.h), found with
dlsym in the running process: nothing is linked, nothing is loaded.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import sys
from typing import Any, Dict, Iterator, List, Optional

__all__ = ["available", "step", "policy", "current_policy", "stats", "load", "frame",
           "read_steps", "read_compare", "API_VERSION"]

API_VERSION = 1  # the C API version this module needs; later versions only add functions
_MAX_FILE = 256 << 20  # the loaders read at most this much

_lib: Any = None  # None: not looked up yet; False: absent
_said: set = set()


def _say_once(key: str, text: str) -> None:
    if key not in _said:
        _said.add(key)
        print(f"ccoverlap: {text}", file=sys.stderr)


def _api():
    global _lib
    if _lib is None:
        try:
            h = ctypes.CDLL(None)
            version = h.cco_api_version
        except (OSError, AttributeError):
            _lib = False
        else:
            version.restype = ctypes.c_int
            v = version()
            if v < API_VERSION:
                _say_once("version", f"the preload library speaks C API version {v}, this module "
                                     f"needs version {API_VERSION}; doing nothing")
                _lib = False
            else:
                h.cco_step_mark.argtypes = [ctypes.c_void_p]
                h.cco_step_mark.restype = ctypes.c_int
                h.cco_policy_set.argtypes = [ctypes.c_char_p]
                h.cco_policy_set.restype = ctypes.c_int
                for name in ("cco_policy_get", "cco_stats"):
                    getattr(h, name).argtypes = [ctypes.c_char_p, ctypes.c_ulong]
                    getattr(h, name).restype = ctypes.c_long
                h.cco_last_error.restype = ctypes.c_char_p
                _lib = h
    if _lib is False:
        _say_once("absent", "libcco_preload.so is not loaded in this process (start the program "
                            "with `cco run`); ccoverlap calls do nothing")
        return None
    return _lib


def _error(h) -> str:
    e = h.cco_last_error()
    return e.decode(errors="replace") if e else "unknown error"


def _text(fn) -> str:
    n = fn(None, 0)
    buf = ctypes.create_string_buffer(n + 1)
    fn(buf, n + 1)
    return buf.value.decode(errors="replace")


def available() -> bool:
    """True when the preload library is loaded and speaks this module's API version."""
    return _api() is not None


def _stream_handle(stream) -> Optional[int]:
    if stream is None:
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
            return int(torch.cuda.current_stream().cuda_stream)
        return 0
    if hasattr(stream, "cuda_stream"):
        return int(stream.cuda_stream)
    return int(stream)


def step(stream=None) -> bool:
    """Marks the start of a step (and the end of the previous one).

    ``stream``: a torch.cuda.Stream, a raw handle, or None for PyTorch's current stream. From the
    first mark on, marks alone delimit steps. Returns True when the library took the mark.
    """
    h = _api()
    if h is None:
        return False
    rc = h.cco_step_mark(ctypes.c_void_p(_stream_handle(stream) or None))
    if rc != 0:
        _say_once(f"step{rc}", f"step marks are not recorded: {_error(h)}")
        return False
    return True


def current_policy() -> Optional[str]:
    """The name of the policy in force, or None without the library."""
    h = _api()
    return None if h is None else _text(h.cco_policy_get)


@contextlib.contextmanager
def policy(name: str) -> Iterator[None]:
    """Runs the body under another policy or plan file (one that can switch at run time:
    shaping, and priority by launch attribute), then restores the one before.

    Raises ValueError when the library refuses it; does nothing without the library.
    """
    h = _api()
    if h is None:
        yield
        return
    before = _text(h.cco_policy_get)
    if h.cco_policy_set(name.encode()) != 0:
        raise ValueError(f"ccoverlap.policy({name!r}): {_error(h)}")
    try:
        yield
    finally:
        if h.cco_policy_set(before.encode()) != 0:
            _say_once("restore", f"could not restore policy {before!r}: {_error(h)}")


def stats() -> List[Dict[str, str]]:
    """The library's counters: one dict per policy used (keys as in CCO_STATS's lines)."""
    h = _api()
    if h is None:
        return []
    out = []
    for line in _text(h.cco_stats).splitlines():
        d: Dict[str, str] = {}
        for part in line.split():
            if "=" in part:
                k, v = part.split("=", 1)
                d[k] = v
        if d:
            out.append(d)
    return out


# ---- loaders ------------------------------------------------------------------------------------

# The schema names of src/core/model/schema_names.hpp, each with the name earlier versions wrote (still
# read); tests/app/report/test_python_readers.py checks that the two lists agree.
_SCHEMAS: Dict[str, Optional[str]] = {
    "ccoverlap.bench": None, "ccoverlap.step_bench": None, "ccoverlap.plan": None,
    "ccoverlap.footprint": None, "ccoverlap.workload": None, "ccoverlap.trace": None,
    "ccoverlap.trace_analysis": None, "ccoverlap.step_diagnosis": None,
    "ccoverlap.steps": "cco.steps/1", "ccoverlap.run_compare": "cco.compare/1",
    "ccoverlap.tune_decision": "cco.tune/1", "ccoverlap.compare": None,
    "ccoverlap.sweep_report": None, "ccoverlap.result_report": None, "ccoverlap.doctor": None,
    "ccoverlap.info": None,
}


def _match_schema(doc: Any, name: str, legacy: Optional[str] = None) -> str:
    """What doc is to a reader of `name` (or of its former name `legacy`), as cco's own readers
    decide it (src/core/model/schema.hpp, match_schema): "yes" (this kind, major version 1, or the
    legacy name itself), "other" (this kind, a version this module does not read), "no"."""
    if not isinstance(doc, dict) or not isinstance(doc.get("schema"), str):
        return "no"
    schema = doc["schema"]
    if legacy:
        if schema == legacy:
            return "yes"
        if schema.startswith(legacy[: legacy.find("/") + 1]):
            return "other"
    if schema != name:
        return "no"
    version = doc.get("schema_version")
    version = version if isinstance(version, str) else ""
    return "yes" if version.split(".")[0] == "1" else "other"


def _kind(doc: Dict[str, Any], path: str) -> str:
    """The current name of doc's kind (a legacy name gives the current one); a kind of another
    version raises ValueError; a schema this module does not know comes back as it is."""
    for name, legacy in _SCHEMAS.items():
        m = _match_schema(doc, name, legacy)
        if m == "other":
            found = f"{doc['schema']} {doc.get('schema_version', '(no version)')}"
            raise ValueError(f"{path}: {found} is a version this module does not read ({name} 1.x)")
        if m == "yes":
            return name
    return str(doc.get("schema", ""))

def _read_json(path: str) -> Any:
    """A JSON file (gzip read as it inflates), bounded: regular files only, at most _MAX_FILE of
    text."""
    st = os.stat(path)
    import stat as _stat
    if not _stat.S_ISREG(st.st_mode):
        raise ValueError(f"{path}: not a regular file")
    if st.st_size > _MAX_FILE:
        raise ValueError(f"{path}: larger than {_MAX_FILE} bytes")
    with open(path, "rb") as f:
        data = f.read(_MAX_FILE + 1)
    if data[:2] == b"\x1f\x8b":  # gzip, every member (as cco reads it), bounded
        import zlib
        out, rest = b"", data
        while rest:
            z = zlib.decompressobj(16 + zlib.MAX_WBITS)
            try:
                out += z.decompress(rest, _MAX_FILE + 1 - len(out))
            except zlib.error as e:
                raise ValueError(f"{path}: not valid gzip ({e})") from None
            if len(out) > _MAX_FILE or z.unconsumed_tail:
                raise ValueError(f"{path}: inflates to more than {_MAX_FILE} bytes")
            if not z.eof:
                raise ValueError(f"{path}: not valid gzip (the data ends early)")
            rest = z.unused_data
        if out[:2] == b"\x1f\x8b":
            raise ValueError(f"{path}: gzip inside gzip: the file was compressed twice; decompress it "
                             "once (gunzip) and read that")
        data = out
    try:
        return json.loads(data)
    except ValueError as e:
        raise ValueError(f"{path}: not JSON ({e})") from None


def _is_trace(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list)


def load(path: str) -> Dict[str, Any]:
    """Reads one of ccoverlap's JSON files (bounded; regular files only; gzip too). A trace (cco's,
    whose schema is under otherData, or a PyTorch profiler's) is read as it is."""
    doc = _read_json(path)
    if _is_trace(doc):
        return doc
    if not isinstance(doc, dict) or "schema" not in doc:
        raise ValueError(f"{path}: not a ccoverlap file (no schema)")
    _kind(doc, path)  # a file of another version: refused here
    return doc


# ---- one column vocabulary ----------------------------------------------------------------------
# Every row frame() gives, of any file, has these columns beside the file's own (which stay, so
# the old names still read): "kind" (what the row is: bench, step_bench, tune, compare, steps,
# step_diagnosis, kernel, profiler_step), "label" (the row's name), "time_us" (its time: the
# median of a measured row, a step's or a kernel's own time) and, where the file has a spread,
# "time_p25_us" and "time_p75_us". One file of every kind then goes into one DataFrame.
def _vocabulary(kind: str, row: Dict[str, Any]) -> Dict[str, Any]:
    def pick(*keys, scale=1.0):
        for k in keys:
            v = row.get(k)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return v * scale
        return None

    out = dict(row)
    out["kind"] = kind
    if kind == "bench":
        # as cco report's CSV names the row (report::sweep): the mode, and a shaped row's target
        mode, k = row.get("mode") or "", row.get("target_blocks_per_sm") or 0
        out["label"] = row.get("label") or (mode + (f" k={k}" if mode in ("shape", "shape+priority") and k > 0 else ""))
        t = (pick("t_median_us"), pick("t_p25_us"), pick("t_p75_us"))
    elif kind == "step_bench":
        t = (pick("time_median_us"), pick("time_p25_us"), pick("time_p75_us"))
    elif kind == "tune":
        t = (pick("t_us"), pick("p25_us"), pick("p75_us"))
    elif kind == "compare":
        out["label"] = row.get("name")
        t = (pick("median_ms", scale=1e3), pick("q1_ms", scale=1e3), pick("q3_ms", scale=1e3))
    elif kind == "steps":
        out["label"] = row.get("config_name")
        t = (pick("gpu_ms", "host_ms", scale=1e3), None, None)
    elif kind == "step_diagnosis":
        out["label"] = f"rank {row.get('rank')} step {row.get('step')}"
        t = (pick("time_ns", scale=1e-3), None, None)
    else:  # kernel, profiler_step: made with their label and time
        t = (pick("time_us"), None, None)
    out.setdefault("label", None)
    out["time_us"] = t[0]
    if t[1] is not None or t[2] is not None:
        out["time_p25_us"], out["time_p75_us"] = t[1], t[2]
    return out


def _row_kind(doc: Dict[str, Any]) -> str:
    schema = _kind(doc, "")
    return {"ccoverlap.bench": "bench", "ccoverlap.step_bench": "step_bench", "ccoverlap.plan": "tune",
            "ccoverlap.run_compare": "compare", "ccoverlap.steps": "steps",
            "ccoverlap.trace_analysis": "step_diagnosis"}.get(schema, schema.split(".")[-1])


# ---- traces --------------------------------------------------------------------------------------
def _trace_rank(doc: Dict[str, Any]) -> Optional[int]:
    d = doc.get("distributedInfo")
    return d.get("rank") if isinstance(d, dict) and isinstance(d.get("rank"), int) else None


def _trace_rows(doc: Dict[str, Any]) -> Dict[str, List[Dict[str, Any]]]:
    """A trace's kernel table (one row per kernel, copy or memset: rank, device, stream, name,
    category, start_us and time_us on the file's clock) and its steps (the profiler's
    ProfilerStep#N annotations, which cco's traces carry too: rank, step, start_us, time_us)."""
    ours = (doc.get("otherData") or {}).get("ccoverlap")
    rank = _trace_rank(doc)
    kernels, steps = [], []
    for e in doc["traceEvents"]:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        cat, name, args = e.get("cat"), e.get("name"), e.get("args") or {}
        ts, dur = e.get("ts"), e.get("dur")
        if not isinstance(ts, (int, float)) or not isinstance(dur, (int, float)):
            continue
        if cat in ("kernel", "gpu_memcpy", "gpu_memset", "compute", "communication"):
            kind = args.get("kind") if ours else None
            if not kind:
                kind = "communication" if cat == "communication" or "nccl" in str(name).lower() else "compute"
            kernels.append(_vocabulary("kernel", {
                "rank": e.get("pid") if ours else (rank if rank is not None else e.get("pid")),
                "device": args.get("device"), "stream": args.get("stream", e.get("tid")),
                "label": name, "category": kind, "copy": cat if cat != "kernel" else None,
                "start_us": ts, "time_us": dur}))
        elif cat in ("user_annotation", "gpu_user_annotation", "nvtx") and str(name).startswith("ProfilerStep#"):
            # The profiler's CPU-side step; a file cco merged holds it as a range of the domain
            # "kineto" (its GPU-side twin: "kineto.gpu", like gpu_user_annotation, left out).
            if cat == "gpu_user_annotation" or (cat == "nvtx" and args.get("domain") != "kineto"):
                continue
            try:
                number = int(str(name)[len("ProfilerStep#"):])
            except ValueError:
                continue
            steps.append(_vocabulary("profiler_step", {
                "rank": e.get("pid") if ours else rank, "step": number, "label": name,
                "start_us": ts, "time_us": dur}))
    return {"kernels": kernels, "steps": steps}


def _as_frame(rows: List[Dict[str, Any]]):
    try:
        import pandas as pd  # noqa: WPS433 (optional)
    except ImportError:
        return rows
    return pd.DataFrame(rows)


def read_trace(path: str) -> Dict[str, Any]:
    """A trace (cco run --trace's, gzip too, or a PyTorch profiler's) as two tables: "kernels" (one
    row per kernel, copy or memset) and "steps" (one row per profiler step, ProfilerStep#N): pandas
    DataFrames if pandas is installed, else lists of dicts, with frame()'s column vocabulary."""
    doc = load(path)
    if not _is_trace(doc):
        raise ValueError(f"{path}: not a trace (no traceEvents)")
    return {k: _as_frame(v) for k, v in _trace_rows(doc).items()}


def _rows(doc: Dict[str, Any]) -> List[Dict[str, Any]]:
    schema = _kind(doc, "")
    if schema == "ccoverlap.steps":
        meta = {k: doc.get(k) for k in ("pid", "rank", "device", "source", "period")}
        configs = doc.get("configs") or []
        return [dict(meta, **s, config_name=configs[s["config"]] if s["config"] < len(configs) else None)
                for s in doc.get("steps", [])]
    if schema == "ccoverlap.run_compare":
        rows = []
        for c in doc.get("configs", []):
            r = {k: v for k, v in c.items() if k != "vs_first"}
            for k, v in (c.get("vs_first") or {}).items():
                r[f"vs_first_{k}"] = v
            rows.append(r)
        return rows
    # A trace analysis (cco report TRACE --json): one row per rank and step of the diagnosis,
    # its parts and bounds as flat columns (bounds_ns {scheduling} -> bounds_scheduling_ns).
    if schema == "ccoverlap.trace_analysis":
        diag = doc.get("diagnosis") or {}
        rows = []
        for r in diag.get("ranks") or []:
            for i, st in enumerate(r.get("steps") or []):
                if isinstance(st, dict):
                    rows.append(dict(_flat(st), rank=r.get("rank"), step=i))
        return rows
    # A plan written by cco tune: the rows it tried (a pair or a workload), or the decisions of
    # an online search (cco tune -- CMD).
    tuning = doc.get("tuning") if schema == "ccoverlap.plan" else None
    if isinstance(tuning, dict):
        for key in ("tried", "decisions"):
            if isinstance(tuning.get(key), list):
                return [_flat(r) if isinstance(r, dict) else {"value": r} for r in tuning[key]]
    for key in ("results", "rows", "tried", "steps", "configs"):
        if isinstance(doc.get(key), list):
            return [_flat(r) if isinstance(r, dict) else {"value": r} for r in doc[key]]
    return [doc]


def _flat(row: Dict[str, Any], prefix: str = "") -> Dict[str, Any]:
    """Nested objects as flat columns: {"t_us": {"median": 5}} -> t_median_us, {"a": {"b": 1}}
    -> a_b (one column per number, as a DataFrame wants them)."""
    out: Dict[str, Any] = {}
    for k, v in row.items():
        if isinstance(v, dict):
            unit = next((u for u in ("_us", "_ms", "_ns") if k.endswith(u)), "")
            base = k[: -len(unit)] if unit else k
            for k2, v2 in _flat(v).items():
                out[f"{prefix}{base}_{k2}{unit}"] = v2
        else:
            out[prefix + k] = v
    return out


def frame(path: str):
    """The rows of a ccoverlap JSON file: a pandas DataFrame if pandas is installed, else a list
    of dicts, nested numbers as flat columns (t_median_us). Step files give one row per step,
    comparisons one per configuration, bench and step results their result rows, a tuned plan the
    rows its search tried (or the decisions of cco tune -- CMD), a trace analysis (cco report
    TRACE --json) one row per rank and step of its diagnosis, a trace its kernel table (its steps:
    read_trace). Every row also has "kind", "label" and "time_us" (and "time_p25_us",
    "time_p75_us" where the file has a spread): one vocabulary across files (docs/STEPS.md)."""
    doc = load(path)
    if _is_trace(doc):
        return _as_frame(_trace_rows(doc)["kernels"])
    kind = _row_kind(doc)
    return _as_frame([_vocabulary(kind, r) for r in _rows(doc)])


def read_steps(path: str):
    """A step file (ccoverlap.steps 1.x; cco.steps/1 before) as rows: one per step."""
    if _kind(load(path), path) != "ccoverlap.steps":
        raise ValueError(f"{path}: not a step file")
    return frame(path)


def read_compare(path: str):
    """A comparison (ccoverlap.run_compare 1.x, cco run --compare-json; cco.compare/1 before) as
    rows: one per configuration."""
    if _kind(load(path), path) != "ccoverlap.run_compare":
        raise ValueError(f"{path}: not a comparison file")
    return frame(path)
