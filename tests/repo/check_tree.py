#!/usr/bin/env python3
"""The repository is a product (issue 35 item 4): checks of the tree, GPU-free, in the default suite.

- every relative Markdown link in README.md, docs/ and examples/ points at a file or folder that exists,
  and every page "docs/....md" named anywhere in the tree (code, scripts, packaging) exists;
- docs/ stays under 2 MB, and docs/results/ holds pages and the files they cite, never raw logs
  (*.log, *.err, *.result) and no file no page names;
- scripts/ holds at most 11 files (what users and CI run, and one GPU runner);
- no test reads data from docs/results/ (tests read fixtures from tests/);
- src/ has the five layers and nothing else (src/LAYER/AREA: where the code runs), every area is in
  LAYERS, and tests/ mirrors it (tests/LAYER/AREA, beside the shared folders);
- no two folders anywhere in src/ or tests/ whose names differ by one letter (workload/workloads);
- the areas of src/ include only what their layer may (INCLUDE_RULES below, drawn in
  docs/ARCHITECTURE.md), and the core's no CUDA, NCCL, CUPTI or cuBLAS header;
- every CCO_* environment variable is spelled as a bare literal ("CCO_X") once, in
  src/core/model/env_names.hpp; everywhere else in src/ code names it cco::env::kX;
- every schema name of a file cco writes or reads ("ccoverlap.X", and the earlier "cco.X/N") is
  spelled as a literal once, in src/core/model/schema_names.hpp; elsewhere src/ names it
  cco::model::kX.
Usage: check_tree.py [ROOT]   (default: the repository holding this file). Exit 1 with one line per
problem, 0 when the tree is as it should be.
"""
import os
import re
import sys

DOCS_LIMIT = 2 * 1024 * 1024
SCRIPTS_LIMIT = 11
RAW_LOGS = (".log", ".err", ".result")
# The folders of tests/ that are not layers of src/ (docs/ARCHITECTURE.md, "Layers").
TESTS_SHARED = {"fixtures", "fuzz", "repo", "tools"}

# src/LAYER/AREA: the layers, by where their code runs, and their areas.
LAYERS = {
    "core": {"model", "plan", "results", "steps", "trace", "workload"},  # GPU-free, cco.core: in all three binaries
    "gpu": {"runtime", "kernels"},
    "lab": {"bench", "tune", "bootstrap"},                    # cco bench, cco tune, their ranks
    "inject": {"preload", "nccl_tuner", "common", "startup"},  # loaded into the user's program
    "app": {"cli", "report"},                                 # the cco command
}
LAYER_OF = {a: layer for layer, areas in LAYERS.items() for a in areas}
# What each area may include from the others ("area/..." includes).
INCLUDE_RULES = {
    "model": set(),
    "workload": {"model"},
    "plan": {"model"},
    "results": {"model"},
    "steps": {"model"},
    "trace": {"model", "steps"},
    "runtime": {"model"},
    "kernels": {"model", "runtime", "workload"},
    "bootstrap": {"model"},
    "bench": {"model", "workload", "bootstrap", "trace", "runtime", "kernels", "results"},
    "tune": {"model", "workload", "bootstrap", "plan", "runtime", "bench"},
    "common": {"model", "plan"},
    "preload": {"model", "plan", "steps", "trace", "common"},
    "nccl_tuner": {"model", "plan", "common"},
    "startup": set(),  # Python only
    "report": {"model", "steps", "trace", "results"},
    "cli": LAYERS["core"] | {"report", "bootstrap", "runtime", "bench", "tune", "preload"},
}
# GPU-free areas include no GPU library header, except the trace core's CUPTI session files
# (built only with CUDA: "session only" in docs/ARCHITECTURE.md).
GPU_HEADER = re.compile(r'^\s*#\s*include\s*<(cuda|cupti|nccl|cublas)[A-Za-z_]*\.h>', re.M)
GPU_FILES_IN_CORE = {"core/trace/session.cpp", "core/trace/session.hpp", "core/trace/cupti_loader.cpp",
                     "core/trace/cupti_loader.hpp", "core/trace/session_state.hpp",
                     "core/trace/session_trace.cpp"}


def files_under(root, top):
    for d, _, fs in os.walk(os.path.join(root, top)):
        for f in fs:
            yield os.path.join(d, f)


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read(4 << 20)  # bounded: no page or test source is near this


def main(root):
    problems = []
    pages = [os.path.join(root, "README.md")]
    for top in ("docs", "examples"):
        pages += [p for p in files_under(root, top) if p.endswith(".md")]
    pages = [p for p in pages if os.path.isfile(p)]
    texts = {p: read(p) for p in pages}

    link = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
    for p, t in texts.items():
        for target in link.findall(t):
            if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
                continue
            if not os.path.exists(os.path.normpath(os.path.join(os.path.dirname(p), target))):
                problems.append(f"{os.path.relpath(p, root)}: link to {target}, which does not exist")

    # Pages named in code, comments, scripts and packaging: "see docs/X.md" must not dangle.
    named = re.compile(r"(?<![A-Za-z0-9_./$}-])docs/[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md")
    tops = ("README.md", "CHANGELOG.md", "pyproject.toml", "setup.py", "CMakeLists.txt", "src",
            "docs", "scripts", "tests", "python", "examples", "cmake", ".ci")
    for top in tops:
        whole = os.path.join(root, top)
        for f in ([whole] if os.path.isfile(whole) else files_under(root, top)):
            if os.path.dirname(os.path.abspath(f)) == os.path.dirname(os.path.abspath(__file__)):
                continue  # this check and its test name missing pages on purpose
            for n, line in enumerate(read(f).splitlines(), 1):
                for page in named.findall(line):
                    if not os.path.exists(os.path.join(root, page)):
                        problems.append(f"{os.path.relpath(f, root)}:{n}: names {page}, which does not exist")

    docs_size = sum(os.path.getsize(p) for p in files_under(root, "docs"))
    if docs_size > DOCS_LIMIT:
        problems.append(f"docs/ holds {docs_size / 1e6:.2f} MB, over the 2 MB limit "
                        "(raw logs stay out of git; pages are summaries)")

    results = os.path.join(root, "docs", "results")
    page_text = "\n".join(t for p, t in texts.items())
    for f in files_under(root, os.path.join("docs", "results")):
        rel = os.path.relpath(f, results)
        if f.endswith(".md"):
            continue
        if f.endswith(RAW_LOGS):
            problems.append(f"docs/results/{rel}: a raw log (keep the summary on the page, not the log)")
            continue
        top = rel.split(os.sep)[0]
        name = os.path.basename(f)
        if rel not in page_text and not (name in page_text and top in page_text):
            problems.append(f"docs/results/{rel}: no page names it")

    scripts = [f for f in os.listdir(os.path.join(root, "scripts"))
               if os.path.isfile(os.path.join(root, "scripts", f))]
    if len(scripts) > SCRIPTS_LIMIT:
        problems.append(f"scripts/ holds {len(scripts)} files, more than {SCRIPTS_LIMIT} "
                        "(one GPU runner with subcommands, not one-off drivers)")

    for f in files_under(root, "tests"):
        if f.endswith((".cpp", ".cu", ".hpp", ".cmake", ".sh", ".py", ".txt")) and \
                os.path.abspath(f) != os.path.abspath(__file__):
            for n, line in enumerate(read(f).splitlines(), 1):
                code = line.split("//")[0] if f.endswith((".cpp", ".cu", ".hpp")) else line.split("#")[0]
                if "docs/results/" in code:
                    problems.append(f"{os.path.relpath(f, root)}:{n}: a test reads docs/results/ "
                                    "(put its data under tests/fixtures/)")

    def one_letter_apart(a, b):
        if a == b or abs(len(a) - len(b)) > 1:
            return False
        if len(a) == len(b):
            return sum(x != y for x, y in zip(a, b)) == 1
        short, long_ = sorted((a, b), key=len)
        return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))

    def dirs_of(path):
        return sorted(d for d in os.listdir(path) if os.path.isdir(os.path.join(path, d)))

    for top in ("src", "tests"):
        names = set()
        for d, subdirs, _ in os.walk(os.path.join(root, top)):
            names.update(subdirs)
        names = sorted(names)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                if one_letter_apart(a, b):
                    problems.append(f"{top}/: folders {a}/ and {b}/, names one letter apart")

    # src/LAYER/AREA; tests/ mirrors it (tests/LAYER/AREA or a shared folder).
    src = os.path.join(root, "src")
    areas = {}
    for layer in dirs_of(src):
        if layer not in LAYERS:
            problems.append(f"src/{layer}: not a layer ({', '.join(LAYERS)}); areas live in src/LAYER/AREA")
            continue
        for area in dirs_of(os.path.join(src, layer)):
            if LAYER_OF.get(area) != layer:
                problems.append(f"src/{layer}/{area}: an area with no place in LAYERS and no include rule "
                                "(add it to tests/repo/check_tree.py and to docs/ARCHITECTURE.md)")
                continue
            areas[area] = layer
    tests = os.path.join(root, "tests")
    for d in dirs_of(tests):
        if d in TESTS_SHARED:
            continue
        if d not in LAYERS:
            problems.append(f"tests/{d}: not a layer of src/ (tests mirror src/; shared folders: "
                            f"{', '.join(sorted(TESTS_SHARED))})")
            continue
        for a in dirs_of(os.path.join(tests, d)):
            if areas.get(a) != d:
                problems.append(f"tests/{d}/{a}: no src/{d}/{a} (tests mirror src/)")

    include = re.compile(r'^\s*#\s*include\s*"([a-z_]+)/', re.M)
    for area, layer in sorted(areas.items()):
        for f in files_under(root, os.path.join("src", layer, area)):
            if not f.endswith((".cpp", ".hpp", ".cu", ".cuh", ".h")):
                continue
            text = read(f)
            rel = os.path.relpath(f, src)
            for other in sorted(set(include.findall(text))):
                if other != area and other in INCLUDE_RULES and other not in INCLUDE_RULES[area]:
                    problems.append(f"src/{rel}: includes {other}/, which src/{layer}/{area} may not "
                                    f"(may: {', '.join(sorted(INCLUDE_RULES[area])) or 'nothing'})")
            if layer == "core" and rel not in GPU_FILES_IN_CORE and GPU_HEADER.search(text):
                problems.append(f"src/{rel}: a GPU library header in the GPU-free core")

    names_home = os.path.join(root, "src", "core", "model", "env_names.hpp")
    bare = re.compile(r'"(CCO_[A-Z0-9_]+)"')
    env_names = set(bare.findall(read(names_home))) if os.path.isfile(names_home) else set()
    for f in files_under(root, "src"):
        if not f.endswith((".cpp", ".hpp", ".cu", ".cuh", ".h")) or f == names_home:
            continue
        for n, line in enumerate(read(f).splitlines(), 1):
            for name in bare.findall(line.split("//")[0]):
                where = "" if name in env_names else " (and add it there)"
                problems.append(f"{os.path.relpath(f, root)}:{n}: \"{name}\" spelled here: "
                                f"use cco::env from src/core/model/env_names.hpp{where}")

    schema_home = os.path.join(root, "src", "core", "model", "schema_names.hpp")
    # A quoted schema name, plain or escaped inside another string: "ccoverlap.plan", \"cco.tune/1\".
    schema_literal = re.compile(r'\\?"((?:ccoverlap\.[a-z_]+)|(?:cco\.[a-z_]+/[0-9]+))\\?"')
    schema_names = set(schema_literal.findall(read(schema_home))) if os.path.isfile(schema_home) else set()
    for f in files_under(root, "src"):
        if not f.endswith((".cpp", ".hpp", ".cu", ".cuh", ".h")) or f == schema_home:
            continue
        for n, line in enumerate(read(f).splitlines(), 1):
            for name in schema_literal.findall(line.split("//")[0]):
                where = "" if name in schema_names else " (and add it there)"
                problems.append(f"{os.path.relpath(f, root)}:{n}: schema \"{name}\" spelled here: "
                                f"use cco::model from src/core/model/schema_names.hpp{where}")

    for p in problems:
        print("tree: " + p)
    if problems:
        return 1
    print(f"tree: {len(texts)} pages, links resolve; docs/ {docs_size / 1e6:.2f} MB; "
          f"scripts/ {len(scripts)} files; tests read no docs/results; "
          f"{len(env_names)} CCO_* names and {len(schema_names)} schema names spelled once; "
          f"{len(areas)} areas in {len(LAYERS)} layers; include rules hold; tests mirror src")
    return 0


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(here))))
