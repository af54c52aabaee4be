"""cco's Python start-up hook: framework controls for unmodified PyTorch programs (docs/FRAMEWORK.md).

`cco run --framework ...` puts this file's folder first on PYTHONPATH, so every Python process
of the job imports it at start-up (the `site` module imports `sitecustomize`). It then:

- reads CCO_FRAMEWORK, the controls asked for ("NAME:TARGET:KEYWORD:VALUE;..." as
  src/core/model/framework.cpp writes it), and does nothing more when it is unset;
- waits, without importing anything of PyTorch, for the module that defines a target
  (`torch.nn.parallel.distributed` for DDP, `torch.distributed.fsdp` for FSDP2's fully_shard)
  to be imported by the program, and wraps what the program calls there: a keyword the program
  passes itself is kept (and said), a keyword it leaves out gets cco's value;
- writes what it did to CCO_FRAMEWORK_OUT/framework-PID.json, for cco's summary at the end, and
  at exit the most device memory the process's PyTorch held (also with no control asked for:
  the baseline's runs of cco tune --framework-candidate);
- imports the next `sitecustomize` on the path (the program's or the system's own), as if this
  one were not there.

It never fails the program: any error here is one line on stderr and the program runs as if no
control had been asked for. Only rank 0 (RANK unset or 0) prints.
"""

import sys


def _install():
    import os

    spec = os.environ.get("CCO_FRAMEWORK", "")
    out_dir = os.environ.get("CCO_FRAMEWORK_OUT", "")
    if not spec and not out_dir:
        return
    loud = os.environ.get("RANK", "0") in ("", "0")
    said = set()

    def say(text):
        if loud and text not in said:
            said.add(text)
            try:  # a program's own stderr (closed, a pipe gone, a writer without flush) wins
                print("cco: framework: " + text, file=sys.stderr, flush=True)
            except Exception:
                pass

    # What each target wraps: (module, attribute, "class" (its __init__) or "function").
    targets = {
        "ddp": [("torch.nn.parallel.distributed", "DistributedDataParallel", "class")],
        "fsdp": [("torch.distributed.fsdp", "fully_shard", "function"),
                 ("torch.distributed._composable.fsdp", "fully_shard", "function")],
    }
    report = {"pid": 0, "rank": os.environ.get("RANK", ""), "events": []}

    def write():
        if not out_dir:
            return
        try:
            import json
            report["pid"] = os.getpid()  # after a fork, the child's own file
            path = os.path.join(out_dir, f"framework-{os.getpid()}.json")
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(report, f)
            os.replace(tmp, path)
        except Exception as e:  # the folder went away, a full disk: only cco's summary is lost
            say(f"cannot write the report for cco ({type(e).__name__}: {e})")

    def record(event):
        if len(report["events"]) >= 256:  # a program building thousands of modules: count them
            report["dropped"] = report.get("dropped", 0) + 1
            return
        report["events"].append(event)
        write()

    def record_memory():
        """At exit: the most device memory this process's PyTorch held, and the device's size
        (what a candidate costs in memory). Nothing when the program never started CUDA."""
        try:
            torch = sys.modules.get("torch")
            if report.get("forked") or torch is None or not torch.cuda.is_available() or \
                    not torch.cuda.is_initialized():
                return
            dev = torch.cuda.current_device()
            report["memory"] = {"device": int(dev),
                                "peak_reserved_bytes": int(torch.cuda.max_memory_reserved(dev)),
                                "total_bytes": int(torch.cuda.get_device_properties(dev).total_memory)}
            write()
        except Exception:
            pass  # the figure is lost, never the program's exit

    if out_dir:
        import atexit
        atexit.register(record_memory)

    def forked():
        # A child after fork starts its own report: its parent's events are the parent's, and its
        # copy of the parent's memory figures is not its own (a forked child cannot use CUDA).
        report["events"] = []
        report.pop("dropped", None)
        report["forked"] = True

    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=forked)

    wanted = {}  # target -> [(name, keyword, value)]
    for item in spec.split(";")[:64] if spec else []:
        parts = item.split(":")
        if len(parts) != 4 or parts[1] not in targets:
            say(f"CCO_FRAMEWORK item '{item[:80]}' is not NAME:TARGET:KEYWORD:VALUE of a known "
                "target; ignored")
            continue
        name, target, keyword, text = parts
        if text in ("True", "False"):
            value = text == "True"
        else:
            try:
                value = float(text) if "." in text else int(text)
            except ValueError:
                say(f"{name}: value '{text[:40]}' is not a switch or a number; ignored")
                continue
        wanted.setdefault(target, []).append((name, keyword, value))
    if not wanted:
        return

    def set_keywords(what, target, fn, args, kwargs):
        """Sets the keywords the call leaves out; returns what to say and record once it built."""
        import inspect
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            sig = None
        bound = None
        if sig is not None:
            try:
                bound = sig.bind_partial(*args, **kwargs).arguments
            except TypeError:
                bound = None  # the call is wrong anyway: let the program's own error speak
        done = []
        for name, keyword, value in wanted[target]:
            if sig is None or bound is None or (keyword not in sig.parameters and not any(
                    p.kind == p.VAR_KEYWORD for p in sig.parameters.values())):
                done.append((f"{what} takes no keyword {keyword} in this PyTorch: {name} not applied",
                             {"control": name, "module": what, "outcome": "unsupported"}))
            elif keyword in bound or keyword in kwargs:
                own = bound[keyword] if keyword in bound else kwargs[keyword]
                same = own == value and type(own) is type(value)
                text = (f"{what}: the program sets {keyword}={own!r} itself, as {name} asks" if same
                        else f"{what}: the program sets {keyword}={own!r} itself: kept ({name} not "
                             "applied)")
                done.append((text, {"control": name, "module": what,
                                    "outcome": "same" if same else "kept",
                                    "program_value": repr(own)}))
            else:
                kwargs[keyword] = value
                done.append((f"{what} built with {keyword}={value!r} ({name})",
                             {"control": name, "module": what, "outcome": "applied",
                              "value": repr(value)}))
        return done

    def built(done):
        try:
            for text, event in done:
                say(text)
                record(event)
        except Exception:
            pass  # only cco's summary is lost

    def decide(what, target, fn, args, kwargs):
        """The keywords to add to the call, and what to say once it built; on any error none."""
        try:
            asked = dict(kwargs)
            done = set_keywords(what, target, fn, args, asked)
            return {k: v for k, v in asked.items() if k not in kwargs}, done
        except Exception as e:
            say(f"{what}: {type(e).__name__}: {e}; built as the program asks")
            return {}, []

    def wrap(module, attr, kind, target):
        import functools
        obj = getattr(module, attr, None)
        if obj is None or getattr(obj, "_cco_framework", False):
            return
        what = attr
        if kind == "class":
            init = obj.__init__

            @functools.wraps(init)
            def __init__(self, *args, **kwargs):
                added, done = decide(what, target, init, (self,) + args, kwargs)
                init(self, *args, **kwargs, **added)  # the program's own errors pass as they are
                built(done)

            __init__._cco_framework = True
            obj.__init__ = __init__
            obj._cco_framework = True
        else:
            @functools.wraps(obj)
            def call(*args, **kwargs):
                added, done = decide(what, target, obj, args, kwargs)
                result = obj(*args, **kwargs, **added)
                built(done)
                return result

            call._cco_framework = True
            setattr(module, attr, call)

    watched = {}
    for target in wanted:
        for module_name, attr, kind in targets[target]:
            watched[module_name] = (attr, kind, target)

    def patch(module):
        attr, kind, target = watched[module.__name__]
        try:
            wrap(module, attr, kind, target)
        except Exception as e:
            say(f"cannot wrap {module.__name__}.{attr} ({type(e).__name__}: {e}); "
                "the program runs without it")

    # Duck-typed, not importlib.abc's classes: importing importlib.abc loads dozens of standard
    # modules before the program's folder is on sys.path (a program's own random.py would lose).
    class Loader:
        def __init__(self, inner):
            self._inner = inner

        def create_module(self, spec):
            create = getattr(self._inner, "create_module", None)
            return create(spec) if create else None

        def exec_module(self, module):
            self._inner.exec_module(module)
            patch(module)

        def __getattr__(self, name):
            return getattr(self._inner, name)

    class Finder:
        busy = set()  # names being looked up: the other finders are asked once, never us again

        def find_spec(self, fullname, path=None, target=None):
            if fullname not in watched or fullname in Finder.busy:
                return None
            Finder.busy.add(fullname)
            try:
                for finder in sys.meta_path:
                    if finder is self or getattr(finder, "_cco_framework", False) or \
                            not hasattr(finder, "find_spec"):
                        continue
                    found = finder.find_spec(fullname, path, target)
                    if found is not None:
                        if found.loader is not None and hasattr(found.loader, "exec_module"):
                            found.loader = Loader(found.loader)
                        return found
                return None
            except Exception:
                return None  # the import system goes on as without cco
            finally:
                Finder.busy.discard(fullname)

    Finder._cco_framework = True

    for name in watched:  # already imported (a sitecustomize before this one imported torch)
        if name in sys.modules:
            patch(sys.modules[name])
    sys.meta_path.insert(0, Finder())


_MARK = "cco's Python start-up hook"  # in every copy's first line: another cco's is skipped


def _chain():
    """Import the sitecustomize this one hides (the program's, the system's), as `site` would."""
    import os

    # The import system's own frozen modules, loaded in every Python: importlib.util and even
    # importlib.machinery would load modules the program has not (and might shadow).
    try:
        from _frozen_importlib import module_from_spec
        from _frozen_importlib_external import PathFinder
    except ImportError:
        from importlib.machinery import PathFinder
        from importlib.util import module_from_spec
    rest = list(sys.path)
    while True:
        spec = PathFinder.find_spec("sitecustomize", rest)
        if spec is None or spec.loader is None:
            return
        origin = spec.origin or ""
        try:
            with open(origin, "rb") as f:
                ours = _MARK.encode() in f.read(256)
        except OSError:
            ours = False
        if not ours:
            break
        # Ours (this copy, or another cco's folder also on the path): look past its folder.
        here = os.path.dirname(os.path.abspath(origin))
        left = [p for p in rest if os.path.abspath(p or ".") != here]
        if len(left) == len(rest):
            return  # not found by its folder's name: stop rather than loop
        rest = left
    module = module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)  # its errors are its own, as without cco


try:
    if not getattr(sys, "_cco_framework_hook", False):  # once per process, whatever copies run
        sys._cco_framework_hook = True
        _install()
except Exception as _e:  # never fail the program
    print(f"cco: framework: the start-up hook failed ({type(_e).__name__}: {_e}); the program "
          "runs without framework controls", file=sys.stderr)
_chain()
