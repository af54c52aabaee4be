// Launchers of the tracing test's kernels (tests/core/trace/trace_kernels.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace cco::test {

/// "cco_trace_test_compute": spins `cycles` clock cycles per block.
cudaError_t launch_compute(cudaStream_t s, int blocks, int threads, std::size_t dyn,
                           long long cycles, int* out);
/// "ncclKernel_ccoTraceTestFake": the same, under a name the trace counts as communication.
cudaError_t launch_fake_nccl(cudaStream_t s, int blocks, int threads, long long cycles, int* out);
cudaError_t compute_attributes(cudaFuncAttributes* a);
/// cudaOccupancyMaxActiveBlocksPerMultiprocessor of the compute kernel.
cudaError_t compute_occupancy(int threads, std::size_t dyn, int* blocks);

}  // namespace cco::test
