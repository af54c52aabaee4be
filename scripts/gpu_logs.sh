# Sourced by the GPU check scripts (gpu_window.sh, gpu_steps.sh) from the repository root, after
# gpu_env.sh: the staged build ($BUILD, default build-gpu), a temporary log folder $O whose
# summary.txt and logs.tgz land in $OUT (or ./out) when the script exits (the device tool returns
# at most a few files), cco and its library, and say/has. Each script sets $stages.
B=${BUILD:-build-gpu}
OUTDIR=${OUT:-out}
mkdir -p "$OUTDIR"
O=$(mktemp -d)
trap 'cp "$O/summary.txt" "$OUTDIR/" 2>/dev/null; tar czf "$OUTDIR/logs.tgz" -C "$O" . 2>/dev/null' EXIT
cco="$B/src/cli/cco"
export CCO_PRELOAD_LIB="$PWD/$B/src/preload/libcco_preload.so"
export PYTHONUNBUFFERED=1
say() { echo "$@" | tee -a "$O/summary.txt"; }
has() { [[ " $stages " == *" $1 "* ]]; }
