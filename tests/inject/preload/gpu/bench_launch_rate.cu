// A benchmark, not a test: how long one cudaLaunchKernel of an empty kernel takes from the host,
// with or without the preload library (`scripts/gpu.sh window h` and `scripts/gpu.sh preload`
// run it under each configuration, alternating). It prints one "cco-probe:" line and asserts
// nothing about time: performance targets live in benchmarks and docs, never in unit tests.
// Exit 77 where no GPU is usable, 1 when a CUDA call fails.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

__global__ void empty_kernel() {}

int main() {
  int n_dev = 0;
  if (cudaGetDeviceCount(&n_dev) != cudaSuccess || n_dev == 0) {
    std::printf("SKIPPED: no CUDA GPU on this machine\n");
    return 77;
  }
  cudaStream_t s;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return 1;
  for (int i = 0; i < 1000; ++i) empty_kernel<<<1, 32, 0, s>>>();
  if (cudaStreamSynchronize(s) != cudaSuccess) return 1;
  const int n = 50000;
  std::vector<double> per;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) empty_kernel<<<1, 32, 0, s>>>();
    const auto t1 = std::chrono::steady_clock::now();
    if (cudaStreamSynchronize(s) != cudaSuccess) return 1;
    per.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / n);
  }
  std::sort(per.begin(), per.end());
  std::printf("cco-probe: launch rate: median %.3f us per cudaLaunchKernel (5 x %d empty launches; "
              "min %.3f, max %.3f)\n", per[2], n, per[0], per[4]);
  cudaStreamDestroy(s);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
