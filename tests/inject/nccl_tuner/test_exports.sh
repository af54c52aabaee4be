#!/usr/bin/env bash
# libcco_tuner.so as a file: it exports NCCL's tuner objects and nothing else, depends on libc
# only (its C++ runtime is static and hidden), and has no text relocations.
set -u
lib=${CCO_TUNER_LIB:?}
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

exports=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort | tr '\n' ' ')
[ "$exports" = "ncclTunerPlugin_v4 ncclTunerPlugin_v5 " ] || fail "exported symbols: '$exports'"
# Both are data objects of the plugin structs' sizes (4 pointers).
for s in ncclTunerPlugin_v5 ncclTunerPlugin_v4; do
  line=$(readelf -Ws --dyn-syms "$lib" | awk -v s="$s" '$8 == s')
  echo "$line" | grep -q " 32 OBJECT  GLOBAL DEFAULT " || fail "$s is not a 32-byte global object: $line"
done
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
case "$needed" in
  "libc.so.6 " | "ld-linux-x86-64.so.2 libc.so.6 ") ;;
  *) fail "libraries needed: '$needed' (only libc expected)" ;;
esac
readelf -d "$lib" | grep -q TEXTREL && fail "text relocations"
readelf -d "$lib" | grep -q "FLAGS_1.*NODELETE" || fail "not marked nodelete (NCCL dlcloses tuners)"

[ $fails = 0 ] && echo "tuner library checks: all passed" || echo "tuner library checks: $fails failed"
[ $fails = 0 ]
