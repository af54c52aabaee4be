#!/usr/bin/env bash
# One command on a fresh machine: installs the Debian packages ccoverlap builds with (when
# missing), configures and builds into ./build, then runs the main job: `cco info`, and a short
# `cco bench` when a GPU is present. Options: BUILD_DIR (default build), CCO_CMAKE_ARGS.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}

pkgs=(cmake ninja-build g++ libgtest-dev nlohmann-json3-dev libcli11-dev libfmt-dev python3
      clang libclang-rt-14-dev  # clang + its runtime: sanitizers and fuzz targets
      python3-venv python3-setuptools python3-wheel python3-pip)  # pip install . and its test
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing: ${missing[*]}"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
    { $sudo apt-get update >/dev/null && $sudo apt-get install -y --no-install-recommends "${missing[@]}"; }
fi

cuda_args=()
if [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then
  echo "== no CUDA Toolkit (nvcc) found: building the GPU-free part only (CCO_ENABLE_CUDA=OFF)"
  cuda_args=(-DCCO_ENABLE_CUDA=OFF)
fi

echo "== configuring and building in $build"
cmake -S . -B "$build" -G Ninja "${cuda_args[@]}" ${CCO_CMAKE_ARGS:-} >/dev/null
cmake --build "$build"

echo "== cco info"
"$build/src/app/cli/cco" info
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 && [ ${#cuda_args[@]} = 0 ]; then
  echo "== cco bench (short: built-in GEMM || 64M all-reduce, every mode)"
  "$build/src/app/cli/cco" bench -b 64M -n 10 -w 2 --compute builtin --gemm 2048 --count 2 --blocks-per-sm 1,2,3
fi
