// Kernels for the CUPTI tracing test: a spinning "compute" kernel (C++, mangled name) and a
// spinning kernel named like NCCL's (extern "C", so the trace classifies it as communication).
#include "trace_kernels.hpp"

namespace {

__device__ void spin(long long cycles, int* out) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
  if (threadIdx.x == 0 && out) atomicAdd(out, 1);
}

}  // namespace

__global__ void cco_trace_test_compute(long long cycles, int* out) {
  extern __shared__ char dyn[];
  if (threadIdx.x == 0 && blockDim.x > 1000000) dyn[0] = 0;  // keeps the dynamic smem "used"
  spin(cycles, out);
}

extern "C" __global__ void ncclKernel_ccoTraceTestFake(long long cycles, int* out) {
  spin(cycles, out);
}

namespace cco::test {

cudaError_t launch_compute(cudaStream_t s, int blocks, int threads, std::size_t dyn,
                           long long cycles, int* out) {
  if (dyn > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(
        cco_trace_test_compute, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(dyn));
    if (e != cudaSuccess) return e;
  }
  cco_trace_test_compute<<<blocks, threads, dyn, s>>>(cycles, out);
  return cudaGetLastError();
}

cudaError_t launch_fake_nccl(cudaStream_t s, int blocks, int threads, long long cycles, int* out) {
  ncclKernel_ccoTraceTestFake<<<blocks, threads, 0, s>>>(cycles, out);
  return cudaGetLastError();
}

cudaError_t compute_attributes(cudaFuncAttributes* a) {
  return cudaFuncGetAttributes(a, cco_trace_test_compute);
}

cudaError_t compute_occupancy(int threads, std::size_t dyn, int* blocks) {
  if (dyn > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(
        cco_trace_test_compute, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(dyn));
    if (e != cudaSuccess) return e;
  }
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, cco_trace_test_compute, threads,
                                                       dyn);
}

}  // namespace cco::test
