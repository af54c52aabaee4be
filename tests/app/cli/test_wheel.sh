#!/usr/bin/env bash
# pip install into a fresh venv, offline (issue 34 item 1): a wheel packed from this build tree
# (CCO_BUILD_DIR), installed with no index; then the venv's cco runs, finds its libraries and the
# shipped workloads inside the wheel, and Python imports ccoverlap.
# Usage: test_wheel.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$(cd "$1" && pwd)
root=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# A Python with venv, setuptools and wheel (Debian: python3-venv python3-setuptools python3-wheel;
# scripts/setup.sh installs them). The first python3 on PATH may be another one (pyenv, conda).
py=
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null && "$p" -c 'import setuptools, wheel, venv, ensurepip' 2>/dev/null; then
    py=$p
    break
  fi
done
if [ -z "$py" ]; then
  echo "SKIP: no python3 with venv, ensurepip, setuptools and wheel (apt-get install python3-venv python3-setuptools python3-wheel)"
  exit 77
fi

(cd "$root" && CCO_BUILD_DIR="$build" "$py" -m pip wheel --no-build-isolation --no-deps --no-index \
  -w "$tmp/dist" . >"$tmp/wheel.log" 2>&1) || { tail -20 "$tmp/wheel.log"; fail "pip wheel failed"; }
whl=$(ls "$tmp"/dist/ccoverlap-*.whl 2>/dev/null | head -1)
[ -n "$whl" ] || fail "no wheel written"
case "$whl" in *-none-any.whl) fail "the wheel is tagged pure Python ($whl) but holds binaries" ;; esac
want=$(sed -nE 's/^project\(ccoverlap VERSION ([0-9.]+).*/\1/p' "$root/CMakeLists.txt")
case "$(basename "$whl")" in "ccoverlap-$want-"*) ;; *) fail "wheel $(basename "$whl") is not version $want" ;; esac

"$py" -m venv "$tmp/venv" >/dev/null 2>&1 || fail "python -m venv failed"
"$tmp/venv/bin/python" -m pip install --no-index --no-deps "$whl" >"$tmp/install.log" 2>&1 ||
  { tail -20 "$tmp/install.log"; fail "pip install of the wheel failed"; }

cd "$tmp"  # nowhere near the source tree: everything must come from the venv
cco="$tmp/venv/bin/cco"
[ -x "$cco" ] || fail "pip installed no cco command"
[ "$("$cco" --version)" = "ccoverlap $want" ] || fail "cco --version: $("$cco" --version 2>&1)"
"$tmp/venv/bin/python" -c 'import ccoverlap, sys; sys.exit(0 if "/venv/" in ccoverlap.__file__ else 1)' ||
  fail "the venv's python does not import its own ccoverlap"
# cco doctor --json: its library checks name the libraries inside the wheel (a build without CUDA
# has none: its wheel is the GPU-free cco).
libs=()
[ -f "$build/src/inject/preload/libcco_preload.so" ] && libs+=("preload library")
[ -f "$build/src/inject/nccl_tuner/libcco_tuner.so" ] && libs+=("tuner plugin")
"$cco" doctor --json >"$tmp/doctor.json" 2>"$tmp/doctor.err"
"$tmp/venv/bin/python" - "$tmp/doctor.json" "${libs[@]}" <<'PY' || fail "cco doctor --json: $(cat "$tmp/doctor.err")"
import json, sys
checks = {c["name"]: c for c in json.load(open(sys.argv[1]))["checks"]}
for name in sys.argv[2:]:
    c = checks.get(name)
    assert c and c["status"] == "ok" and "/venv/" in c["detail"] and "/_prefix/lib/ccoverlap/" in c["detail"], (name, c)
PY
# A shipped workload by name, from the wheel (CCO_WORKLOAD_PATH empty; the wheel comes before the
# source tree).
out=$(CCO_WORKLOAD_PATH= "$cco" bench --workload tp_llama7b --validate 2>&1) || fail "--workload tp_llama7b: $out"
echo "$out" | head -1 | grep -q "/venv/.*/_prefix/share/ccoverlap/workloads/tp_llama7b.json" ||
  fail "the workload did not come from the wheel: $(echo "$out" | head -1)"
# The man pages and bash completion where the environment's tools look (issue 45: after pip
# install, `man cco-report` found nothing): VENV/share/man/man1, which man finds from VENV/bin on
# PATH, and VENV/share/bash-completion/completions.
[ -f "$tmp/venv/share/man/man1/cco-report.1" ] || fail "no man page cco-report.1 in the venv: $(ls -R "$tmp/venv/share" 2>&1 | head)"
[ -f "$tmp/venv/share/bash-completion/completions/cco" ] || fail "no bash completion in the venv"
if command -v man >/dev/null; then
  page=$(PATH="$tmp/venv/bin:/usr/bin:/bin" MANPATH= man -w cco-report 2>&1) || fail "man -w cco-report: $page"
  case "$page" in "$tmp/venv/"*) ;; *) fail "man found cco-report outside the venv: $page" ;; esac
fi
# The cco command of a module installed without the binary says so in one line.
mv "$tmp/venv/lib/"python3*/site-packages/ccoverlap/_prefix "$tmp/moved"
msg=$("$cco" --version 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$msg" | grep -q "has no cco binary" || fail "no binary: rc $rc, '$msg'"
echo "ok: $(basename "$whl") installed into a fresh venv; cco, its libraries, the workloads, the module, man pages and completion found"
