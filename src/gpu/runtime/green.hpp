// SM partitions with CUDA green contexts (driver API, CUDA 12.4+): compute launched on a
// partition's stream runs on that partition's SMs only; everything else (NCCL on ordinary
// streams) keeps the whole device. Reached through cudaGetDriverEntryPointByVersion, so nothing
// links libcuda.
#pragma once

#include <cuda_runtime.h>

#include <string>

namespace cco::rt {

/// A green context holding `sms` SMs of the current device (rounded up by the driver to its
/// partition granularity), with two non-blocking streams: least and greatest priority.
/// Move-only; destroys its streams and context.
class SmPartition {
 public:
  /// Throws rt::Error when green contexts are unavailable (driver too old, unsupported device)
  /// or the split fails; the message says which.
  SmPartition(int device, int sms);
  ~SmPartition();
  SmPartition(const SmPartition&) = delete;
  SmPartition& operator=(const SmPartition&) = delete;

  int sms() const { return sms_; }                ///< SMs actually in the partition
  int granularity() const { return granularity_; }  ///< the driver's partition alignment
  cudaStream_t stream(bool low_priority = true) const { return low_priority ? low_ : high_; }

 private:
  void* ctx_ = nullptr;  // CUgreenCtx
  cudaStream_t low_ = nullptr, high_ = nullptr;
  int sms_ = 0, granularity_ = 0;
};

}  // namespace cco::rt
