// What the CUPTI session's two files share (session.cpp: starting, the callbacks, the records;
// session_trace.cpp: the Trace made of them): the raw records, the session's state and the locks
// guarding it. Internal to cco.trace; built only with CUDA (it includes CUPTI's header).
#pragma once

#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trace/format.hpp"
#include "trace/nvtx.hpp"
#include "trace/session.hpp"

namespace cco::trace {

namespace detail {

struct RawKernel {
  uint32_t name = 0;  // index into State::names
  uint64_t start = 0, end = 0, queued = 0, submitted = 0;
  uint32_t device = 0, context = 0, stream = 0, correlation = 0;
  int32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  uint16_t registers = 0;
  int32_t static_smem = 0, dynamic_smem = 0;
};

// A memory copy (CUPTI_ACTIVITY_KIND_MEMCPY / MEMCPY2): NCCL's copy-engine collectives are copies.
struct RawCopy {
  uint64_t start = 0, end = 0, bytes = 0;
  uint32_t device = 0, context = 0, stream = 0, correlation = 0;
  uint8_t kind = 0;  // CUpti_ActivityMemcpyKind
  int32_t src_device = -1, dst_device = -1;
};

struct DeviceInfo {
  std::string name, arch;
  int sm_count = 0;
  double mem_bandwidth = 0;  ///< bytes/s: 2 x memory clock x bus width (0: unknown)
};

extern std::mutex g_mu;        // guards the active session and every State reachable from it
extern std::mutex g_calls_mu;  // guards every State's library calls and labels

// Library calls (Session::push_call): at most how many distinct calls get a label.
inline constexpr std::size_t kMaxCallLabels = 100000;

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// State: everything the callbacks touch, guarded by g_mu
// ---------------------------------------------------------------------------------------------

struct Session::State {
  Options opt;
  bool active = false;
  CUpti_SubscriberHandle subscriber = nullptr;
  std::vector<std::string> warnings;
  std::vector<std::string> facts;  // for the trace's notes only (not warnings: nothing failed)
  std::vector<CUpti_ActivityKind> enabled;
  bool latency = false;
  bool traced = false;  // started successfully at least once

  std::size_t outstanding = 0;  // buffers handed to CUPTI and not yet returned
  uint64_t dropped = 0;
  uint64_t refused_buffers = 0;
  uint64_t bad_buffers = 0;

  std::vector<std::string> names;
  std::unordered_map<const char*, uint32_t> name_index;
  std::vector<detail::RawKernel> kernels;
  std::vector<detail::RawCopy> copies;
  std::vector<trace::Mark> marks;
  trace::NvtxPairing nvtx;
  bool ranges_on = false;                   // the marker kind was enabled at least once
  std::map<uint64_t, int> rank_of_tid;      // gettid() of set_rank's caller -> rank
  std::map<uint64_t, int> rank_of_pthread;  // the same by pthread_self() (CUPTI's default id)
  std::map<std::pair<uint32_t, uint32_t>, int> stream_priority;  // (context, stream)
  std::map<uint32_t, uint32_t> context_device;
  std::map<uint32_t, uint32_t> null_stream;  // context -> stream id
  struct Label {
    uint32_t device, context, stream;
    std::optional<int> priority;
    std::string label;
  };
  std::vector<Label> labels;
  std::map<int, int> rank_of_device;
  std::map<int, detail::DeviceInfo> devices;
  // Library calls (push_call): (launch correlation id, call id) from the launch callback, and
  // each call id's label, guarded by g_calls_mu (not g_mu: the callback and push_call() run on
  // the program's threads, and g_mu may be held for a whole buffer).
  std::atomic<bool> calls_on{false};
  std::vector<std::pair<uint32_t, uint64_t>> call_of_launch;
  std::unordered_map<uint64_t, std::string> call_labels;
  uint64_t labels_refused = 0;  // ids beyond kMaxCallLabels: their kernels carry no call

  uint32_t intern(const char* n) {
    if (!n) n = "?";
    auto it = name_index.find(n);
    if (it != name_index.end() && names[it->second] == n) return it->second;
    const auto idx = static_cast<uint32_t>(names.size());
    names.emplace_back(n);
    name_index[n] = idx;
    return idx;
  }
  void warn(const std::string& w) {
    for (const auto& x : warnings)
      if (x == w) return;
    warnings.push_back(w);
    if (opt.print_warnings) std::fprintf(stderr, "cco trace: warning: %s\n", w.c_str());
  }
};

}  // namespace cco::trace
