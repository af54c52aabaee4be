// Device queries, priority streams, events and shaped launches.
//
// Stream/event contract: every function that takes a cudaStream_t only enqueues work on it and
// returns without synchronising, unless its comment says otherwise.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "model/limits.hpp"
#include "model/occupancy.hpp"

namespace cco::rt {

/// Number of CUDA devices; 0 when there is no GPU or no driver (never throws). `why` receives the
/// CUDA error text in that case.
int device_count(std::string* why = nullptr);

/// The model's limits filled from device `dev` (from_device = true).
model::DeviceLimits query_limits(int dev);

/// Versions for headers and JSON: "13.0" style strings; empty when unavailable.
struct Versions {
  std::string driver;   ///< CUDA driver API version supported by the installed driver
  std::string runtime;  ///< CUDA runtime linked into this binary
  std::string nccl;     ///< NCCL library actually loaded (ncclGetVersion)
  std::string cublas;   ///< cuBLASLt library loaded
};
Versions versions();

struct DeviceInfo {
  int index = 0;
  std::string name;
  std::string pci_bus_id;
  int64_t total_mem = 0;
  int least_priority = 0;     ///< numerically largest (lowest) stream priority
  int greatest_priority = 0;  ///< numerically smallest (highest) stream priority
  model::DeviceLimits limits;
};
DeviceInfo device_info(int dev);

/// Which priority a stream gets.
enum class Priority { Default, Low, High };

/// An owned, non-blocking stream at a priority from the current device's range
/// (High = greatest priority, Low = least). Move-only.
class Stream {
 public:
  Stream() = default;
  explicit Stream(Priority p);
  ~Stream();
  Stream(Stream&& o) noexcept;
  Stream& operator=(Stream&& o) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }
  int priority() const { return prio_; }

 private:
  cudaStream_t s_ = nullptr;
  int prio_ = 0;
};

/// An owned timing event. Move-only.
class Event {
 public:
  Event();
  ~Event();
  Event(Event&& o) noexcept;
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }
  void record(cudaStream_t s);
  /// Milliseconds from `start` to this event; both must have completed (call synchronize()).
  float elapsed_ms_since(const Event& start) const;
  void synchronize() const;

 private:
  cudaEvent_t e_ = nullptr;
};

/// The footprint of a kernel we compiled, from cudaFuncGetAttributes, with a launch's block size
/// and dynamic shared memory.
model::Footprint footprint_of(const void* kernel, int threads, int64_t dynamic_smem);

/// Prepares `kernel` for a launch with `dynamic_smem` bytes: raises
/// cudaFuncAttributeMaxDynamicSharedMemorySize when static + dynamic exceeds the default
/// per-block limit. Throws when over the opt-in maximum.
void allow_dynamic_smem(const void* kernel, int64_t dynamic_smem);

/// What the driver says about the footprint (cudaOccupancyMaxActiveBlocksPerMultiprocessor),
/// after allow_dynamic_smem.
int driver_occupancy(const void* kernel, int threads, int64_t dynamic_smem);

}  // namespace cco::rt
