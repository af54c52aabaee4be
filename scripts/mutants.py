#!/usr/bin/env python3
"""The mutation check of cco's process and file handling (issue 46): each mutant removes one
protection the tests claim to check; the tests must fail (the mutant "killed") for each.

    scripts/mutants.py [--build DIR] [NAME ...]

Builds each mutant in DIR (default ./build, configured by scripts/setup.sh), runs the GPU-free
tests of the labels that cover processes, files and reports, puts the source back (also on
Ctrl-C), and prints one line per mutant and the score. Takes about 1-2 min a mutant on 2 cores.
Exit 0 when every mutant is killed, 1 otherwise, 2 when the tree is not as the mutants expect.
"""
import argparse
import os
import pathlib
import signal
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
LABELS = "cli|preload|model|report|steps|bootstrap|plan|trace"
SKIP = "cco.test.wheel"  # packaging: minutes of pip, and none of the mutated code

# (name, file, text, replacement): the text must occur exactly once in the file; or lists of
# texts and their replacements, all made in one mutant.
MUTANTS = [
    # signals and the program's processes
    ("no signal forwarded to the program", "src/app/cli/run_signals.cpp",
     "if (g_signal_target != 0) ::kill(g_signal_target, sig);", "(void)sig;"),
    ("a terminal's Ctrl-C forwarded again", "src/app/cli/run_signals.cpp",
     "if (info && info->si_code == SI_KERNEL && g_signal_target > 0 &&",
     "if (info && false && g_signal_target > 0 &&"),
    ("SIGCHLD left as the parent set it", "src/app/cli/main.cpp",
     "std::signal(SIGCHLD, SIG_DFL);", ";"),
    ("tune's launcher outlives a killed cco", "src/app/cli/tune_program.cpp",
     "::prctl(PR_SET_PDEATHSIG, SIGTERM);\n    if (::getppid() != parent)",
     "if (::getppid() != parent)"),
    ("workers the launcher left are not ended", "src/app/cli/tune_program.cpp",
     "  if (::kill(-pgid, 0) != 0) return;  // nobody left", "  return;"),
    ("a follower waits on a deciding rank that ended", "src/inject/preload/step_clock.cpp",
     "    return ::kill(pid, 0) != 0 && errno == ESRCH;", "    return false;"),
    # inputs and outputs
    ("cco run's outputs may name its inputs", "src/app/cli/run_cmd.cpp",
     "  refuse_input(\"--compare-json\", o.compare_json, inputs, \"cco run\");\n  if (o.trace.empty()) return;",
     "  return;"),
    ("cco report's outputs may name its inputs", "src/app/cli/report_cmd.cpp",
     "    refuse_input(flag, *out, inputs, \"cco report\");", "    (void)inputs;"),
    ("a dangling link is written", "src/core/model/read_file.cpp",
     "  if (S_ISLNK(lst.st_mode) && ::stat(path.c_str(), &st) != 0)\n    return",
     "  if (false)\n    return"),
    ("a write-protected file is replaced", "src/core/model/read_file.cpp",
     "if (S_ISREG(lst.st_mode) && (lst.st_mode & 0222) == 0) {", "if (false) {"),
    ("a file over its limit is read", "src/core/model/read_file.cpp",
     ["  if (static_cast<std::size_t>(st.st_size) > limit) {\n    ::close(fd);",
      "    if (out.size() > limit) {  // the file grew while being read"],
     ["  if (false) {\n    ::close(fd);", "    if (false) {"]),
    ("a FIFO is read", "src/core/model/read_file.cpp",
     "  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {",
     "  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {"),
    ("the step folder stays after a signal during the report", "src/app/cli/run_signals.cpp",
     "  if (g_temp_files)\n    for (const auto& f : *g_temp_files) ::unlink(f.c_str());  // both async-signal-safe\n  if (g_temp_dir) ::rmdir(g_temp_dir->c_str());",
     ""),
]


def run(cmd, **kw):
    return subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def tests(build):
    """The tests of LABELS; a test that hangs (its own TIMEOUT may be long) fails after 150 s."""
    p = subprocess.Popen(["ctest", "--test-dir", build, "-L", LABELS, "-LE", "gpu", "-E", SKIP,
                          "-j2", "--timeout", "150"], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=400)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        out += "\nThe following tests FAILED:\n 0 - (a test hung past 400 s)\n"
        return subprocess.CompletedProcess(p.args, 1, out)
    return subprocess.CompletedProcess(p.args, p.returncode, out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("names", nargs="*", help="only the mutants whose name contains one of these")
    a = ap.parse_args()
    if not (ROOT / a.build / "build.ninja").exists():
        print(f"mutants: no build in {a.build}: run scripts/setup.sh first", file=sys.stderr)
        return 2
    chosen = [m for m in MUTANTS if not a.names or any(n in m[0] for n in a.names)]
    chosen = [(n, p, t if isinstance(t, list) else [t], r if isinstance(r, list) else [r])
              for n, p, t, r in chosen]
    for name, path, texts, _ in chosen:
        for text in texts:
            n = (ROOT / path).read_text().count(text)
            if n != 1:
                print(f"mutants: '{name}': its text occurs {n} times in {path} (expected once): "
                      "update scripts/mutants.py to the code", file=sys.stderr)
                return 2
    # SIGTERM ends the check as Ctrl-C does: the mutated file is put back (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    killed = invalid = 0
    for name, path, texts, repls in chosen:
        f = ROOT / path
        original = f.read_text()
        t0 = time.time()
        try:
            mutated = original
            for text, repl in zip(texts, repls):
                mutated = mutated.replace(text, repl)
            f.write_text(mutated)
            b = run(["cmake", "--build", a.build])
            if b.returncode != 0:  # not a mutant the tests could judge: counted apart
                verdict, why = "INVALID", "does not build"
            else:
                t = tests(a.build)
                tail = t.stdout.split("The following tests FAILED:")[-1].splitlines()
                failed = [l.split(" - ", 1)[1].strip() for l in tail if " - " in l]
                if t.returncode != 0:
                    verdict, why = "killed", "failed: " + ", ".join(failed)
                else:
                    verdict, why = "SURVIVED", "every test passed"
        finally:
            f.write_text(original)
        killed += verdict == "killed"
        invalid += verdict == "INVALID"
        print(f"{verdict:8}  {name}  ({path}; {why}; {time.time() - t0:.0f} s)", flush=True)
    run(["cmake", "--build", a.build])  # the build of the real source again
    judged = len(chosen) - invalid
    print(f"score: {killed} of {judged} killed" + (f" ({invalid} did not build: fix their text)" if invalid else ""))
    return 0 if killed == judged and not invalid else 1


if __name__ == "__main__":
    sys.exit(main())
