// The trace a CUPTI session's records make (Session::trace, Session::write): kernels with their
// library calls, the copies that matter, step marks, NVTX ranges with their ranks, streams and
// ranks, the notes. Built only with CUDA (session_state.hpp includes CUPTI's header).
#include <cxxabi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <tuple>

#include "trace/cupti_loader.hpp"
#include "trace/session_state.hpp"

namespace cco::trace {

namespace {

using detail::cupti_api;

std::string demangle(const std::string& n) {
  if (n.rfind("_Z", 0) != 0) return n;
  int status = 0;
  char* d = abi::__cxa_demangle(n.c_str(), nullptr, nullptr, &status);
  std::string out = (status == 0 && d) ? std::string(d) : n;
  std::free(d);
  return out;
}

using StreamKey = std::tuple<uint32_t, uint32_t, uint32_t>;  // device, context, stream

// What every part of the trace needs from the state: ranks, priorities, the devices seen.
struct Maker {
  const Session::State& s;
  int rank;  // -1: every rank
  std::set<int> devs;

  int rank_of(uint32_t device) const {
    auto it = s.rank_of_device.find(static_cast<int>(device));
    return it != s.rank_of_device.end() ? it->second : static_cast<int>(device);
  }
  bool wanted(int rk) const { return rank < 0 || rk == rank; }
  std::optional<int> priority_of(uint32_t ctx, uint32_t stream) const {
    if (auto it = s.stream_priority.find({ctx, stream}); it != s.stream_priority.end())
      return it->second;
    if (auto it = s.null_stream.find(ctx); it != s.null_stream.end() && it->second == stream)
      return 0;  // the NULL stream has the default priority
    return std::nullopt;
  }
  // An event of the trace: a kernel's or a copy's place and time (the caller fills the rest).
  trace::KernelEvent event(int rk, uint32_t device, uint32_t context, uint32_t stream,
                           uint64_t start, uint64_t end, uint32_t correlation) {
    trace::KernelEvent k;
    k.rank = rk;
    k.device = static_cast<int>(device);
    k.stream = stream;
    k.priority = priority_of(context, stream);
    k.start_ns = static_cast<int64_t>(start);
    k.end_ns = static_cast<int64_t>(std::max(end, start));
    k.correlation_id = correlation;
    devs.insert(static_cast<int>(device));
    return k;
  }
};

// The kernels, each with its library call; returns the streams that ran any kernel.
std::set<StreamKey> add_kernels(Maker& m, trace::Trace& t, uint64_t* labels_refused) {
  const Session::State& s = m.s;
  std::vector<std::string> demangled(s.names.size());
  for (std::size_t i = 0; i < s.names.size(); ++i) demangled[i] = demangle(s.names[i]);
  // Each launch's library call, by its correlation id (the last record wins: CUPTI writes one).
  std::unordered_map<uint32_t, const std::string*> call_of;
  {
    std::lock_guard ll(detail::g_calls_mu);
    *labels_refused = s.labels_refused;
    call_of.reserve(s.call_of_launch.size());
    for (const auto& [corr, id] : s.call_of_launch)
      if (auto it = s.call_labels.find(id); it != s.call_labels.end() && !it->second.empty())
        call_of[corr] = &it->second;
  }
  std::set<StreamKey> streams;
  for (const auto& r : s.kernels) {
    const int rk = m.rank_of(r.device);
    if (!m.wanted(rk)) continue;
    trace::KernelEvent k = m.event(rk, r.device, r.context, r.stream, r.start, r.end, r.correlation);
    k.name = demangled[r.name];
    k.category = trace::classify_kernel(s.names[r.name]);
    streams.insert({r.device, r.context, r.stream});
    k.queued_ns = static_cast<int64_t>(r.queued);
    k.submitted_ns = static_cast<int64_t>(r.submitted);
    k.grid = {r.grid[0], r.grid[1], r.grid[2]};
    k.block = {r.block[0], r.block[1], r.block[2]};
    k.registers = r.registers;
    k.static_smem = r.static_smem;
    k.dynamic_smem = r.dynamic_smem;
    if (auto it = call_of.find(r.correlation); it != call_of.end()) k.call = *it->second;
    t.kernels.push_back(std::move(k));
  }
  return streams;
}

// The copies that matter: between devices (peer to peer), and device to device on a stream that
// ran kernels: NCCL's copy-engine collectives on its streams, the program's own copies (DDP's
// between gradients and buckets) on its compute streams -- which normalize() makes compute, as
// it does in traces written before. Other copies (host to device, device to device on streams
// without kernels) are left out. (A copy's device has the rank of that device's kernels, so the
// streams gathered from this rank's kernels are the ones that matter.)
void add_copies(Maker& m, trace::Trace& t, const std::set<StreamKey>& kernel_streams) {
  for (const auto& c : m.s.copies) {
    const bool ptop = c.kind == CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    const bool dtod = c.kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOD &&
                      kernel_streams.count({c.device, c.context, c.stream}) > 0;
    if (!ptop && !dtod) continue;
    const int rk = m.rank_of(c.device);
    if (!m.wanted(rk)) continue;
    trace::KernelEvent k = m.event(rk, c.device, c.context, c.stream, c.start, c.end, c.correlation);
    k.copy = ptop ? "PtoP" : "DtoD";
    k.bytes = static_cast<int64_t>(c.bytes);
    k.src_device = c.src_device;
    k.dst_device = c.dst_device;
    k.name = "memcpy " + k.copy.str() + " " + std::to_string(c.bytes) + " B (copy engine)";
    k.category = trace::KernelCategory::Communication;
    t.kernels.push_back(std::move(k));
  }
}

// NVTX ranges: a rank's own thread (set_rank) gives its rank; other threads the lowest rank of
// the process (its only one, when a process drives one device).
void add_ranges(const Maker& m, trace::Trace& t) {
  const Session::State& s = m.s;
  std::optional<int> lowest;
  auto low = [&](int r) { lowest = lowest ? std::min(*lowest, r) : r; };
  for (const auto& r : s.kernels) low(m.rank_of(r.device));
  for (const auto& l : s.labels) low(m.rank_of(l.device));
  if (!lowest)
    for (const auto& [d, r] : s.rank_of_device) low(r);
  std::vector<trace::NvtxRange> ranges = s.nvtx.ranges();
  trace::assign_nvtx_ranks(ranges, cupti_api().system_thread_ids ? s.rank_of_tid : s.rank_of_pthread,
                           lowest.value_or(0));
  for (auto& r : ranges)
    if (m.wanted(r.rank)) t.ranges.push_back(std::move(r));
}

// The labelled streams, then one RankInfo per rank of the devices seen.
void add_streams_and_ranks(Maker& m, trace::Trace& t) {
  const Session::State& s = m.s;
  std::set<std::tuple<int, int, int64_t>> labelled;
  for (const auto& l : s.labels) {
    const int rk = m.rank_of(l.device);
    if (!m.wanted(rk)) continue;
    trace::StreamInfo si;
    si.rank = rk;
    si.device = static_cast<int>(l.device);
    si.stream = l.stream;
    si.priority = l.priority ? l.priority : m.priority_of(l.context, l.stream);
    si.label = l.label;
    if (labelled.insert({si.rank, si.device, si.stream}).second) t.streams.push_back(si);
    m.devs.insert(si.device);
  }
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  for (int d : m.devs) {
    trace::RankInfo ri;
    ri.rank = m.rank_of(static_cast<uint32_t>(d));
    ri.device = d;
    if (auto it = s.devices.find(d); it != s.devices.end()) {
      ri.device_name = it->second.name;
      ri.arch = it->second.arch;
      ri.sm_count = it->second.sm_count;
      ri.mem_bandwidth = it->second.mem_bandwidth;
    }
    ri.host = host;
    ri.pid = getpid();
    bool dup = false;
    for (const auto& o : t.ranks) dup = dup || o.rank == ri.rank;
    if (!dup) t.ranks.push_back(ri);
  }
}

}  // namespace

trace::Trace Session::trace(int rank) const {
  std::lock_guard lk(detail::g_mu);
  const State& s = *s_;
  Maker m{s, rank, {}};
  trace::Trace t;
  uint64_t labels_refused = 0;
  add_copies(m, t, add_kernels(m, t, &labels_refused));
  for (const auto& mk : s.marks)
    if (rank < 0 || mk.rank < 0 || mk.rank == rank) t.marks.push_back(mk);
  add_ranges(m, t);
  add_streams_and_ranks(m, t);
  t.dropped_records = s.dropped;
  t.notes = s.warnings;
  if (labels_refused > 0)
    t.notes.push_back("more than " + std::to_string(detail::kMaxCallLabels) +
                      " distinct library calls: the kernels of later ones carry no call");
  t.notes.insert(t.notes.end(), s.facts.begin(), s.facts.end());
  for (auto& n : s.nvtx.notes()) t.notes.push_back(std::move(n));
  if (s.traced)
    t.notes.push_back("traced with CUPTI API " + std::to_string(cupti_api().version) + " from " +
                      cupti_api().path +
                      (s.latency ? "; launch timestamps on" : "; launch timestamps off") +
                      (s.ranges_on ? "; NVTX ranges on" : "; NVTX ranges off"));
  t.source = "cupti";
  t.normalize();  // also: device copies on compute streams become compute
  trace::fill_blocks_per_sm(t);
  return t;
}

void Session::write(const std::string& path, int rank) const {
  trace::write_trace_file(trace(rank), path);
}

}  // namespace cco::trace
