// Green-context SM partitions: blocks launched on a partition's stream run on that partition's
// SMs only (read back with %smid), and on an ordinary stream they spread over the device.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "runtime/check.hpp"
#include "runtime/device.hpp"
#include "runtime/green.hpp"

namespace {

__global__ void record_smid(unsigned* out, long long spin) {
  unsigned id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  const long long t0 = clock64();
  while (clock64() - t0 < spin) {
  }
  if (threadIdx.x == 0) out[blockIdx.x] = id;
}

std::set<unsigned> sms_used(cudaStream_t s, int blocks) {
  unsigned* d = nullptr;
  CCO_CUDA_CHECK(cudaMalloc(&d, blocks * sizeof(unsigned)));
  record_smid<<<blocks, 128, 0, s>>>(d, 20000);
  CCO_CUDA_CHECK(cudaGetLastError());
  CCO_CUDA_CHECK(cudaStreamSynchronize(s));
  std::vector<unsigned> h(blocks);
  CCO_CUDA_CHECK(cudaMemcpy(h.data(), d, blocks * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CCO_CUDA_CHECK(cudaFree(d));
  return {h.begin(), h.end()};
}

}  // namespace

TEST(Green, PartitionConfinesBlocksToItsSms) {
  CCO_CUDA_CHECK(cudaSetDevice(0));
  const int total = cco::rt::query_limits(0).sm_count;
  const int blocks = total * 16;
  const auto whole = sms_used(nullptr, blocks);
  EXPECT_GT(static_cast<int>(whole.size()), total * 3 / 4) << "an ordinary stream should use most SMs";
  for (int want : {16, total / 2, total - 32}) {
    cco::rt::SmPartition part(0, want);
    EXPECT_GE(part.sms(), want);
    EXPECT_LT(part.sms(), total);
    const auto used = sms_used(part.stream(), blocks);
    std::printf("green partition asked %d SMs, holds %d (granularity %d); blocks ran on %zu SMs\n",
                want, part.sms(), part.granularity(), used.size());
    EXPECT_LE(static_cast<int>(used.size()), part.sms());
    EXPECT_GE(static_cast<int>(used.size()), part.sms() * 3 / 4);
    const auto used_high = sms_used(part.stream(false), blocks);
    EXPECT_LE(static_cast<int>(used_high.size()), part.sms());
  }
}

TEST(Green, BadSizesAreErrors) {
  const int total = cco::rt::query_limits(0).sm_count;
  EXPECT_THROW(cco::rt::SmPartition(0, 0), cco::rt::Error);
  EXPECT_THROW(cco::rt::SmPartition(0, total), cco::rt::Error);
}
