#include "trace/format.hpp"
#include "trace/gzip.hpp"

#include "model/read_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "model/limits.hpp"
#include "model/occupancy.hpp"

namespace cco::trace {

using nlohmann::json;
using namespace cco::model;

namespace {
bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}
}  // namespace

// ---------------------------------------------------------------------------------------------
// Categories
// ---------------------------------------------------------------------------------------------

const char* to_string(KernelCategory c) {
  return c == KernelCategory::Communication ? "communication" : "compute";
}

bool is_communication_kernel(std::string_view n) {
  if (starts_with(n, "void ")) n.remove_prefix(5);
  if (starts_with(n, "_Z")) {  // Itanium mangling of a free function: _Z<length><name>...
    n.remove_prefix(2);
    while (!n.empty() && n.front() >= '0' && n.front() <= '9') n.remove_prefix(1);
  }
  return starts_with(n, "ncclDevKernel_") || starts_with(n, "ncclSymkDevKernel_") ||
         starts_with(n, "ncclSymDevKernel_") || starts_with(n, "ncclKernel");
}

KernelCategory classify_kernel(std::string_view name) {
  return is_communication_kernel(name) ? KernelCategory::Communication : KernelCategory::Compute;
}

// ---------------------------------------------------------------------------------------------
// Trace
// ---------------------------------------------------------------------------------------------

const StreamInfo* Trace::find_stream(int rank, int device, int64_t stream) const {
  for (const auto& s : streams)
    if (s.rank == rank && s.device == device && s.stream == stream) return &s;
  return nullptr;
}

void Trace::normalize() {
  std::map<std::tuple<int, int, int64_t>, std::size_t> idx;
  for (std::size_t i = 0; i < streams.size(); ++i)
    idx[{streams[i].rank, streams[i].device, streams[i].stream}] = i;
  std::set<int> known_ranks;
  for (const auto& r : ranks) known_ranks.insert(r.rank);
  for (auto& k : kernels) {
    const auto key = std::make_tuple(k.rank, k.device, k.stream);
    auto it = idx.find(key);
    if (it == idx.end()) {
      StreamInfo s;
      s.rank = k.rank;
      s.device = k.device;
      s.stream = k.stream;
      s.priority = k.priority;
      idx[key] = streams.size();
      streams.push_back(s);
    } else {
      auto& s = streams[it->second];
      if (!s.priority && k.priority) s.priority = k.priority;
      if (!k.priority) k.priority = s.priority;
    }
    if (known_ranks.insert(k.rank).second) {
      RankInfo r;
      r.rank = k.rank;
      r.device = k.device;
      ranks.push_back(r);
    }
  }
  for (const auto& r : ranges) {
    if (known_ranks.insert(r.rank).second) {
      RankInfo ri;
      ri.rank = r.rank;
      ri.device = r.rank;
      ranks.push_back(ri);
    }
  }
  // A stream whose priority became known only from a later kernel: pass it to every kernel.
  for (auto& k : kernels)
    if (!k.priority) k.priority = streams[idx[{k.rank, k.device, k.stream}]].priority;
  // Device copies on a stream that runs compute kernels are the program's own work on that
  // stream (DDP copying gradients into and out of its buckets), not NCCL's copy-engine
  // collectives, which NCCL issues on its own streams.
  std::set<std::tuple<int, int, int64_t>> compute_streams;
  for (const auto& k : kernels)
    if (k.category == KernelCategory::Compute && !k.is_copy())
      compute_streams.insert({k.rank, k.device, k.stream});
  for (auto& k : kernels)
    if (k.copy == "DtoD" && k.category == KernelCategory::Communication &&
        compute_streams.count({k.rank, k.device, k.stream}))
      k.category = KernelCategory::Compute;
  std::sort(ranks.begin(), ranks.end(),
            [](const RankInfo& a, const RankInfo& b) { return a.rank < b.rank; });
  std::sort(streams.begin(), streams.end(), [](const StreamInfo& a, const StreamInfo& b) {
    return std::tie(a.rank, a.device, a.stream) < std::tie(b.rank, b.device, b.stream);
  });
  std::stable_sort(marks.begin(), marks.end(),
                   [](const Mark& a, const Mark& b) { return a.ts_ns < b.ts_ns; });
  // By rank and start. A file cco wrote is in that order already; else the order is found on
  // indices and the kernels moved once (not log n times: a kernel is some 250 bytes).
  const auto before = [](const KernelEvent& a, const KernelEvent& b) {
    return std::tie(a.rank, a.start_ns) < std::tie(b.rank, b.start_ns);
  };
  if (!std::is_sorted(kernels.begin(), kernels.end(), before)) {
    std::vector<std::size_t> order(kernels.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return before(kernels[a], kernels[b]); });
    std::vector<KernelEvent> sorted;
    sorted.reserve(kernels.size());
    for (const std::size_t i : order) sorted.push_back(std::move(kernels[i]));
    kernels = std::move(sorted);
  }
  // Outer ranges before the ranges they enclose (Chrome nests complete events in file order).
  std::stable_sort(ranges.begin(), ranges.end(), [](const NvtxRange& a, const NvtxRange& b) {
    return std::make_tuple(a.rank, a.start_ns, -a.end_ns, a.thread) <
           std::make_tuple(b.rank, b.start_ns, -b.end_ns, b.thread);
  });
}

// ---------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------

namespace {

std::string stream_title(const StreamInfo& s) {
  std::string t = "stream " + std::to_string(s.stream);
  t += s.priority ? " priority " + std::to_string(*s.priority) : " priority ?";
  if (!s.label.empty()) t += " (" + s.label + ")";
  return t;
}

std::string rank_title(const RankInfo& r) {
  std::string t = "rank " + std::to_string(r.rank) + ": device " + std::to_string(r.device);
  if (!r.device_name.empty()) t += " " + r.device_name;
  if (!r.arch.empty() || r.sm_count > 0) {
    t += " (";
    if (!r.arch.empty()) t += r.arch;
    if (r.sm_count > 0) t += (r.arch.empty() ? "" : ", ") + std::to_string(r.sm_count) + " SMs";
    t += ")";
  }
  return t;
}

json dim_json(const Dim3& d) {
  return json::array({d.x, d.y, d.z});
}

}  // namespace

namespace {

/// The trace's time zero: the earliest kernel, else the earliest NVTX range, else the first mark.
int64_t time_origin(const Trace& t) {
  int64_t origin = 0;
  if (!t.kernels.empty()) {
    origin = t.kernels.front().start_ns;
    for (const auto& k : t.kernels) origin = std::min(origin, k.start_ns);
  } else if (!t.ranges.empty()) {
    origin = t.ranges.front().start_ns;
    for (const auto& r : t.ranges) origin = std::min(origin, r.start_ns);
  } else if (!t.marks.empty()) {
    origin = t.marks.front().ts_ns;
  }
  // Not another tool's kept events: one of them at ts 0 (or far off) would move every time of
  // the file (kernels' too) out of a double's nanoseconds. Those before the first kernel are
  // written at negative times.
  return origin;
}

/// The preload library's step marks ("cco step, epoch E, config C") of each rank, in time order:
/// the steps PyTorch's tools and HTA look for.
using StepMarks = std::map<int, std::vector<const Mark*>>;
StepMarks step_marks(const Trace& t) {
  StepMarks by_rank;
  for (const auto& m : t.marks)
    if (m.rank >= 0 && m.name.rfind("cco step, ", 0) == 0) by_rank[m.rank].push_back(&m);
  return by_rank;  // t.marks is sorted by time (normalize)
}

/// Where the writer's events go, one at a time (trace_to_json's array, or the text as it is made).
using Emit = std::function<void(json&&)>;

/// A kernel whose launch call the file gives (host_events): not a copy, with a correlation id
/// and a launch time.
bool has_launch_event(const KernelEvent& k) {
  return !k.is_copy() && k.correlation_id != 0 && k.queued_ns > 0;
}

/// Perfetto's metadata events: a process per rank, then its rows -- the NVTX threads first
/// (above), then its streams, most urgent priority first, then by stream id.
void row_events(const Trace& t, const StepMarks& steps, const Emit& emit) {
  for (const auto& r : t.ranks) {
    emit({{"ph", "M"},
                      {"name", "process_name"},
                      {"pid", r.rank},
                      {"tid", 0},
                      {"args", {{"name", rank_title(r)}}}});
    emit({{"ph", "M"},
                      {"name", "process_sort_index"},
                      {"pid", r.rank},
                      {"tid", 0},
                      {"args", {{"sort_index", r.rank}}}});
  }
  // The host row of PyTorch's step annotations and launch calls (host_events), on ranks that have
  // either.
  std::set<int> host;
  for (const auto& [rank, marks] : steps)
    if (marks.size() > 1) host.insert(rank);
  for (const auto& k : t.kernels)
    if (has_launch_event(k)) host.insert(k.rank);
  for (int rank : host)
    emit({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", rank},
                      {"tid", kHostTid},
                      {"args", {{"name", "host: steps and launch calls"}}}});
  std::vector<const StreamInfo*> order;
  for (const auto& s : t.streams) order.push_back(&s);
  std::stable_sort(order.begin(), order.end(), [](const StreamInfo* a, const StreamInfo* b) {
    const int pa = a->priority.value_or(0), pb = b->priority.value_or(0);
    return std::tie(a->rank, pa, a->stream) < std::tie(b->rank, pb, b->stream);
  });
  std::map<int, std::set<uint64_t>> nvtx_threads;
  for (const auto& r : t.ranges) nvtx_threads[r.rank].insert(r.thread);
  int64_t sort_index = 0;
  auto thread_row = [&](int pid, int64_t tid, const std::string& title) {
    emit({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", pid},
                      {"tid", tid},
                      {"args", {{"name", title}}}});
    emit({{"ph", "M"},
                      {"name", "thread_sort_index"},
                      {"pid", pid},
                      {"tid", tid},
                      {"args", {{"sort_index", sort_index++}}}});
  };
  std::size_t next = 0;
  for (const auto& [rank, threads] : nvtx_threads) {
    while (next < order.size() && order[next]->rank < rank) {
      thread_row(order[next]->rank, order[next]->stream, stream_title(*order[next]));
      ++next;
    }
    for (uint64_t th : threads)
      thread_row(rank, kNvtxTidBase + static_cast<int64_t>(th),
                 "NVTX (thread " + std::to_string(th) + ")");
  }
  for (; next < order.size(); ++next)
    thread_row(order[next]->rank, order[next]->stream, stream_title(*order[next]));
}

json kernel_event(const KernelEvent& k, int64_t origin) {
  json args = {{"device", k.device},
               {"stream", k.stream},
               {"grid", dim_json(k.grid)},
               {"block", dim_json(k.block)},
               {"registers", k.registers},
               {"static_smem", k.static_smem},
               {"dynamic_smem", k.dynamic_smem},
               {"start_ns", k.start_ns},
               {"end_ns", k.end_ns}};
  if (k.priority) args["priority"] = *k.priority;
  if (k.blocks_per_sm > 0) args["blocks_per_sm"] = k.blocks_per_sm;
  if (k.queued_ns > 0) args["queued_ns"] = k.queued_ns;
  if (k.submitted_ns > 0) args["submitted_ns"] = k.submitted_ns;
  if (k.correlation_id > 0) args["correlation"] = k.correlation_id;
  if (!k.call.empty()) args["call"] = k.call;
  if (k.is_copy()) {
    args["copy"] = k.copy;
    args["bytes"] = k.bytes;
    if (k.src_device >= 0) args["src_device"] = k.src_device;
    if (k.dst_device >= 0) args["dst_device"] = k.dst_device;
  }
  // HTA and PyTorch's own tools select GPU work by category: "kernel" (a copy: "gpu_memcpy");
  // ours (compute or communication) is args.kind.
  args["kind"] = to_string(k.category);
  return {{"ph", "X"},
          {"name", k.name},
          {"cat", !k.is_copy() ? "kernel" : k.copy == "Memset" ? "gpu_memset" : "gpu_memcpy"},
          {"pid", k.rank},
          {"tid", k.stream},
          {"ts", static_cast<double>(k.start_ns - origin) / 1000.0},
          {"dur", static_cast<double>(k.end_ns - k.start_ns) / 1000.0},
          {"args", args}};
}

json range_event(const NvtxRange& r, int64_t origin) {
  json args = {{"start_ns", r.start_ns}, {"end_ns", r.end_ns}, {"thread", r.thread}};
  if (!r.domain.empty()) args["domain"] = r.domain;
  return {{"ph", "X"},
          {"name", r.name},
          {"cat", "nvtx"},
          {"pid", r.rank},
          {"tid", kNvtxTidBase + static_cast<int64_t>(r.thread)},
          {"ts", static_cast<double>(r.start_ns - origin) / 1000.0},
          {"dur", static_cast<double>(r.end_ns - r.start_ns) / 1000.0},
          {"args", args}};
}

json mark_event(const Mark& m, int64_t origin) {
  return {{"ph", "i"},
          {"name", m.name},
          {"cat", "mark"},
          {"pid", m.rank >= 0 ? m.rank : 0},
          {"tid", 0},
          {"s", m.rank >= 0 ? "p" : "g"},
          {"ts", static_cast<double>(m.ts_ns - origin) / 1000.0},
          {"args", {{"ts_ns", m.ts_ns}, {"rank", m.rank}}}};
}

/// What PyTorch's profiler writes and Holistic Trace Analysis reads (issue 45), made from what
/// the trace holds, on one host row per rank (tid kHostTid): each step between two of the
/// library's step marks as "ProfilerStep#N" (cat "user_annotation", N from 1 per rank), and each
/// kernel's launch as "cuLaunchKernel" (cat "cuda_driver", the host call that queued it:
/// CUPTI's queued..submitted times, args.correlation the kernel's). cco's own reader skips them
/// (it has the marks and the kernels).
void host_events(const Trace& t, const StepMarks& steps, int64_t origin, const Emit& emit) {
  auto us = [origin](int64_t ns) { return static_cast<double>(ns - origin) / 1000.0; };
  for (const auto& [rank, marks] : steps)
    for (std::size_t i = 0; i + 1 < marks.size(); ++i)
      emit({{"ph", "X"},
                        {"name", "ProfilerStep#" + std::to_string(i + 1)},
                        {"cat", "user_annotation"},
                        {"pid", rank},
                        {"tid", kHostTid},
                        {"ts", us(marks[i]->ts_ns)},
                        {"dur", static_cast<double>(marks[i + 1]->ts_ns - marks[i]->ts_ns) / 1000.0},
                        {"args", {{"from", marks[i]->name}}}});
  std::set<int> own_calls;  // ranks whose kept events hold their own launch calls
  for (const auto& k : t.kept)
    if (k.launch_call) own_calls.insert(k.rank);
  for (const auto& k : t.kernels) {
    if (!has_launch_event(k) || own_calls.count(k.rank)) continue;
    const int64_t end = std::max(k.queued_ns + 1, k.submitted_ns);
    emit({{"ph", "X"},
                      {"name", "cuLaunchKernel"},
                      {"cat", "cuda_driver"},
                      {"pid", k.rank},
                      {"tid", kHostTid},
                      {"ts", us(k.queued_ns)},
                      {"dur", static_cast<double>(end - k.queued_ns) / 1000.0},
                      {"args", {{"correlation", k.correlation_id}}}});
  }
}

/// otherData.ccoverlap: the schema, the time origin, dropped records, notes, ranks and streams.
json our_data(const Trace& t, int64_t origin) {
  json ranks = json::array();
  for (const auto& r : t.ranks)
    ranks.push_back({{"rank", r.rank},
                     {"device", r.device},
                     {"device_name", r.device_name},
                     {"arch", r.arch},
                     {"sm_count", r.sm_count},
                     {"mem_bandwidth", r.mem_bandwidth},
                     {"host", r.host},
                     {"pid", r.pid}});
  json streams = json::array();
  for (const auto& s : t.streams) {
    json x = {{"rank", s.rank}, {"device", s.device}, {"stream", s.stream}, {"label", s.label}};
    x["priority"] = s.priority ? json(*s.priority) : json(nullptr);
    streams.push_back(x);
  }
  return {{"schema", kTraceSchema},   {"schema_version", kTraceSchemaVersion},
          {"time_origin_ns", origin}, {"dropped_records", t.dropped_records},
          {"notes", t.notes},         {"ranks", ranks},
          {"streams", streams}};
}

}  // namespace

namespace {

// The file's top level but its events (keys sorted, as a dump writes them: "displayTimeUnit",
// "distributedInfo", "otherData" all come before "traceEvents").
json trace_head(const Trace& t) {
  json head = json::object();
  head["displayTimeUnit"] = "ns";
  // One rank's file (one process per GPU): the rank as PyTorch's profiler writes it, so Holistic
  // Trace Analysis reads a folder of such files as one multi-rank job.
  if (t.ranks.size() == 1) head["distributedInfo"] = {{"rank", t.ranks.front().rank}, {"backend", "nccl"}};
  head["otherData"]["ccoverlap"] = our_data(t, time_origin(t));
  return head;
}

// A kept event of another tool as written: its rank as "pid", its time on the trace's origin, and
// an "id" (flows, async events) made its rank's own: rank r > 0 adds r * 2^32 to a number, or
// prefixes "r<r>:" to a string, so ranks' ids (a profiler's correlation ids) never join.
json kept_event(const KeptEvent& k, int64_t origin) {
  json e = json::parse(k.text);  // one event at a time: the file's text is never a document
  e["pid"] = k.rank;
  // cco reads its own files' instants of category "mark" as its step marks: another tool's keep
  // their category under another name.
  if (auto c = e.find("cat"); c != e.end() && *c == "mark") *c = "mark (kept)";
  if (k.ts_ns) e["ts"] = static_cast<double>(*k.ts_ns - origin) / 1000.0;
  if (auto id = e.find("id"); id != e.end() && k.rank > 0) {
    // A number below 2^32 (a profiler's correlation ids) moves by rank * 2^32; any other id (a
    // string, a negative number, or one that could not move without overflow) gets the rank's
    // prefix. `text` is parsed: a number that is not negative is unsigned.
    if (id->is_number_unsigned() && id->get<uint64_t>() < (uint64_t{1} << 32))
      *id = id->get<int64_t>() + (static_cast<int64_t>(k.rank) << 32);
    else
      *id = fmt::format("r{}:{}", k.rank, id->is_string() ? id->get<std::string>() : id->dump());
  }
  return e;
}

// Every event of the file, one at a time: another tool's kept events first (their process names
// then give way to ours, written after them).
void trace_events(const Trace& t, const Emit& emit) {
  const int64_t origin = time_origin(t);
  for (const auto& k : t.kept) emit(kept_event(k, origin));
  const StepMarks steps = step_marks(t);
  row_events(t, steps, emit);
  for (const auto& k : t.kernels) emit(kernel_event(k, origin));
  for (const auto& r : t.ranges) emit(range_event(r, origin));
  for (const auto& m : t.marks) emit(mark_event(m, origin));
  host_events(t, steps, origin, emit);
}

// The text of a normalised trace, piece by piece to `sink`: the events dumped one at a time,
// never a document of them (a long job's trace is millions of events), the same bytes as a dump
// of trace_to_json. A one-rank file's "distributedInfo" reads `"rank": N` with the space
// PyTorch's profiler writes (Holistic Trace Analysis finds a file's rank by that pattern).
void write_trace_text(const Trace& t, const std::function<void(std::string_view)>& sink) {
  std::string head = trace_head(t).dump();
  const std::string key = "\"distributedInfo\":{";
  if (const auto at = head.find(key); at != std::string::npos) {
    const auto end = head.find('}', at);
    const auto r = head.find("\"rank\":", at);
    if (r != std::string::npos && r < end) head.insert(r + 7, 1, ' ');
  }
  head.pop_back();  // its closing brace: the events follow
  head += ",\"traceEvents\":[";
  sink(head);
  std::string piece;
  bool first = true;
  trace_events(t, [&](json&& e) {
    if (!first) piece += ',';
    first = false;
    piece += e.dump();
    if (piece.size() >= (std::size_t{1} << 20)) {
      sink(piece);
      piece.clear();
    }
  });
  piece += "]}\n";
  sink(piece);
}

}  // namespace

json trace_to_json(const Trace& in) {
  Trace t = in;
  t.normalize();
  json j = trace_head(t);
  json events = json::array();
  trace_events(t, [&](json&& e) { events.push_back(std::move(e)); });
  j["traceEvents"] = std::move(events);
  return j;
}

std::string trace_text(const Trace& in) {
  Trace t = in;
  t.normalize();
  std::string text;
  write_trace_text(t, [&](std::string_view piece) { text += piece; });
  return text;
}

void write_trace_file(const Trace& in, const std::string& path) {
  // A name ending in .gz is gzip, as it says (HTA stopped at plain JSON under such a name),
  // compressed as the text is made: the text of a long job's trace is never held whole.
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  Trace t = in;
  t.normalize();
  std::string out;
  if (gz) {
    Deflater d(path);  // Error (one line) where this build has no zlib
    write_trace_text(t, [&](std::string_view piece) { d.add(piece, out); });
    d.finish(out);
  } else {
    write_trace_text(t, [&](std::string_view piece) { out += piece; });
  }
  try {
    write_file(path, out);  // whole or not at all
  } catch (const WriteError&) {
    throw Error("cannot write trace file '" + path + "'");
  }
}

namespace {

/// First and last time of a part (kernels and NVTX ranges); nullopt when it has neither.
std::optional<std::pair<int64_t, int64_t>> time_span(const Trace& t) {
  std::optional<std::pair<int64_t, int64_t>> s;
  auto take = [&](int64_t a, int64_t b) {
    s = s ? std::make_pair(std::min(s->first, a), std::max(s->second, b)) : std::make_pair(a, b);
  };
  for (const auto& k : t.kernels) take(k.start_ns, k.end_ns);
  for (const auto& r : t.ranges) take(r.start_ns, r.end_ns);
  return s;
}

/// A note when two parts lie far apart on the clock: further than 10 s and than ten times the
/// longest part's own span. Files of one run share one clock and overlap in time; such a gap
/// means files of different runs, or clocks that are not aligned.
std::optional<std::string> clock_gap_note(const std::vector<Trace>& parts) {
  std::vector<std::pair<std::pair<int64_t, int64_t>, const std::string*>> spans;
  int64_t longest = 0;
  for (const auto& p : parts)
    if (auto s = time_span(p)) {
      spans.push_back({*s, &p.source});
      longest = std::max(longest, s->second - s->first);
    }
  std::sort(spans.begin(), spans.end());
  for (std::size_t i = 1; i < spans.size(); ++i) {
    const int64_t gap = spans[i].first.first - spans[i - 1].first.second;
    if (gap > int64_t{10'000'000'000} && gap > 10 * longest)
      return fmt::format("the clocks of '{}' and '{}' are {:.1f} s apart, far more than either "
                         "file's span: files of different runs, or clocks not aligned (merged as "
                         "given)",
                         *spans[i - 1].second, *spans[i].second, static_cast<double>(gap) / 1e9);
  }
  return std::nullopt;
}

}  // namespace

Trace merge_traces(std::vector<Trace>&& parts) {
  std::vector<std::vector<KeptEvent>> kept(parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i) kept[i].swap(parts[i].kept);
  Trace out = merge_traces(static_cast<const std::vector<Trace>&>(parts));
  for (auto& k : kept) {
    if (out.kept.empty()) out.kept.swap(k);
    else out.kept.insert(out.kept.end(), std::make_move_iterator(k.begin()), std::make_move_iterator(k.end()));
    std::vector<KeptEvent>().swap(k);
  }
  return out;
}

Trace merge_traces(const std::vector<Trace>& parts) {
  Trace out;
  std::map<int, std::string> owner;
  std::set<std::tuple<int64_t, int, std::string>> seen_marks;
  for (const auto& p : parts) {
    std::set<int> mine;
    for (const auto& r : p.ranks) mine.insert(r.rank);
    for (const auto& k : p.kernels) mine.insert(k.rank);
    for (const auto& r : p.ranges) mine.insert(r.rank);
    for (int r : mine) {
      auto [it, fresh] = owner.emplace(r, p.source);
      if (!fresh)
        throw Error("rank " + std::to_string(r) + " is in both '" + it->second + "' and '" +
                    p.source + "' (a file given twice?)");
    }
    out.ranks.insert(out.ranks.end(), p.ranks.begin(), p.ranks.end());
    out.streams.insert(out.streams.end(), p.streams.begin(), p.streams.end());
    out.kernels.insert(out.kernels.end(), p.kernels.begin(), p.kernels.end());
    out.ranges.insert(out.ranges.end(), p.ranges.begin(), p.ranges.end());
    out.kept.insert(out.kept.end(), p.kept.begin(), p.kept.end());
    for (const auto& m : p.marks)  // a process-wide mark is in every rank file of its process
      if (seen_marks.insert({m.ts_ns, m.rank, m.name}).second) out.marks.push_back(m);
    out.dropped_records += p.dropped_records;
    for (const auto& n : p.notes) out.notes.push_back(n);
    out.source += (out.source.empty() ? "" : ", ") + p.source;
  }
  if (auto n = clock_gap_note(parts)) out.notes.push_back(*n);
  out.normalize();
  return out;
}

void fill_blocks_per_sm(Trace& t) {
  std::map<int, std::optional<DeviceLimits>> lim;
  for (const auto& r : t.ranks) {
    if (r.arch.empty()) continue;
    try {
      DeviceLimits d = find_architecture(r.arch);
      if (r.sm_count > 0) d.sm_count = r.sm_count;
      lim[r.rank] = d;
    } catch (const Error&) {
      // An architecture the model does not know: blocks per SM stay unknown.
    }
  }
  for (auto& k : t.kernels) {
    if (k.blocks_per_sm > 0 || k.is_copy()) continue;  // a copy occupies no SM
    auto it = lim.find(k.rank);
    if (it == lim.end() || !it->second || k.block.volume() <= 0) continue;
    Footprint fp;
    fp.threads = static_cast<int>(std::min<int64_t>(k.block.volume(), 1 << 20));
    fp.regs = k.registers;
    fp.static_smem = k.static_smem;
    fp.dynamic_smem = k.dynamic_smem;
    try {
      k.blocks_per_sm = occupancy(*it->second, fp).blocks_per_sm;
    } catch (const Error&) {
      // A footprint the model rejects (e.g. a vendor kernel's shared memory over the table's
      // limits): leave it unknown rather than guess.
    }
  }
}

}  // namespace cco::trace
