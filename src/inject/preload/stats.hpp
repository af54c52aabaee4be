// Per-process counters of the preload library (CCO_STATS). Lock-free; read at exit.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "preload/decide.hpp"

namespace cco::preload {

struct Stats {
  std::atomic<uint64_t> seen{0};  ///< launches through the hook (Shaped + every reason)
  std::array<std::atomic<uint64_t>, kReasonCount> by_reason{};  ///< [Shaped] = shaped launches
  std::atomic<uint64_t> nccl_prioritised{0};  ///< NCCL launches given CU_LAUNCH_ATTRIBUTE_PRIORITY
  std::atomic<uint64_t> nccl_not_prioritised{0};  ///< NCCL launches through cuLaunchKernel (no Ex)
  std::atomic<uint64_t> collectives_streamed{0};  ///< collectives run on a companion stream
  std::atomic<uint64_t> collectives_direct{0};    ///< collectives left on the caller's stream
  std::atomic<int> nccl_stream_priority_min{INT32_MAX};  ///< priorities of the streams NCCL
  std::atomic<int> nccl_stream_priority_max{INT32_MIN};  ///< kernels were launched on
  std::atomic<int> nccl_launch_priority{INT32_MAX};      ///< the attribute value we added
  std::atomic<uint64_t> hook_ns{0};  ///< time spent in the hook itself (CCO_STATS only)
  std::atomic<uint64_t> hook_cold_ns{0};   ///< ... in launches that built an entry or a decision
  std::atomic<uint64_t> cold_launches{0};  ///< such first-time launches
  // The compute SM budget (blas.hpp): shown when the plan has one or any call came through.
  std::atomic<bool> gemm_active{false};        ///< the plan has a gemm SM target
  std::atomic<uint64_t> gemm_calls{0};         ///< cuBLAS/cuBLASLt GEMM calls through the wrappers
  std::atomic<uint64_t> gemm_sm_targeted{0};   ///< of those, run with the plan's SM target
  // The communication window (window.hpp), when a control acts only inside it.
  std::atomic<uint64_t> window_recorded{0};  ///< NCCL launches followed by the window's event
  std::atomic<uint64_t> window_opened{0};    ///< times a device's window opened
  std::atomic<uint64_t> window_queries{0};   ///< cuEventQuery calls
  std::atomic<uint64_t> window_captured{0};  ///< NCCL launches into a capturing stream
  std::atomic<uint64_t> window_failed{0};    ///< NCCL launches whose event could not be made or recorded

  void count(Reason r) { by_reason[static_cast<int>(r)].fetch_add(1, std::memory_order_relaxed); }
  uint64_t get(Reason r) const {
    return by_reason[static_cast<int>(r)].load(std::memory_order_relaxed);
  }
  void note_stream_priority(int p);
  /// True when anything at all went through the library.
  bool any() const;
  /// One line: "stats pid=... seen=... shaped=... skip.nccl=... nccl_prioritised=...
  /// hook_ns_per_launch=...".
  std::string summary(const std::string& policy, const std::string& method, long pid) const;
};

}  // namespace cco::preload
