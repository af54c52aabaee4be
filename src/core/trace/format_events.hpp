// Reading one event of a trace (trace/format.hpp), shared by the two readers of format_read.cpp
// (nlohmann's parser) and format_fast.cpp (json_lite's): every field checked, one line naming the
// file and the event on any problem. Internal to src/core/trace; templates over the JSON type
// (nlohmann::json or lite::Value, which offer the same read-only interface). GPU-free.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/limits.hpp"
#include "trace/format.hpp"
#include "trace/json_lite.hpp"

namespace cco::trace::events {

using model::Error;
using nlohmann::json;

// An empty object of the reader's JSON type: an event's missing "args".
template <class J>
const J& empty_object();
template <>
inline const json& empty_object<json>() {
  static const json e = json::object();
  return e;
}
template <>
inline const lite::Value& empty_object<lite::Value>() {
  static lite::Doc d;
  static const bool parsed = [] {
    const char text[] = "{}";
    d.parse(text, text + 2);
    return true;
  }();
  (void)parsed;
  return d.root();
}

// Where an event is, for messages: "traceEvents[i]", then " (its name)" once read. Spelled only
// when a message needs it (building it for every event cost a tenth of the reading).
struct EventWhere {
  std::size_t index = 0;
  const std::string* name = nullptr;
  std::string str() const {
    std::string s = "traceEvents[" + std::to_string(index) + "]";
    if (name) s += " (" + (name->size() > 60 ? name->substr(0, 57) + "..." : *name) + ")";
    return s;
  }
};
inline std::string operator+(const EventWhere& w, const char* s) { return w.str() + s; }

class Reader {
 public:
  explicit Reader(std::string source) : src_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& what) const { throw Error(src_ + ": " + what); }

  template <class J, class W>
  const J& need(const J& o, const char* key, const W& where) const {
    auto it = o.find(key);
    if (it == o.end()) fail(where + ": missing \"" + key + "\"");
    return *it;
  }
  template <class J, class W>
  double number(const J& v, const W& where, const char* key) const {
    if (!v.is_number()) fail(where + ": \"" + key + "\" is not a number");
    const double d = v.template get<double>();
    if (!std::isfinite(d)) fail(where + ": \"" + key + "\" is not finite");
    return d;
  }
  template <class J, class W>
  int64_t integer(const J& v, const W& where, const char* key) const {
    if (v.is_number_integer()) return v.template get<int64_t>();
    if (v.is_number_unsigned()) {
      const auto u = v.template get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        fail(where + ": \"" + key + "\" is out of range");
      return static_cast<int64_t>(u);
    }
    if (v.is_number_float()) {
      const double d = v.template get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e18)
        return static_cast<int64_t>(d);
    }
    fail(where + ": \"" + key + "\" is not an integer");
  }
  template <class J, class W>
  int small_int(const J& v, const W& where, const char* key) const {
    const int64_t x = integer(v, where, key);
    if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max())
      fail(where + ": \"" + key + "\" is out of range");
    return static_cast<int>(x);
  }
  template <class J, class W>
  std::optional<int64_t> opt_integer(const J& o, const char* key,
                                     const W& where) const {
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return std::nullopt;
    return integer(*it, where, key);
  }
  template <class J, class W>
  std::optional<int> opt_int(const J& o, const char* key, const W& where) const {
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return std::nullopt;
    return small_int(*it, where, key);
  }
  /// A time in ns, bounded to |t| < 2^62 (146 years) so that the difference of any two (below
  /// 2^63), and the analysis's sums and spans, fit in int64 (a fuzzed trace once overflowed them).
  static constexpr int64_t kMaxTimeNs = int64_t{1} << 62;
  template <class W>
  int64_t time_ns(int64_t t, const W& where, const char* key) const {
    if (t >= kMaxTimeNs || t <= -kMaxTimeNs)
      fail(where + ": \"" + key + "\" is out of range (2^62 ns or more)");
    return t;
  }
  template <class J, class W>
  std::optional<int64_t> opt_time_ns(const J& o, const char* key,
                                     const W& where) const {
    auto v = opt_integer(o, key, where);
    if (v) time_ns(*v, where, key);
    return v;
  }
  /// origin + us microseconds, in ns, checked as time_ns.
  template <class W>
  int64_t at_us(int64_t origin, double us, const W& where, const char* key) const {
    const double off = us * 1000.0;
    const auto lim = static_cast<double>(kMaxTimeNs);
    if (!(off < lim && off > -lim))
      fail(where + ": \"" + key + "\" is out of range (more than 2^62 ns from the origin)");
    // Both within 2^62: the sum fits; checked as a time after (integer arithmetic: exact).
    return time_ns(origin + std::llround(off), where, key);
  }
  template <class J, class W>
  std::string opt_string(const J& o, const char* key, const W& where) const {
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return {};
    if (!it->is_string()) fail(where + ": \"" + key + "\" is not a string");
    return it->template get<std::string>();
  }
  template <class J, class W>
  Dim3 opt_dim(const J& o, const char* key, const W& where) const {
    Dim3 d;
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return d;
    if (it->is_array() && it->size() == 3) {
      d.x = small_int((*it)[0], where, key);
      d.y = small_int((*it)[1], where, key);
      d.z = small_int((*it)[2], where, key);
    } else if (it->is_number()) {
      d.x = small_int(*it, where, key);
    } else {
      fail(where + ": \"" + std::string(key) + "\" is not [x, y, z]");
    }
    if (d.x < 0 || d.y < 0 || d.z < 0) fail(where + ": \"" + key + "\" is negative");
    return d;
  }

 private:
  std::string src_;
};

// Maps a foreign category to ours; nullopt: not a GPU kernel event. A profiler's copies and
// memsets (cat gpu_memcpy, gpu_memset) are GPU work too, classified by name like kernels.
inline std::optional<KernelCategory> category_of(const std::string& cat, const std::string& name,
                                          bool ours) {
  if (cat == "compute") return KernelCategory::Compute;
  if (cat == "communication") return KernelCategory::Communication;
  if (!ours && (cat == "kernel" || cat == "Kernel" || cat == "cuda_kernel" ||
                cat == "gpu_memcpy" || cat == "gpu_memset"))
    return classify_kernel(name);
  return std::nullopt;
}

// The copy kind of a profiler's memcpy or memset event by its name ("Memcpy HtoD (Pageable ->
// Device)" -> "HtoD", "Memset (Device)" -> "Memset"; a direction not known: "Memcpy").
inline std::string copy_kind_of(const std::string& cat, const std::string& name) {
  if (cat == "gpu_memset") return "Memset";
  const std::string head = "Memcpy ";
  if (name.rfind(head, 0) == 0) {
    const std::string dir = name.substr(head.size(), name.find(' ', head.size()) - head.size());
    if (is_copy_kind(dir)) return dir;
  }
  return "Memcpy";
}

// A profiler's host call that launched GPU work (cat cuda_runtime or cuda_driver, with the
// correlation id its kernel, copy or memset carries).
inline bool is_launch_call(const std::string& cat) {
  return cat == "cuda_runtime" || cat == "cuda_driver";
}

// The rank, tid and time span of a complete ("ph" "X") event, kernel or NVTX range alike: exact
// ns from args start_ns/end_ns when both are there, else ts/dur (us) from the file's origin.
struct EventSpan {
  int rank = 0;
  int64_t tid = 0;
  int64_t start_ns = 0, end_ns = 0;
};

template <class J, class W>
EventSpan read_span(const Reader& rd, const J& e, const J& args, int64_t origin, const W& where) {
  EventSpan sp;
  sp.rank = rd.small_int(rd.need(e, "pid", where), where, "pid");
  sp.tid = rd.integer(rd.need(e, "tid", where), where, "tid");
  const double ts = rd.number(rd.need(e, "ts", where), where, "ts");
  const double dur = rd.number(rd.need(e, "dur", where), where, "dur");
  if (dur < 0) rd.fail(where + ": negative duration " + fmt::format("{}", dur) + " us");
  auto start = rd.opt_time_ns(args, "start_ns", where);
  auto end = rd.opt_time_ns(args, "end_ns", where);
  if (start && end) {
    sp.start_ns = *start;
    sp.end_ns = *end;
  } else {
    sp.start_ns = rd.at_us(origin, ts, where, "ts");
    sp.end_ns = rd.at_us(sp.start_ns, dur, where, "dur");
  }
  if (sp.end_ns < sp.start_ns)
    rd.fail(where + ": ends before it starts (negative duration " +
            std::to_string(sp.end_ns - sp.start_ns) + " ns)");
  return sp;
}

// An NVTX range event (ph "X", cat "nvtx"): the same checks as a kernel's times.
template <class J, class W>
NvtxRange read_nvtx_range(const Reader& rd, const J& e, const J& args,
                          const std::string& name, int64_t origin, const W& where) {
  NvtxRange r;
  r.name = name;
  const EventSpan sp = read_span(rd, e, args, origin, where);
  r.rank = sp.rank;
  r.start_ns = sp.start_ns;
  r.end_ns = sp.end_ns;
  const int64_t tid = sp.tid;
  const int64_t thread = rd.opt_integer(args, "thread", where)
                             .value_or(tid >= kOldNvtxTidBase ? tid - kOldNvtxTidBase
                                       : tid >= kNvtxTidBase  ? tid - kNvtxTidBase
                                                              : tid);
  if (thread < 0) rd.fail(where + ": \"thread\" is negative");
  r.thread = static_cast<uint64_t>(thread);
  r.domain = rd.opt_string(args, "domain", where);
  return r;
}


/// otherData.ccoverlap of our own traces: checks the schema and version, reads the dropped
/// records, notes, ranks and streams into `t`; returns the time origin (ns).
inline int64_t read_our_data(Reader& rd, const json& meta, Trace& t) {
  const std::string where = "otherData.ccoverlap";
  const std::string schema = rd.opt_string(meta, "schema", where);
  if (schema != kTraceSchema)
    rd.fail("wrong schema \"" + schema + "\" (expected \"" + kTraceSchema + "\")");
  const std::string ver = rd.opt_string(meta, "schema_version", where);
  const std::string major = ver.substr(0, ver.find('.'));
  const std::string ours = std::string(kTraceSchemaVersion);
  if (major != ours.substr(0, ours.find('.')))
    rd.fail("schema version \"" + ver + "\" is not supported (this cco reads " + ours + ")");
  const int64_t origin = rd.opt_time_ns(meta, "time_origin_ns", where).value_or(0);
  if (auto d = rd.opt_integer(meta, "dropped_records", where)) {
    if (*d < 0) rd.fail(where + ": \"dropped_records\" is negative");
    t.dropped_records = static_cast<uint64_t>(*d);
  }
  if (auto n = meta.find("notes"); n != meta.end() && !n->is_null()) {
    if (!n->is_array()) rd.fail(where + ": \"notes\" is not an array");
    for (const auto& x : *n) {
      if (!x.is_string()) rd.fail(where + ": a note is not a string");
      t.notes.push_back(x.get<std::string>());
    }
  }
  if (auto r = meta.find("ranks"); r != meta.end() && !r->is_null()) {
    if (!r->is_array()) rd.fail(where + ": \"ranks\" is not an array");
    for (std::size_t i = 0; i < r->size(); ++i) {
      const auto& x = (*r)[i];
      const std::string w = where + ".ranks[" + std::to_string(i) + "]";
      if (!x.is_object()) rd.fail(w + ": not an object");
      RankInfo ri;
      ri.rank = rd.small_int(rd.need(x, "rank", w), w, "rank");
      ri.device = rd.opt_int(x, "device", w).value_or(ri.rank);
      ri.device_name = rd.opt_string(x, "device_name", w);
      ri.arch = rd.opt_string(x, "arch", w);
      ri.sm_count = rd.opt_int(x, "sm_count", w).value_or(0);  // 0: not known
      if (ri.sm_count < 0) rd.fail(w + ": sm_count must not be negative, got " + std::to_string(ri.sm_count));
      if (auto bw = x.find("mem_bandwidth"); bw != x.end() && !bw->is_null())
        ri.mem_bandwidth = rd.number(*bw, w, "mem_bandwidth");  // bytes/s; 0: not known
      if (ri.mem_bandwidth < 0) rd.fail(w + ": mem_bandwidth must not be negative");
      ri.host = rd.opt_string(x, "host", w);
      ri.pid = rd.opt_integer(x, "pid", w).value_or(0);
      for (const auto& o : t.ranks)
        if (o.rank == ri.rank) rd.fail(w + ": rank " + std::to_string(ri.rank) + " twice");
      t.ranks.push_back(ri);
    }
  }
  if (auto s = meta.find("streams"); s != meta.end() && !s->is_null()) {
    if (!s->is_array()) rd.fail(where + ": \"streams\" is not an array");
    for (std::size_t i = 0; i < s->size(); ++i) {
      const auto& x = (*s)[i];
      const std::string w = where + ".streams[" + std::to_string(i) + "]";
      if (!x.is_object()) rd.fail(w + ": not an object");
      StreamInfo si;
      si.rank = rd.small_int(rd.need(x, "rank", w), w, "rank");
      si.device = rd.opt_int(x, "device", w).value_or(si.rank);
      si.stream = rd.integer(rd.need(x, "stream", w), w, "stream");
      si.priority = rd.opt_int(x, "priority", w);
      si.label = rd.opt_string(x, "label", w);
      t.streams.push_back(si);
    }
  }
  return origin;
}

/// An instant event of category "mark" (ours): its name, time and rank (-1: every rank).
template <class J, class W>
Mark read_mark(Reader& rd, const J& e, int64_t origin, const W& where) {
  Mark m;
  m.name = rd.opt_string(e, "name", where);
  const auto a = e.find("args");
  const J& args = a != e.end() && a->is_object() ? *a : empty_object<J>();
  if (auto ns = rd.opt_time_ns(args, "ts_ns", where))
    m.ts_ns = *ns;
  else
    m.ts_ns = rd.at_us(origin, rd.number(rd.need(e, "ts", where), where, "ts"), where, "ts");
  m.rank = rd.opt_int(args, "rank", where).value_or(-1);
  return m;
}

/// A kernel's span, rank, device, stream and launch figures (ours, or a profiler's names for
/// them); the caller sets its name and category. `file_rank`: the rank a profiler's file says
/// it holds (distributedInfo.rank), which replaces the event's pid as the rank.
template <class J, class W>
KernelEvent read_kernel(Reader& rd, const J& e, const J& args, int64_t origin,
                        const W& where, const std::map<int, int>& device_of_rank,
                        std::optional<int> file_rank) {
  KernelEvent k;
  const EventSpan sp = read_span(rd, e, args, origin, where);
  // A profiler trace of one rank (distributedInfo.rank) uses the device as its pid.
  k.rank = file_rank.value_or(sp.rank);
  k.start_ns = sp.start_ns;
  k.end_ns = sp.end_ns;
  const int64_t tid = sp.tid;
  auto dev_it = device_of_rank.find(k.rank);
  k.device = rd.opt_int(args, "device", where)
                 .value_or(dev_it != device_of_rank.end() ? dev_it->second : sp.rank);
  k.stream = rd.opt_integer(args, "stream", where).value_or(tid);
  k.priority = rd.opt_int(args, "priority", where);
  k.grid = rd.opt_dim(args, "grid", where);
  k.block = rd.opt_dim(args, "block", where);
  k.registers = rd.opt_int(args, "registers", where)
                    .value_or(rd.opt_int(args, "registers per thread", where).value_or(0));
  k.static_smem = rd.opt_integer(args, "static_smem", where)
                      .value_or(rd.opt_integer(args, "shared memory", where).value_or(0));
  k.dynamic_smem = rd.opt_integer(args, "dynamic_smem", where).value_or(0);
  k.blocks_per_sm = rd.opt_int(args, "blocks_per_sm", where).value_or(0);
  k.queued_ns = rd.opt_time_ns(args, "queued_ns", where).value_or(0);
  k.submitted_ns = rd.opt_time_ns(args, "submitted_ns", where).value_or(0);
  k.correlation_id = static_cast<uint64_t>(
      std::max<int64_t>(0, rd.opt_integer(args, "correlation", where).value_or(0)));
  k.call = rd.opt_string(args, "call", where);
  const std::string copy = rd.opt_string(args, "copy", where);
  if (!copy.empty()) {
    if (!is_copy_kind(copy))
      rd.fail(where + ": \"copy\" is \"" + copy.substr(0, 20) + "\" (expected " + kCopyKinds + ")");
    k.copy = copy;
    k.bytes = rd.opt_integer(args, "bytes", where).value_or(0);
    k.src_device = rd.opt_int(args, "src_device", where).value_or(-1);
    k.dst_device = rd.opt_int(args, "dst_device", where).value_or(-1);
    if (k.bytes < 0) rd.fail(where + ": negative \"bytes\"");
  }
  if (k.registers < 0 || k.static_smem < 0 || k.dynamic_smem < 0 || k.blocks_per_sm < 0)
    rd.fail(where + ": negative registers, shared memory or blocks per SM");
  return k;
}


// The events of "traceEvents", one at a time (the DOM reader hands them over in a loop, the
// streaming one as each is parsed): each read into `t` by what the file is (ours, with its time
// origin and ranks from otherData.ccoverlap, or another tool's, with the rank its
// distributedInfo names).
class EventReader {
 public:
  /// `keep`: another tool's events that the trace holds in no other form go to t.kept
  /// (ReadOptions::keep_events); the streaming reader gives each event's text first (raw_text).
  EventReader(Reader& rd, Trace& t, const json* meta, const json* distributed, bool keep = false)
      : rd_(rd), t_(t), keep_(keep) {
    ours_ = meta != nullptr;
    origin_ = meta ? read_our_data(rd_, *meta, t_) : 0;
    // A PyTorch profiler (kineto) trace names its rank in distributedInfo; its events' pid is
    // the device. Our own traces carry the rank in every event's pid.
    if (!meta && distributed && distributed->is_object())
      if (auto r = distributed->find("rank"); r != distributed->end() && !r->is_null())
        file_rank_ = rd_.small_int(*r, std::string("distributedInfo"), "rank");
    for (const auto& r : t_.ranks) device_of_rank_[r.rank] = r.device;
  }

  template <class J>
  void event(const J& e, std::size_t i) {
    EventWhere where{i, nullptr};
    if (!e.is_object()) rd_.fail(where + ": not an object");
    // Every trace event has its phase; a file of events without one is not a trace (a gzip of
    // 240 MiB of "{}," once took 8.66 GB and 23 s to say so).
    const std::string ph = rd_.opt_string(e, "ph", where);
    if (ph.empty()) rd_.fail(where + ": no \"ph\" (the event's phase, which every trace event has)");
    if (ph == "i" && ours_ && rd_.opt_string(e, "cat", where) == "mark") {
      t_.marks.push_back(read_mark(rd_, e, origin_, where));
      return;
    }
    if (ph != "X") {  // metadata, other instants, counters, flows: not kernels
      keep(e, i);
      return;
    }
    const std::string name = rd_.opt_string(e, "name", where);
    where.name = &name;
    const std::string cat_name = rd_.opt_string(e, "cat", where);
    const J* args = &empty_object<J>();
    if (cat_name == "nvtx") {
      if (auto a = e.find("args"); a != e.end() && !a->is_null()) {
        if (!a->is_object()) rd_.fail(where + ": \"args\" is not an object");
        args = &*a;
      }
      t_.ranges.push_back(read_nvtx_range(rd_, e, *args, name, origin_, where));
      return;
    }
    // A PyTorch profiler's steps ("ProfilerStep#N"): its GPU-side annotation (the step's span on
    // the device, pid = device) and its CPU-side one; read as ranges in the domains "kineto.gpu"
    // and "kineto" for the step diagnosis (diagnosis.hpp). Best effort: an odd one is skipped.
    if (!ours_ && (cat_name == "gpu_user_annotation" || cat_name == "user_annotation") &&
        name.rfind("ProfilerStep#", 0) == 0) {
      try {
        const EventSpan sp = read_span(rd_, e, empty_object<J>(), origin_, where);
        NvtxRange r;
        r.name = name;
        r.domain = cat_name == "gpu_user_annotation" ? "kineto.gpu" : "kineto";
        r.rank = file_rank_.value_or(cat_name == "gpu_user_annotation" ? sp.rank : 0);
        r.start_ns = sp.start_ns;
        r.end_ns = sp.end_ns;
        if (cat_name == "user_annotation") r.thread = static_cast<uint64_t>(std::max<int64_t>(0, sp.tid));
        kineto_ranges_.push_back(t_.ranges.size());
        t_.ranges.push_back(std::move(r));
      } catch (const Error&) {
        keep(e, i);
      }
      return;
    }
    // A profiler's launch call: its time is the launch time of the GPU work of its correlation
    // id (finish()), which makes that work's wait exact (analysis.hpp: launch_ns).
    if (!ours_ && is_launch_call(cat_name)) {
      if (auto a = e.find("args"); a != e.end() && a->is_object())
        if (auto c = a->find("correlation"); c != a->end() && c->is_number_integer()) {
          const int64_t id = c->template get<int64_t>();
          if (id > 0)
            launch_at_[static_cast<uint64_t>(id)] = read_span(rd_, e, empty_object<J>(), origin_, where).start_ns;
        }
      keep(e, i);  // the call itself (its kernel takes only its time)
      return;
    }
    // Ours since 2026-11-28: "kernel" or "gpu_memcpy", the kind in args.kind; before, the kind
    // was the category.
    const bool ours_gpu = ours_ && (cat_name == "kernel" || cat_name == "gpu_memcpy" || cat_name == "gpu_memset");
    auto cat = ours_gpu ? std::optional<KernelCategory>(KernelCategory::Compute)
                        : category_of(cat_name, name, ours_);
    if (!cat) {  // CPU ops and the like in foreign traces
      keep(e, i);
      return;
    }
    if (auto a = e.find("args"); a != e.end() && !a->is_null()) {
      if (!a->is_object()) rd_.fail(where + ": \"args\" is not an object");
      args = &*a;
    }
    if (ours_gpu) {
      const std::string kind = rd_.opt_string(*args, "kind", where);
      cat = kind == "communication" ? KernelCategory::Communication
            : kind == "compute"     ? KernelCategory::Compute
                                    : classify_kernel(name);
    }
    KernelEvent k = read_kernel(rd_, e, *args, origin_, where, device_of_rank_, file_rank_);
    k.name = name;
    k.category = *cat;
    if (!ours_ && (cat_name == "gpu_memcpy" || cat_name == "gpu_memset")) {
      k.copy = copy_kind_of(cat_name, name);
      k.bytes = std::max<int64_t>(0, rd_.opt_integer(*args, "bytes", where).value_or(0));
    }
    add_kernel(std::move(k));
  }

  // A profiler's distributedInfo met after the events (PyTorch writes it last): the rank it names
  // given to what was read as if it had come first (its kernels and profiler steps). Only before
  // any rank came from one.
  void late_distributed(const json& distributed) {
    if (ours_ || file_rank_ || !distributed.is_object()) return;
    if (auto r = distributed.find("rank"); r != distributed.end() && !r->is_null())
      file_rank_ = rd_.small_int(*r, std::string("distributedInfo"), "rank");
    if (!file_rank_) return;
    for (auto& c : chunks_)
      for (auto& k : c) k.rank = *file_rank_;
    for (const std::size_t i : kineto_ranges_) t_.ranges[i].rank = *file_rank_;
  }
  bool ours() const { return ours_; }
  /// The streaming reader: the text of the event it hands over next (kept events are made of it).
  void raw_text(std::string_view text) { raw_ = text; }

  // After the last event: the kernels into the trace; a profiler's GPU work takes its launch
  // call's time as its launch time (the calls may come before or after the work in the file).
  void finish() {
    gather();
    place_kept();
    if (ours_ || launch_at_.empty()) return;
    for (auto& k : t_.kernels) {
      if (k.queued_ns > 0 || k.correlation_id == 0) continue;
      if (auto it = launch_at_.find(k.correlation_id); it != launch_at_.end() && it->second <= k.start_ns)
        k.queued_ns = it->second;
    }
  }

 private:
  Reader& rd_;
  Trace& t_;
  bool ours_ = false;
  int64_t origin_ = 0;
  std::optional<int> file_rank_;
  std::map<int, int> device_of_rank_;
  std::unordered_map<uint64_t, int64_t> launch_at_;  // correlation id -> launch call's start (ns)
  std::vector<std::size_t> kineto_ranges_;  // the profiler steps read, in t_.ranges
  bool keep_ = false;
  std::string_view raw_;                   // the current event's text (streaming reader)
  std::vector<std::pair<std::optional<int64_t>, KeptEvent>> kept_;  // with the event's own pid
  std::size_t kept_text_ = 0;  // bytes of kept text so far (kKeptTextLimit)

  // Another tool's event the trace holds in no other form, kept whole when asked (t_.kept): its
  // text, with what the writer needs (its pid for the rank, its time, whether it is a launch
  // call). Its time is checked as every event's is (a ts far out of range is refused).
  template <class J>
  void keep(const J& e, std::size_t i) {
    if (!keep_ || ours_) return;
    KeptEvent k;
    if constexpr (std::is_same_v<J, json>) {
      k.text = e.dump();
    } else {
      if (raw_.empty()) return;
      k.text.assign(raw_);
    }
    kept_text_ += k.text.size();
    if (kept_text_ > kKeptTextLimit)
      rd_.fail("more than " + std::to_string(kKeptTextLimit >> 30) +
               " GiB of events besides the kernels: too many to keep for a merge");
    const EventWhere where{i, nullptr};
    std::optional<int64_t> pid;
    if (auto p = e.find("pid"); p != e.end() && p->is_number_integer()) pid = p->template get<int64_t>();
    if (auto ts = e.find("ts"); ts != e.end() && ts->is_number())
      k.ts_ns = rd_.at_us(0, rd_.number(*ts, where, "ts"), where, "ts");
    if (auto c = e.find("cat"); c != e.end() && c->is_string())
      k.launch_call = is_launch_call(c->template get<std::string>());
    kept_.emplace_back(pid, std::move(k));
  }
  // The kept events' rank, once the file's is known (distributedInfo may come last): the file's
  // rank; without one, the event's pid where it is a rank of the kernels (a profiler's GPU rows:
  // pid = device), else the lowest rank of the file (its CPU rows: pid = the OS's).
  void place_kept() {
    if (kept_.empty()) return;
    std::set<int> ranks;
    for (const auto& k : t_.kernels) ranks.insert(k.rank);
    for (const auto& r : t_.ranges) ranks.insert(r.rank);
    const int lowest = ranks.empty() ? 0 : *ranks.begin();
    t_.kept.reserve(t_.kept.size() + kept_.size());
    for (auto& [pid, k] : kept_) {
      k.rank = file_rank_ ? *file_rank_
               : pid && *pid >= 0 && *pid <= INT32_MAX && ranks.count(static_cast<int>(*pid))
                   ? static_cast<int>(*pid)
                   : lowest;
      t_.kept.push_back(std::move(k));
    }
    kept_.clear();
  }
  // The kernels read, in pieces moved into t_.kernels at the end (gather): a vector that doubles
  // as it grows holds its old and new buffers at once (10M kernels of 264 bytes: 4.4 GB at the
  // last doubling); a piece is larger than glibc's largest mmap threshold (32 MiB), so each is
  // its own mapping, given back as soon as it is moved.
  static constexpr std::size_t kPiece = std::size_t{1} << 18;
  std::vector<std::vector<KernelEvent>> chunks_;
  void add_kernel(KernelEvent&& k) {
    if (chunks_.empty() || chunks_.back().size() == kPiece) {
      chunks_.emplace_back();
      chunks_.back().reserve(kPiece);
    }
    chunks_.back().push_back(std::move(k));
  }
  void gather() {
    std::size_t n = t_.kernels.size();
    for (const auto& c : chunks_) n += c.size();
    t_.kernels.reserve(n);
    for (auto& c : chunks_) {
      for (auto& k : c) t_.kernels.push_back(std::move(k));
      std::vector<KernelEvent>().swap(c);
    }
    chunks_.clear();
  }
};

// The top level's checks, before any event: an object, not another schema; otherData.ccoverlap
// (nullptr: none) and distributedInfo (nullptr: none) of `j`.
inline const json* our_meta(const Reader& rd, const json& j) {
  if (auto od = j.find("otherData"); od != j.end() && od->is_object()) {
    if (auto c = od->find("ccoverlap"); c != od->end()) {
      if (!c->is_object()) rd.fail("\"otherData\".\"ccoverlap\" is not an object");
      return &*c;
    }
  }
  return nullptr;
}
inline void check_top(const Reader& rd, const json& j) {
  if (!j.is_object()) rd.fail("not a trace: expected a JSON object with \"traceEvents\"");
  if (auto s = j.find("schema"); s != j.end() && s->is_string() && *s != kTraceSchema)
    rd.fail("not a trace: schema is \"" + s->get<std::string>() + "\", expected \"" + kTraceSchema +
            "\" (Chrome trace JSON with \"traceEvents\")");
}
inline const json* distributed_info(const json& j) {
  auto d = j.find("distributedInfo");
  return d != j.end() && d->is_object() ? &*d : nullptr;
}

}  // namespace cco::trace::events
