// The steps of a trace (trace/diagnosis.hpp, find_steps): host-side ranges (NVTX, profiler
// steps), marks, a step's first collective, or the repeating unit of the communication kernels,
// each step's GPU window drawn from the kernels its host time holds. GPU-free.
#include "trace/step_find.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "model/limits.hpp"
#include "steps/period.hpp"

namespace cco::trace {

namespace detail {

// Kernels of one rank, by start.
KernelsByRank kernels_by_rank(const Trace& t) {
  std::map<int, std::vector<const KernelEvent*>> out;
  for (const auto& k : t.kernels) out[k.rank].push_back(&k);
  for (auto& [r, v] : out)
    std::stable_sort(v.begin(), v.end(), [](const KernelEvent* a, const KernelEvent* b) {
      return a->start_ns < b->start_ns;
    });
  return out;
}

}  // namespace detail

namespace {

using detail::KernelsByRank;

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

bool glob(const std::string& pattern, const std::string& text) {
  return ::fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}


// When the host asked for a kernel: the launch call (CUPTI's queued timestamp), else the time it
// was pushed to the GPU (submitted, which lags the call when the launch queue is full: an
// optimizer's kernels of one step were submitted up to 20 ms after the step's range closed, in a
// traced DDP run). Steps of host time (ranges, marks, collectives called) take kernels by it.
int64_t host_ns(const KernelEvent& k) {
  return k.queued_ns > 0 ? k.queued_ns : k.submitted_ns;
}

// Every kernel has a host time (copies have none: CUPTI's copy records carry no launch times).
bool all_launch_times(const std::vector<const KernelEvent*>& ks) {
  bool any = false;
  for (const auto* k : ks) {
    if (k->is_copy()) continue;
    if (host_ns(*k) <= 0) return false;
    any = true;
  }
  return any;
}

// A rank's events indexed once, so that each step's window costs a binary search and its own
// kernels, not a pass over the whole trace.
struct HostIndex {
  bool by_launch = false;
  std::vector<std::pair<int64_t, const KernelEvent*>> by_host;  // kernels by host time
  std::vector<const KernelEvent*> by_start;                     // every event by start
  std::vector<const KernelEvent*> copies;                       // copies by start
};

HostIndex index_of(const std::vector<const KernelEvent*>& ks) {
  HostIndex x;
  x.by_launch = all_launch_times(ks);
  x.by_start = ks;  // already by start
  for (const auto* k : ks) {
    if (k->is_copy())
      x.copies.push_back(k);
    else if (x.by_launch)
      x.by_host.push_back({host_ns(*k), k});
  }
  std::stable_sort(x.by_host.begin(), x.by_host.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  return x;
}

// The GPU window of the kernels whose host time (launch, or start without launch times) lies in
// [lo, hi): [earliest start, latest end]; nullopt when none.
std::optional<Interval> gpu_window(const HostIndex& x, int64_t lo, int64_t hi) {
  std::optional<Interval> w;
  auto take = [&](const KernelEvent* k) {
    w = w ? Interval{std::min(w->begin, k->start_ns), std::max(w->end, k->end_ns)}
          : Interval{k->start_ns, k->end_ns};
  };
  if (x.by_launch) {
    auto it = std::lower_bound(x.by_host.begin(), x.by_host.end(), lo,
                               [](const auto& e, int64_t v) { return e.first < v; });
    for (; it != x.by_host.end() && it->first < hi; ++it) take(it->second);
    // A copy (a collective on the copy engines; no host time) that starts inside the kernels'
    // window belongs to the step; the step lasts until it ends.
    if (w) {
      auto c = std::lower_bound(x.copies.begin(), x.copies.end(), w->begin,
                                [](const KernelEvent* k, int64_t v) { return k->start_ns < v; });
      for (; c != x.copies.end() && (*c)->start_ns < w->end; ++c)
        w->end = std::max(w->end, (*c)->end_ns);
    }
  } else {
    auto it = std::lower_bound(x.by_start.begin(), x.by_start.end(), lo,
                               [](const KernelEvent* k, int64_t v) { return k->start_ns < v; });
    for (; it != x.by_start.end() && (*it)->start_ns < hi; ++it) take(*it);
  }
  return w;
}

// Steps from host-side ranges (NVTX, or a profiler's CPU annotation) per rank.
// The number PyTorch's profiler gives a step ("ProfilerStep#551" -> 551), else -1.
int64_t program_step_of(const std::string& name) {
  const std::string head = "ProfilerStep#";
  if (name.rfind(head, 0) != 0 || name.size() == head.size() || name.size() > head.size() + 18) return -1;
  int64_t n = 0;
  for (std::size_t i = head.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    n = n * 10 + (name[i] - '0');
  }
  return n;
}

std::map<int, std::vector<StepWindow>> steps_from_ranges(
    const std::map<int, std::vector<const NvtxRange*>>& ranges,
    const std::map<int, std::vector<const KernelEvent*>>& ks, bool gpu_side,
    std::vector<std::string>& notes) {
  std::map<int, std::vector<StepWindow>> out;
  bool by_start_note = false;
  for (const auto& [rank, rs] : ranges) {
    auto kit = ks.find(rank);
    if (kit == ks.end()) continue;
    const HostIndex hx = index_of(kit->second);
    const bool by_launch = hx.by_launch;
    // The latest end of the kernels launched before each time (launch order, running maximum):
    // a step that starts while the GPU is idle starts on the GPU when its range starts (as an
    // event the program records there would), not at its first kernel.
    std::vector<std::pair<int64_t, int64_t>> launched;  // (launch, max end so far)
    if (by_launch) {
      for (const auto& [h, k] : hx.by_host) launched.push_back({h, k->end_ns});
      for (std::size_t i = 1; i < launched.size(); ++i)
        launched[i].second = std::max(launched[i].second, launched[i - 1].second);
    }
    auto busy_until = [&](int64_t t) {
      auto it = std::lower_bound(launched.begin(), launched.end(), std::make_pair(t, kMin));
      return it == launched.begin() ? kMin : std::prev(it)->second;
    };
    auto& steps = out[rank];
    for (std::size_t i = 0; i < rs.size(); ++i) {
      const NvtxRange& r = *rs[i];
      std::optional<Interval> w;
      if (gpu_side) {
        w = Interval{r.start_ns, r.end_ns};
      } else if (by_launch) {
        w = gpu_window(hx, r.start_ns, r.end_ns);
        if (w) w->begin = std::clamp(std::max(r.start_ns, busy_until(r.start_ns)), kMin, w->begin);
      } else {
        // Without launch times a kernel belongs to the range its start follows (the GPU runs
        // behind the host, so until the next range starts).
        const int64_t hi = i + 1 < rs.size() ? rs[i + 1]->start_ns : kMax;
        w = gpu_window(hx, r.start_ns, hi);
        by_start_note = true;
      }
      if (w && w->end > w->begin) {
        steps.push_back({static_cast<int64_t>(i), w->begin, w->end});
        steps.back().program_step = program_step_of(r.name);
      }
    }
  }
  if (by_start_note)
    notes.push_back("the trace has no launch timestamps: kernels were given to the step range "
                    "their start follows, which may move kernels between steps when the host "
                    "runs ahead");
  return out;
}

// Steps from host-side boundaries (marks, or a step's first collective): step k holds the kernels
// launched from boundary k to boundary k+1; windows tile the GPU timeline from the first start of
// each step's kernels to the next's. The last boundary opens a step whose end is unknown: it only
// ends the step before it.
std::vector<StepWindow> steps_from_boundaries(const std::vector<const KernelEvent*>& ks,
                                              const std::vector<int64_t>& bounds) {
  const HostIndex hx = index_of(ks);
  std::vector<int64_t> starts;
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    const auto w = gpu_window(hx, bounds[i], i + 1 < bounds.size() ? bounds[i + 1] : kMax);
    starts.push_back(w ? w->begin : kMin);
  }
  std::vector<StepWindow> out;
  for (std::size_t i = 0; i + 1 < starts.size(); ++i)
    if (starts[i] != kMin && starts[i + 1] > starts[i])
      out.push_back({static_cast<int64_t>(i), starts[i], starts[i + 1]});
  return out;
}

std::map<int, std::vector<StepWindow>> steps_from_collectives(
    const std::map<int, std::vector<const KernelEvent*>>& ks, int* period, bool* relocked) {
  std::map<int, std::vector<StepWindow>> out;
  for (const auto& [rank, v] : ks) {
    const bool by_launch = all_launch_times(v);
    std::vector<const KernelEvent*> comm;
    for (const auto* k : v)  // NCCL's kernels (copies have no host time to order them by)
      if (k->category == KernelCategory::Communication && !k->is_copy()) comm.push_back(k);
    std::stable_sort(comm.begin(), comm.end(), [&](const KernelEvent* a, const KernelEvent* b) {
      return by_launch ? host_ns(*a) < host_ns(*b) : a->start_ns < b->start_ns;
    });
    steps::PeriodDetector det;
    std::vector<int64_t> bounds;
    for (const auto* k : comm) {
      const auto f = det.feed(steps::signature(k->name, static_cast<uint64_t>(k->grid.volume()),
                                               k->block.x, k->block.y, k->block.z, 0));
      if (f.relocked) {
        if (!bounds.empty()) *relocked = true;
        bounds.clear();
      }
      if (f.boundary) bounds.push_back(by_launch ? host_ns(*k) : k->start_ns);
    }
    *period = std::max(*period, det.period());
    if (bounds.size() >= 2) out[rank] = steps_from_boundaries(v, bounds);
  }
  return out;
}

// Ranges per rank matching one of the globs, the first glob that gives at least 2 ranges on
// some rank; ranges of one rank that overlap an earlier kept one are left out (nested names).
std::map<int, std::vector<const NvtxRange*>> ranges_named(const Trace& t, const std::string& g,
                                                          bool gpu_side) {
  std::map<int, std::vector<const NvtxRange*>> out;
  for (const auto& r : t.ranges) {
    if ((r.domain == "kineto.gpu") != gpu_side) continue;
    if (!glob(g, r.name)) continue;
    auto& v = out[r.rank];
    if (!v.empty() && r.start_ns < v.back()->end_ns) continue;  // nested in the previous one
    v.push_back(&r);
  }
  return out;
}

std::size_t most(const std::map<int, std::vector<const NvtxRange*>>& m) {
  std::size_t n = 0;
  for (const auto& [r, v] : m) n = std::max(n, v.size());
  return n;
}

}  // namespace

StepSet find_steps(const Trace& t, const StepOptions& o) {
  return detail::find_steps_in(t, o, detail::kernels_by_rank(t));
}

namespace detail {

StepSet find_steps_in(const Trace& t, const StepOptions& o, const KernelsByRank& ks) {
  StepSet s;
  std::map<int, std::vector<StepWindow>> found;
  auto try_ranges = [&](const std::string& g, bool gpu_side, const char* source,
                        const std::string& what) {
    auto rs = ranges_named(t, g, gpu_side);
    if (most(rs) < 2) return false;
    auto st = steps_from_ranges(rs, ks, gpu_side, s.notes);
    std::size_t n = 0;
    for (const auto& [r, v] : st) n = std::max(n, v.size());
    if (n < 2) return false;
    found = std::move(st);
    s.source = source;
    s.detail = what;
    return true;
  };
  const std::string& src = o.source;
  if (src != "auto" && src != "nvtx" && src != "marks" && src != "collectives" && src != "none" &&
      src != "profiler")
    throw model::Error("steps: expected auto, nvtx, profiler, marks, collectives or none, got '" +
                       src + "'");
  bool done = o.config.has_value();  // a configuration: only the library's marks say which
  if (!done && (src == "nvtx" || (src == "auto" && !o.name.empty()))) {
    const std::string g = o.name.empty() ? "*step*" : o.name;
    done = try_ranges(g, false, "nvtx", "NVTX ranges '" + g + "'");
    if (!done && src == "nvtx")
      s.notes.push_back("no NVTX ranges named '" + g + "' (at least 2 per rank are needed)");
  }
  if (!done && (src == "profiler" || src == "auto")) {
    done = try_ranges("ProfilerStep#*", true, "profiler",
                      "PyTorch profiler steps 'ProfilerStep#N' (GPU side)") ||
           try_ranges("ProfilerStep#*", false, "profiler",
                      "PyTorch profiler steps 'ProfilerStep#N'");
    if (!done && src == "profiler") s.notes.push_back("no 'ProfilerStep#N' annotations");
  }
  if (!done && src == "auto" && o.name.empty())
    done = try_ranges("train_step", false, "nvtx", "NVTX ranges 'train_step'");
  // Marks: the program's (a name given), else the preload library's step marks ("cco step,
  // epoch E": only the latest epoch, the steps of the period the library found last).
  auto try_marks = [&](const std::string& g, bool latest_epoch, const std::string& what) {
    // The library's marks: "cco step, epoch E, config C" (older traces: "cco step, epoch E").
    auto epoch_of = [](const std::string& n) { return n.substr(0, n.find(", config ")); };
    auto config_of = [](const std::string& n) {
      const auto p = n.find(", config ");
      // Unknown, or a warm-up step of the rotation (config 0, but not one of its rounds).
      if (p == std::string::npos || n.find(", warm-up") != std::string::npos) return -1;
      try {
        return std::stoi(n.substr(p + 9));
      } catch (const std::exception&) {
        return -1;
      }
    };
    std::string epoch;
    if (latest_epoch) {
      int64_t last = kMin;
      for (const auto& m : t.marks)
        if (glob(g, m.name) && m.ts_ns >= last) {
          last = m.ts_ns;
          epoch = epoch_of(m.name);
        }
    }
    std::map<int, std::vector<std::pair<int64_t, int>>> marks;  // rank -> (time, config)
    for (const auto& m : t.marks) {
      if (!glob(g, m.name) || (latest_epoch && epoch_of(m.name) != epoch)) continue;
      const int c = latest_epoch ? config_of(m.name) : -1;
      if (m.rank >= 0)
        marks[m.rank].push_back({m.ts_ns, c});
      else
        for (const auto& [r, v] : ks) marks[r].push_back({m.ts_ns, c});
    }
    std::map<int, std::vector<StepWindow>> st;
    for (auto& [r, v] : marks) {
      std::sort(v.begin(), v.end());
      std::vector<int64_t> b;
      for (const auto& x : v) b.push_back(x.first);
      auto kit = ks.find(r);
      if (kit == ks.end() || b.size() < 2) continue;
      auto w = steps_from_boundaries(kit->second, b);
      for (auto& x : w) x.config = v[static_cast<std::size_t>(x.index)].second;
      st[r] = std::move(w);
    }
    std::size_t n = 0;
    for (const auto& [r, v] : st) n = std::max(n, v.size());
    if (n < 1) return false;
    found = std::move(st);
    s.source = "marks";
    s.detail = what;
    return true;
  };
  if (o.config && !try_marks("cco step, epoch *", true, "the preload library's step marks")) {
    // Nothing else can say which configuration a step ran under.
    s.notes.push_back("no step marks of the preload library (cco run --trace): the steps of one "
                      "configuration cannot be told apart");
    s.source = "none";
    s.detail = "no steps of configuration " + std::to_string(*o.config);
    return s;
  }
  done = done || o.config.has_value();
  if (!done && (src == "marks" || (src == "auto" && !o.name.empty()))) {
    const std::string g = o.name.empty() ? "cco step, epoch *" : o.name;
    done = try_marks(g, o.name.empty(), "marks '" + g + "'");
    if (!done && src == "marks")
      s.notes.push_back("no marks named '" + g + "' (at least 2 per rank are needed)");
  }
  if (!done && src == "auto" && o.name.empty())
    done = try_marks("cco step, epoch *", true,
                     "the preload library's step marks (cco run --trace: the period of the "
                     "program's collectives, or its cco_step_mark calls)");
  if (!done && (src == "collectives" || src == "auto")) {
    int period = 0;
    bool relocked = false;
    auto st = steps_from_collectives(ks, &period, &relocked);
    std::size_t n = 0;
    for (const auto& [r, v] : st) n = std::max(n, v.size());
    if (n >= 1) {
      found = std::move(st);
      s.source = "collectives";
      s.detail = fmt::format("the repeating unit of the communication kernels ({} per step)",
                             period);
      if (relocked)
        s.notes.push_back("the sequence of communication kernels changed its period during the "
                          "run: steps are those of the last period");
      done = true;
    } else if (src == "collectives") {
      s.notes.push_back("the communication kernels do not repeat (3 periods in a row are needed)");
    }
  }
  if (!done) {
    if (src == "auto")
      s.notes.push_back("no steps found (no step ranges 'ProfilerStep#N' or 'train_step', no "
                        "repeating communication): the whole window is analysed as one step");
    s.source = "none";
    s.detail = "the whole window";
    for (const auto& [r, v] : ks) {
      int64_t b = kMax, e = kMin;
      for (const auto* k : v) {
        b = std::min(b, std::max(k->start_ns, o.window.from_ns.value_or(kMin)));
        e = std::max(e, std::min(k->end_ns, o.window.to_ns.value_or(kMax)));
      }
      if (e > b) found[r] = {{0, b, e}};
    }
    s.found = found.empty() ? 0 : 1;
    s.ranks = std::move(found);
    return s;
  }
  std::set<int> configs;  // the configurations the marks name (before the window cuts any)
  for (const auto& [r, v] : found)
    for (const auto& w : v)
      if (w.config >= 0) configs.insert(w.config);
  // Inside the window only.
  const int64_t lo = o.window.from_ns.value_or(kMin), hi = o.window.to_ns.value_or(kMax);
  for (auto& [r, v] : found)
    std::erase_if(v, [&](const StepWindow& w) { return w.begin_ns < lo || w.end_ns > hi; });
  if (o.config) {
    bool any = false;
    for (auto& [r, v] : found) {
      std::erase_if(v, [&](const StepWindow& w) { return w.config != *o.config; });
      any = any || !v.empty();
    }
    s.detail += fmt::format(", the steps under configuration {}", *o.config);
    if (!any && !configs.empty()) {
      s.notes.push_back(
          configs.count(*o.config)
              ? fmt::format("no steps of configuration {} in the window", *o.config)
              : fmt::format("no steps of configuration {}: the marks name configuration{} {}",
                            *o.config, configs.size() > 1 ? "s" : "", fmt::join(configs, ", ")));
      found.clear();  // no rank has a step: the diagnosis says why, not "no kernels"
    }
  }
  // Every rank: the same number of steps (ranks run the same steps; the fewest count).
  std::size_t n = kMax;
  std::size_t nmax = 0;
  for (const auto& [r, v] : found) {
    n = std::min(n, v.size());
    nmax = std::max(nmax, v.size());
  }
  if (found.empty()) n = 0;
  if (n != nmax)
    s.notes.push_back(fmt::format("ranks found different numbers of steps ({} to {}): the first "
                                  "{} of each are compared",
                                  n, nmax, n));
  for (auto& [r, v] : found) v.resize(std::min(v.size(), n));
  s.found = n;
  s.warmup = o.warmup ? std::clamp(*o.warmup, 0, static_cast<int>(n))
                      : (n >= 6 ? 3 : n >= 3 ? 1 : 0);
  for (auto& [r, v] : found) v.erase(v.begin(), v.begin() + s.warmup);
  if (o.warmup && *o.warmup >= static_cast<int>(n) && n > 0)
    s.notes.push_back(fmt::format("--warmup-steps {} leaves none of the {} steps", *o.warmup, n));
  s.ranks = std::move(found);
  return s;
}

}  // namespace detail

}  // namespace cco::trace
