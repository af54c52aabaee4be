#include "trace/analysis.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "model/json_number.hpp"
#include "model/limits.hpp"
#include "model/schema.hpp"

namespace cco::trace {

using model::Error;
using nlohmann::json;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

// ---------------------------------------------------------------------------------------------
// Intervals
// ---------------------------------------------------------------------------------------------

std::vector<Interval> interval_union(std::vector<Interval> v) {
  std::erase_if(v, [](const Interval& i) { return i.end <= i.begin; });
  std::sort(v.begin(), v.end(),
            [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  std::vector<Interval> out;
  for (const auto& i : v) {
    if (!out.empty() && i.begin <= out.back().end)
      out.back().end = std::max(out.back().end, i.end);
    else
      out.push_back(i);
  }
  return out;
}

std::vector<Interval> interval_intersection(const std::vector<Interval>& a,
                                            const std::vector<Interval>& b) {
  std::vector<Interval> out;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t lo = std::max(a[i].begin, b[j].begin);
    const int64_t hi = std::min(a[i].end, b[j].end);
    if (lo < hi) out.push_back({lo, hi});
    if (a[i].end < b[j].end)
      ++i;
    else
      ++j;
  }
  return out;
}

std::vector<Interval> window_intersection(Interval w, const std::vector<Interval>& u) {
  std::vector<Interval> out;
  if (w.end <= w.begin) return out;
  // `u` is sorted and disjoint, so its ends are sorted too: the first that ends after w begins.
  auto it = std::upper_bound(u.begin(), u.end(), w.begin,
                             [](int64_t t, const Interval& i) { return t < i.end; });
  for (; it != u.end() && it->begin < w.end; ++it) {
    const int64_t lo = std::max(w.begin, it->begin), hi = std::min(w.end, it->end);
    if (lo < hi) out.push_back({lo, hi});
  }
  return out;
}

std::vector<Interval> interval_difference(const std::vector<Interval>& a,
                                          const std::vector<Interval>& b) {
  std::vector<Interval> out;
  std::size_t j = 0;
  for (auto cur : a) {
    while (j < b.size() && b[j].end <= cur.begin) ++j;
    std::size_t k = j;
    while (k < b.size() && b[k].begin < cur.end) {
      if (b[k].begin > cur.begin) out.push_back({cur.begin, b[k].begin});
      cur.begin = std::max(cur.begin, b[k].end);
      if (cur.begin >= cur.end) break;
      ++k;
    }
    if (cur.end > cur.begin) out.push_back(cur);
  }
  return out;
}

int64_t total_length(const std::vector<Interval>& v) {
  int64_t s = 0;
  for (const auto& i : v) s += i.length();
  return s;
}

// ---------------------------------------------------------------------------------------------
// Analysis
// ---------------------------------------------------------------------------------------------

namespace {

double efficiency_of(int64_t overlapped, int64_t comp, int64_t comm) {
  const int64_t shorter = std::min(comp, comm);
  return shorter > 0 ? static_cast<double>(overlapped) / static_cast<double>(shorter) : kNaN;
}

// Waiting for SMs: from the moment a communication kernel could run (launched, and its stream's
// previous kernel done) to its start, the parts during which compute kernels ran.
std::vector<CommWait> waits_of_rank(const Trace& t, int rank, int64_t lo, int64_t hi,
                                    const std::vector<Interval>& comp_u) {
  std::map<std::pair<int, int64_t>, std::vector<const KernelEvent*>> by_stream;
  for (const auto& k : t.kernels)
    if (k.rank == rank) by_stream[{k.device, k.stream}].push_back(&k);
  std::vector<CommWait> out;
  for (auto& [key, ks] : by_stream) {
    std::stable_sort(ks.begin(), ks.end(), [](const KernelEvent* x, const KernelEvent* y) {
      return x->start_ns < y->start_ns;
    });
    for (std::size_t i = 0; i < ks.size(); ++i) {
      const KernelEvent& k = *ks[i];
      // Copies on the copy engines take no SM: they never wait for one.
      if (k.category != KernelCategory::Communication || k.is_copy()) continue;
      const int64_t launch = k.launch_ns();
      int64_t ready;
      const char* method;
      if (launch > 0) {
        ready = launch;
        if (i > 0) ready = std::max(ready, ks[i - 1]->end_ns);
        method = "launch";
      } else if (i > 0) {
        ready = ks[i - 1]->end_ns;
        method = "stream-gap";
      } else {
        continue;  // first kernel of its stream, launch time unknown: no lower bound
      }
      const Interval w{std::max(ready, lo), std::min(k.start_ns, hi)};
      if (w.end <= w.begin) continue;
      for (const auto& piece : window_intersection(w, comp_u))
        out.push_back({piece.begin, piece.end, rank, k.stream, k.name, method});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const CommWait& a, const CommWait& b) { return a.begin_ns < b.begin_ns; });
  return out;
}

std::vector<Interval> compute_union(const Trace& t, int rank, int64_t lo, int64_t hi) {
  std::vector<Interval> v;
  for (const auto& k : t.kernels)
    if (k.rank == rank && k.category == KernelCategory::Compute)
      v.push_back({std::max(k.start_ns, lo), std::min(k.end_ns, hi)});
  return interval_union(std::move(v));
}

OverlapAnalysis analyze_rank(const Trace& t, int rank, const AnalysisOptions& opt) {
  const int64_t lo = opt.from_ns.value_or(std::numeric_limits<int64_t>::min());
  const int64_t hi = opt.to_ns.value_or(std::numeric_limits<int64_t>::max());
  OverlapAnalysis a;
  a.rank = rank;
  std::vector<Interval> comp, comm, all;
  std::set<std::pair<int, int64_t>> streams;
  bool first = true;
  for (const auto& k : t.kernels) {
    if (k.rank != rank) continue;
    if (a.device < 0) a.device = k.device;
    streams.insert({k.device, k.stream});
    const Interval iv{std::max(k.start_ns, lo), std::min(k.end_ns, hi)};
    if (iv.end < iv.begin || k.end_ns < lo || k.start_ns > hi) continue;
    if (k.category == KernelCategory::Communication) {
      ++a.comm_kernels;
      comm.push_back(iv);
    } else {
      ++a.compute_kernels;
      comp.push_back(iv);
    }
    all.push_back(iv);
    a.begin_ns = first ? iv.begin : std::min(a.begin_ns, iv.begin);
    a.end_ns = first ? iv.end : std::max(a.end_ns, iv.end);
    first = false;
  }
  if (a.device < 0) {
    for (const auto& r : t.ranks)
      if (r.rank == rank) a.device = r.device;
  }
  a.streams = streams.size();
  const auto comp_u = interval_union(comp), comm_u = interval_union(comm);
  a.span_ns = a.end_ns - a.begin_ns;
  a.busy_ns = total_length(interval_union(all));
  a.compute_busy_ns = total_length(comp_u);
  a.comm_busy_ns = total_length(comm_u);
  a.overlapped_ns = total_length(interval_intersection(comp_u, comm_u));
  a.exposed_comm_ns = a.comm_busy_ns - a.overlapped_ns;
  a.efficiency = efficiency_of(a.overlapped_ns, a.compute_busy_ns, a.comm_busy_ns);
  a.overlap_ratio = a.comm_busy_ns > 0 ? static_cast<double>(a.overlapped_ns) /
                                             static_cast<double>(a.comm_busy_ns)
                                       : kNaN;

  for (const auto& w : waits_of_rank(t, rank, lo, hi, comp_u)) {
    a.comm_wait_ns += w.length();
    if (w.length() > a.longest_comm_wait.length()) a.longest_comm_wait = w;
  }
  return a;
}

json wait_json(const CommWait& w) {
  if (w.length() <= 0) return nullptr;
  return {{"begin_ns", w.begin_ns}, {"end_ns", w.end_ns}, {"length_ns", w.length()},
          {"rank", w.rank},         {"stream", w.stream}, {"kernel", w.kernel},
          {"method", w.method}};
}

json overlap_json(const OverlapAnalysis& a) {
  json j;
  j["rank"] = a.rank >= 0 ? json(a.rank) : json("all");
  j["device"] = a.device >= 0 ? json(a.device) : json(nullptr);
  j["compute_kernels"] = a.compute_kernels;
  j["comm_kernels"] = a.comm_kernels;
  j["streams"] = a.streams;
  j["begin_ns"] = a.begin_ns;
  j["end_ns"] = a.end_ns;
  j["span_ns"] = a.span_ns;
  j["busy_ns"] = a.busy_ns;
  j["compute_busy_ns"] = a.compute_busy_ns;
  j["comm_busy_ns"] = a.comm_busy_ns;
  j["overlapped_ns"] = a.overlapped_ns;
  j["exposed_comm_ns"] = a.exposed_comm_ns;
  j["comm_wait_ns"] = a.comm_wait_ns;
  j["efficiency"] = model::number_or_null(a.efficiency);
  j["overlap_ratio"] = model::number_or_null(a.overlap_ratio);
  j["longest_comm_wait"] = wait_json(a.longest_comm_wait);
  return j;
}

}  // namespace

std::vector<CommWait> communication_waits(const Trace& t, int rank, const AnalysisOptions& opt) {
  const int64_t lo = opt.from_ns.value_or(std::numeric_limits<int64_t>::min());
  const int64_t hi = opt.to_ns.value_or(std::numeric_limits<int64_t>::max());
  return waits_of_rank(t, rank, lo, hi, compute_union(t, rank, lo, hi));
}

TraceAnalysis analyze(const Trace& t, const AnalysisOptions& opt) {
  if (opt.from_ns && opt.to_ns && *opt.to_ns <= *opt.from_ns)
    throw Error("the analysis window is empty (to <= from)");
  TraceAnalysis out;
  out.dropped_records = t.dropped_records;
  std::set<int> ranks;
  for (const auto& r : t.ranks) ranks.insert(r.rank);
  for (const auto& k : t.kernels) ranks.insert(k.rank);
  OverlapAnalysis& m = out.all;
  int64_t shorter_sum = 0;
  bool first = true;
  for (int r : ranks) {
    auto a = analyze_rank(t, r, opt);
    out.kernels += a.compute_kernels + a.comm_kernels;
    m.compute_kernels += a.compute_kernels;
    m.comm_kernels += a.comm_kernels;
    m.streams += a.streams;
    m.busy_ns += a.busy_ns;
    m.compute_busy_ns += a.compute_busy_ns;
    m.comm_busy_ns += a.comm_busy_ns;
    m.overlapped_ns += a.overlapped_ns;
    m.exposed_comm_ns += a.exposed_comm_ns;
    m.comm_wait_ns += a.comm_wait_ns;
    shorter_sum += std::min(a.compute_busy_ns, a.comm_busy_ns);
    if (a.compute_kernels + a.comm_kernels > 0) {
      m.begin_ns = first ? a.begin_ns : std::min(m.begin_ns, a.begin_ns);
      m.end_ns = first ? a.end_ns : std::max(m.end_ns, a.end_ns);
      first = false;
    }
    if (a.longest_comm_wait.length() > m.longest_comm_wait.length())
      m.longest_comm_wait = a.longest_comm_wait;
    out.ranks.push_back(std::move(a));
  }
  m.span_ns = m.end_ns - m.begin_ns;
  m.efficiency = shorter_sum > 0
                     ? static_cast<double>(m.overlapped_ns) / static_cast<double>(shorter_sum)
                     : kNaN;
  m.overlap_ratio = m.comm_busy_ns > 0 ? static_cast<double>(m.overlapped_ns) /
                                             static_cast<double>(m.comm_busy_ns)
                                       : kNaN;
  return out;
}

json analysis_to_json(const TraceAnalysis& a) {
  json j;
  model::stamp_schema(j, model::kTraceAnalysisSchema);
  j["kernels"] = a.kernels;
  j["dropped_records"] = a.dropped_records;
  json ranks = json::array();
  for (const auto& r : a.ranks) ranks.push_back(overlap_json(r));
  j["ranks"] = ranks;
  j["all"] = overlap_json(a.all);
  return j;
}

std::vector<KernelGroup> kernel_breakdown(const Trace& t, const AnalysisOptions& opt) {
  const int64_t lo = opt.from_ns.value_or(std::numeric_limits<int64_t>::min());
  const int64_t hi = opt.to_ns.value_or(std::numeric_limits<int64_t>::max());
  std::map<std::string, std::pair<KernelGroup, std::vector<int64_t>>> by;
  for (const auto& k : t.kernels) {
    if (k.start_ns >= hi || k.end_ns < lo) continue;  // outside the window
    const int64_t d = std::max<int64_t>(0, std::min(k.end_ns, hi) - std::max(k.start_ns, lo));
    // One group per name and library call (a GEMM kernel per shape); '\x1f' never occurs in either.
    std::string key = k.name;
    if (!k.call.empty()) key.append(1, '\x1f').append(k.call);
    auto& [g, times] = by[key];
    g.name = k.name;
    g.call = k.call;
    g.category = k.category;
    g.copy_engine = k.is_copy();
    ++g.count;
    g.total_ns += d;
    g.bytes += k.bytes;
    times.push_back(d);
  }
  std::vector<KernelGroup> out;
  for (auto& [name, gt] : by) {
    auto& [g, times] = gt;
    std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2), times.end());
    g.median_ns = times[times.size() / 2];
    out.push_back(std::move(g));
  }
  std::stable_sort(out.begin(), out.end(), [](const KernelGroup& a, const KernelGroup& b) {
    return a.total_ns > b.total_ns;
  });
  return out;
}

nlohmann::json breakdown_to_json(const std::vector<KernelGroup>& groups) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& g : groups) {
    a.push_back({{"name", g.name},
                 {"kind", to_string(g.category)},
                 {"on", g.copy_engine ? "copy engines" : "SMs"},
                 {"count", g.count},
                 {"total_ns", g.total_ns},
                 {"median_ns", g.median_ns},
                 {"bytes", g.bytes}});
    if (!g.call.empty()) a.back()["call"] = g.call;
  }
  return a;
}

}  // namespace cco::trace
