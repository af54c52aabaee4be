#include "preload/stats.hpp"

#include <cinttypes>
#include <cstdio>

namespace cco::preload {

void Stats::note_stream_priority(int p) {
  int cur = nccl_stream_priority_min.load(std::memory_order_relaxed);
  while (p < cur && !nccl_stream_priority_min.compare_exchange_weak(cur, p)) {
  }
  cur = nccl_stream_priority_max.load(std::memory_order_relaxed);
  while (p > cur && !nccl_stream_priority_max.compare_exchange_weak(cur, p)) {
  }
}

bool Stats::any() const {
  return seen.load() > 0 || collectives_streamed.load() > 0 || collectives_direct.load() > 0 ||
         gemm_calls.load() > 0;
}

std::string Stats::summary(const std::string& policy, const std::string& method, long pid) const {
  const uint64_t n = seen.load();
  const uint64_t shaped = get(Reason::Shaped);
  const uint64_t nccl = get(Reason::Nccl);
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "stats pid=%ld policy=%s method=%s seen=%" PRIu64 " shaped=%" PRIu64
                " passed=%" PRIu64 " nccl=%" PRIu64 " nccl_prioritised=%" PRIu64,
                pid, policy.c_str(), method.c_str(), n, shaped, n - shaped, nccl,
                nccl_prioritised.load());
  std::string s = buf;
  if (nccl_not_prioritised.load())
    s += " nccl_not_prioritised=" + std::to_string(nccl_not_prioritised.load());
  if (collectives_streamed.load() || collectives_direct.load())
    s += " collectives_streamed=" + std::to_string(collectives_streamed.load()) +
         " collectives_direct=" + std::to_string(collectives_direct.load());
  if (nccl_launch_priority.load() != INT32_MAX)
    s += " nccl_launch_priority=" + std::to_string(nccl_launch_priority.load());
  if (nccl_stream_priority_min.load() != INT32_MAX)
    s += " nccl_stream_priority=" + std::to_string(nccl_stream_priority_min.load()) + ".." +
         std::to_string(nccl_stream_priority_max.load());
  if (window_recorded.load() || window_captured.load())
    s += " window_opened=" + std::to_string(window_opened.load()) +
         " window_nccl_recorded=" + std::to_string(window_recorded.load()) +
         " window_queries=" + std::to_string(window_queries.load()) +
         (window_captured.load() ? " window_nccl_captured=" + std::to_string(window_captured.load())
                                 : std::string());
  if (gemm_active.load() || gemm_calls.load())
    s += " gemm_calls=" + std::to_string(gemm_calls.load()) +
         " gemm_sm_targeted=" + std::to_string(gemm_sm_targeted.load());
  for (int r = 1; r < kReasonCount; ++r) {
    const uint64_t c = by_reason[r].load();
    if (c) s += std::string(" skip.") + to_string(static_cast<Reason>(r)) + "=" + std::to_string(c);
  }
  const uint64_t ns = hook_ns.load();
  std::snprintf(buf, sizeof buf, " hook_ms=%.3f hook_ns_per_launch=%.0f",
                static_cast<double>(ns) / 1e6,
                n ? static_cast<double>(ns) / static_cast<double>(n) : 0.0);
  s += buf;
  // The steady state apart from first-time launches (entry and decision built, driver queried).
  const uint64_t cold = cold_launches.load(), cold_ns = hook_cold_ns.load();
  if (n > cold && ns >= cold_ns) {
    std::snprintf(buf, sizeof buf, " hook_ns_steady=%.0f cold_launches=%" PRIu64,
                  static_cast<double>(ns - cold_ns) / static_cast<double>(n - cold), cold);
    s += buf;
  }
  return s;
}

}  // namespace cco::preload
