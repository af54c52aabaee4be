#!/usr/bin/env bash
# libFuzzer over every parser of outside input (issue 9; docs/FUZZING.md). Builds the fuzz
# targets with clang (-fsanitize=fuzzer,address,undefined) in build-fuzz (the preset 'sanitize' of
# CMakePresets.json, shared with scripts/sanitize.sh asan: in CI nothing is built twice), replays each target's
# seed corpus and saved reproducers, then fuzzes each for a bounded time.
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default 30 s, every target)
#   FUZZ_JOBS=N      fuzzing processes per target (libFuzzer -fork=N; default 1)
#   FUZZ_KEEP_GOING=1  do not stop at the first finding: keep fuzzing (fork mode), save every one
#   FUZZ_ARGS="..."  extra libFuzzer flags, e.g. "-max_len=65536"
#   FUZZ_BUILD_JOBS=N  parallel compile jobs (default 2)
# Per target it prints the runs executed, coverage (cov: edges, ft: features), the corpus it grew
# and whether anything was found. A crash, sanitizer report, uncaught exception, timeout (10 s per
# input) or out-of-memory (2 GB) leaves its reproducer in build-fuzz/artifacts/<target>/ and makes
# the script exit 1 (after running the other targets). The corpus grown here stays in
# build-fuzz/corpus/<target>/ (the committed seeds in tests/fuzz/corpus/ are not touched).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
shift || true
case "$secs" in '' | *[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]" >&2; exit 2 ;; esac
build=build-fuzz
all=$(cd tests/fuzz && ls fuzz_*.cpp | sed 's/^fuzz_//; s/\.cpp$//')
targets=${*:-$all}

if ! command -v clang++ >/dev/null; then
  echo "fuzz: clang++ not found (Debian: apt-get install clang libclang-rt-dev, or clang-14 libclang-rt-14-dev)" >&2
  exit 2
fi
echo "== configuring and building the fuzz targets in $build ($(clang++ --version | head -1))"
cmake --preset sanitize >/dev/null
cmake --build "$build" --parallel "${FUZZ_BUILD_JOBS:-2}" --target $(for t in $targets; do printf 'cco.fuzz.%s ' "$t"; done)

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
summary=$(printf '%-14s %8s %10s %7s %7s %9s  %s' target seconds runs cov ft corpus found)
for t in $targets; do
  bin=$build/fuzz/fuzz_$t
  work=$build/corpus/$t
  art=$build/artifacts/$t
  log=$build/logs/$t.log
  mkdir -p "$work" "$art" "$(dirname "$log")"
  seeds=(tests/fuzz/corpus/$t)
  [ -d tests/fuzz/regressions/$t ] && seeds+=(tests/fuzz/regressions/$t)
  dict=()
  [ -f tests/fuzz/dict/$t.dict ] && dict=(-dict=tests/fuzz/dict/$t.dict)
  fork=()
  if [ "${FUZZ_KEEP_GOING:-0}" = 1 ]; then
    fork=(-fork="${FUZZ_JOBS:-1}" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  elif [ "${FUZZ_JOBS:-1}" -gt 1 ]; then
    fork=(-fork="$FUZZ_JOBS")
  fi
  marker=$art/.started
  touch "$marker"
  echo "== fuzz_$t: ${secs}s (log $log)"
  rc=0
  # shellcheck disable=SC2086
  "$bin" "$work" "${seeds[@]}" "${dict[@]}" "${fork[@]}" -max_total_time="$secs" -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$art/" -print_final_stats=1 ${FUZZ_ARGS:-} >"$log" 2>&1 || rc=$?
  runs=$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+$' || true)
  [ -n "$runs" ] || runs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#' || true)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || true)
  ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || true)
  corp=$(grep -oE 'corp: [0-9]+(/[0-9]+[a-zA-Z]*)?' "$log" | tail -1 | cut -d' ' -f2 || true)
  new=$(find "$art" -type f -newer "$marker" \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) | sort)
  if [ $rc -eq 0 ] && [ -z "$new" ]; then
    found=nothing
  else
    # What the first reproducer does, from a run of it alone (fork mode's log does not say).
    first=$(echo "$new" | head -1)
    why=$log
    if [ -n "$first" ]; then
      why=$art/.first.txt
      "$bin" -timeout=10 -rss_limit_mb=2048 "$first" >"$why" 2>&1 || true
    fi
    kind=$(grep -m1 -oE 'runtime error: .*|property violated: .*|what\(\): .*|ERROR: (AddressSanitizer|LeakSanitizer): [a-zA-Z_ -]+' "$why" ||
      grep -m1 -oE 'ERROR: libFuzzer: [a-zA-Z_ -]+' "$why" || true)
    found="FOUND $(echo "$new" | grep -c .) (first: ${kind:-exit $rc})"
    failed+=("$t")
    echo "   $found"
    [ -n "$new" ] || echo "   no reproducer written: see $log"
    for r in $new; do echo "   reproduce: $bin $r"; done
    echo "   keep it: copy it to tests/fuzz/regressions/$t/ (replayed by ctest -L fuzz and this script)"
  fi
  line=$(printf '%-14s %8s %10s %7s %7s %9s  %s' "$t" "$secs" "${runs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$found")
  echo "   $line"
  summary+=$'\n'"$line"
done
echo "== summary (cov: edges covered; ft: coverage features; corpus: inputs/bytes kept)"
echo "$summary"
if [ ${#failed[@]} -gt 0 ]; then
  echo "== fuzz: found something in: ${failed[*]} (reproducers under $build/artifacts/)" >&2
  exit 1
fi
