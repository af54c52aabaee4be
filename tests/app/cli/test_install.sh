#!/usr/bin/env bash
# The install tree (issue 19): cmake --install into a temporary prefix, then the installed cco
# answers --help, finds its preload library and tuner plugin there, the man pages and bash
# completion are there and complete, the Python module imports from there; and cpack makes a
# Debian package holding the same files. GPU-free. Usage: test_install.sh BUILD_DIR SOURCE_DIR
set -u
build=${1:?build dir}
src=${2:?source dir}
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
p=$tmp/prefix
cmake --install "$build" --prefix "$p" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; echo "FAIL: cmake --install"; exit 1; }
cco=$p/bin/cco
[ -x "$cco" ] || fail "no bin/cco"
"$cco" --help | cmp -s - "$src/docs/cli/cco.md" || fail "installed cco --help differs from docs/cli/cco.md"
for c in $(cd "$src/docs/cli" && ls *.md | sed 's/\.md$//'); do
  page=$([ "$c" = cco ] && echo cco || echo "cco-$c")
  f=$p/share/man/man1/$page.1
  [ -f "$f" ] || { fail "no man page $page.1"; continue; }
  head -1 "$f" | grep -q "^\.TH $(echo "$page" | tr a-z A-Z) 1" || fail "$page.1 does not start with .TH"
  # Every line of the help text is in the page (roff escapes aside).
  n=$(grep -c '' "$src/docs/cli/$c.md")
  [ "$(grep -c '' "$f")" -ge "$n" ] || fail "$page.1 is shorter than docs/cli/$c.md"
  if command -v man >/dev/null 2>&1; then
    # Its SYNOPSIS is the page's Usage line (without "Usage: "), under its own heading.
    out=$(MANWIDTH=100 man -l "$f" 2>/dev/null)
    grep -q "$(sed -n 3p "$src/docs/cli/$c.md" | sed 's/^Usage: //' | cut -c1-30 | sed 's/[][\.*^$]/./g')" <<<"$out" \
      || fail "man -l $page.1 does not show docs/cli/$c.md"
    grep -q "^SYNOPSIS" <<<"$out" || fail "man -l $page.1 has no SYNOPSIS"
  fi
  # Every page that lists options has an OPTIONS section, each option a tagged paragraph, and
  # renders without a roff warning (a line starting with '.' would be a request).
  if grep -q "^  -" "$src/docs/cli/$c.md"; then
    grep -q "^\.SH OPTIONS$" "$f" || fail "$page.1 has no OPTIONS section"
    grep -q '^\\fB-' "$f" || fail "$page.1 has no option as a tagged paragraph"
  fi
  if command -v groff >/dev/null 2>&1; then
    warn=$(groff -man -Tutf8 -ww "$f" 2>&1 >/dev/null)
    [ -z "$warn" ] || fail "groff warns on $page.1: $warn"
  fi
done
grep -q '^\\fB--threads N\\fR$' "$p/share/man/man1/cco-plan.1" || fail "cco-plan.1: --threads N is not a tagged option"
comp=$p/share/bash-completion/completions/cco
[ -f "$comp" ] || fail "no bash completion"
if [ -f "$comp" ]; then
  out=$(bash -c ". '$comp'; COMP_WORDS=(cco ''); COMP_CWORD=1; _cco; echo \"\${COMPREPLY[*]}\"")
  for c in info plan bench tune run report doctor; do
    echo " $out " | grep -q " $c " || fail "completion of 'cco ' lacks $c: $out"
  done
  out=$(bash -c ". '$comp'; COMP_WORDS=(cco bench --nccl-c); COMP_CWORD=2; _cco; echo \"\${COMPREPLY[*]}\"")
  echo "$out" | grep -q -- "--nccl-cta-policy" || fail "completion of 'cco bench --nccl-c': $out"
fi
if [ -f "$build/src/inject/preload/libcco_preload.so" ]; then
  [ -f "$p/lib/ccoverlap/libcco_preload.so" ] || fail "no lib/ccoverlap/libcco_preload.so"
  "$cco" doctor --no-python >"$tmp/doc" 2>&1
  grep -qE "^ok +preload library +$p/lib/ccoverlap/libcco_preload.so" "$tmp/doc" || fail "installed cco does not find its preload library: $(cat "$tmp/doc")"
  grep -qE "^ok +tuner plugin +$p/lib/ccoverlap/libcco_tuner.so" "$tmp/doc" || fail "installed cco does not find its tuner plugin: $(cat "$tmp/doc")"
fi
PYTHONPATH=$p/lib/python3/dist-packages python3 -c 'import ccoverlap, sys; assert ccoverlap.__file__.startswith(sys.argv[1]), ccoverlap.__file__' "$p" \
  || fail "the Python module does not import from the install tree"
[ -f "$p/share/doc/ccoverlap/docs/METRICS.md" ] || fail "docs not installed"
[ -f "$p/share/ccoverlap/workloads/tp_llama7b.json" ] || fail "the workloads were not installed"
out=$(cd "$tmp" && CCO_WORKLOAD_PATH= "$cco" bench --workload tp_llama7b --validate 2>&1 | head -1)
echo "$out" | grep -q "($p/share/ccoverlap/workloads/tp_llama7b.json," || fail "installed cco does not find a workload by name: $out"
[ -d "$p/share/doc/ccoverlap/docs/results" ] && fail "the results were installed (they are not documentation)"
if command -v cpack >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1; then
  (cd "$build" && cpack -G DEB -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1) || fail "cpack -G DEB: $(tail -3 "$tmp/cpack.log")"
  deb=$(ls "$tmp"/pkg/*.deb 2>/dev/null | head -1)
  if [ -n "$deb" ]; then
    dpkg-deb -c "$deb" | grep -q "./usr/bin/cco$" || fail "the package has no /usr/bin/cco"
    dpkg-deb -c "$deb" | grep -q "./usr/share/man/man1/cco-bench.1" || fail "the package has no man pages"
    dpkg-deb -c "$deb" | grep -q "./usr/share/ccoverlap/workloads/tp_llama7b.json" || fail "the package has no workloads"
    dpkg-deb -f "$deb" Depends | grep -q "zlib1g" || fail "the package does not depend on zlib1g"
  else
    fail "cpack wrote no .deb"
  fi
fi
[ $fails = 0 ] || { echo "$fails install check(s) failed"; exit 1; }
echo "install tree checked"
