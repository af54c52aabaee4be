"""The wheel of ccoverlap (pyproject.toml holds the metadata; README.md, "The two commands", the commands).

The package is the Python module ccoverlap plus the tree `cmake --install` writes, under
ccoverlap/_prefix/: bin/cco, lib/ccoverlap/libcco_preload.so and libcco_tuner.so, and
share/ccoverlap/workloads. The cco command pip installs runs _prefix/bin/cco, which finds its two
libraries and the workloads beside it as an installed cco does.

CCO_BUILD_DIR=DIR   pack that existing, built CMake tree instead of building one (build-wheel/);
CCO_CMAKE_ARGS="…"  extra arguments to the configure step (e.g. -DCCO_ENABLE_CUDA=OFF).
"""
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = pathlib.Path(__file__).resolve().parent


def project_version() -> str:
    text = (ROOT / "CMakeLists.txt").read_text()
    m = re.search(r"project\(ccoverlap VERSION ([0-9.]+)", text)
    if not m:
        sys.exit("setup.py: no 'project(ccoverlap VERSION x.y.z)' in CMakeLists.txt")
    return m.group(1)


def run(cmd):
    print("setup.py: " + " ".join(shlex.quote(str(c)) for c in cmd), flush=True)
    subprocess.check_call([str(c) for c in cmd])


class BuildWithCMake(build_py):
    """build_py, then the CMake tree's install image copied into the package."""

    def run(self):
        super().run()
        if shutil.which("cmake") is None:
            sys.exit("setup.py: cmake not found (Debian: apt-get install cmake ninja-build g++; "
                     "scripts/setup.sh installs everything)")
        given = os.environ.get("CCO_BUILD_DIR")
        if given:
            build = pathlib.Path(given).resolve()
            if not (build / "CMakeCache.txt").is_file():
                sys.exit(f"setup.py: CCO_BUILD_DIR={given} is not a configured CMake build tree")
            run(["cmake", "--build", build])  # up to date: nothing to do
        else:
            build = ROOT / "build-wheel"
            gen = ["-G", "Ninja"] if shutil.which("ninja") else []
            run(["cmake", "-S", ROOT, "-B", build, *gen, "-DCMAKE_BUILD_TYPE=Release",
                 "-DCCO_ENABLE_TESTS=OFF", *shlex.split(os.environ.get("CCO_CMAKE_ARGS", ""))])
            run(["cmake", "--build", build])
        stage = pathlib.Path(self.build_lib).parent / "cco-install"
        shutil.rmtree(stage, ignore_errors=True)
        run(["cmake", "--install", build, "--prefix", stage])
        dest = pathlib.Path(self.build_lib) / "ccoverlap" / "_prefix"
        shutil.rmtree(dest, ignore_errors=True)
        for part in ("bin/cco", "lib/ccoverlap", "share/ccoverlap/workloads", "share/man"):
            src = stage / part
            if not src.exists():
                if part == "bin/cco":
                    sys.exit(f"setup.py: {src} was not installed: is {build} built?")
                continue
            (dest / part).parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():
                shutil.copytree(src, dest / part)
            else:
                shutil.copy2(src, dest / part)
        # The man pages and bash completion also go where the environment's own tools look:
        # VENV/share/man/man1 (man finds it from VENV/bin on PATH) and
        # VENV/share/bash-completion/completions (issue 45: after pip install, `man cco-report`
        # found nothing). Data files of the wheel, known only once the tree is installed.
        data = []
        for where in ("share/man/man1", "share/bash-completion/completions"):
            files = sorted(str(f) for f in (stage / where).glob("*") if f.is_file())
            if files:
                data.append((where, files))
        self.distribution.data_files = data


class BinaryDistribution(Distribution):
    """The wheel holds a binary for this platform: tag it so (not py3-none-any)."""

    def has_ext_modules(self):
        return True


setup(
    version=project_version(),
    cmdclass={"build_py": BuildWithCMake},
    distclass=BinaryDistribution,
    options={"build": {"build_base": str(ROOT / "build-wheel" / "setuptools")},
             "egg_info": {"egg_base": str(ROOT / "build-wheel")}},
)
