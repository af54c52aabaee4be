#include "trace/step_match.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

namespace cco::trace {

namespace {

// Compute kernels per kept step of `rank`, by name: those that start inside a kept step's window
// (the kept steps may be every other one: one configuration's); *steps their number (0: none).
std::map<std::string, double> per_step(const Trace& t, const StepSet& s, int rank, std::size_t* steps) {
  std::map<std::string, double> out;
  *steps = 0;
  const auto it = s.ranks.find(rank);
  if (it == s.ranks.end() || it->second.empty()) return out;
  std::vector<const StepWindow*> ws;
  for (const auto& w : it->second) ws.push_back(&w);
  std::sort(ws.begin(), ws.end(),
            [](const StepWindow* a, const StepWindow* b) { return a->begin_ns < b->begin_ns; });
  *steps = ws.size();
  for (const auto& k : t.kernels) {
    if (k.rank != rank || k.category != KernelCategory::Compute || k.is_copy()) continue;
    // The last window that begins at or before the kernel's start: is the start inside it?
    const auto after = std::upper_bound(ws.begin(), ws.end(), k.start_ns,
                                        [](int64_t v, const StepWindow* w) { return v < w->begin_ns; });
    if (after != ws.begin() && k.start_ns < (*(after - 1))->end_ns) out[k.name] += 1;
  }
  for (auto& [name, n] : out) n /= static_cast<double>(*steps);
  return out;
}

std::string share(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f%%", 100 * v);
  return b;
}

}  // namespace

StepMatch match_steps(const Trace& here, const StepSet& hs, const Trace& alone, const StepSet& as,
                      int rank) {
  StepMatch m;
  std::size_t nh = 0, na = 0;
  const auto h = per_step(here, hs, rank, &nh);
  const auto a = per_step(alone, as, rank, &na);
  double common = 0;
  for (const auto& [name, n] : h) {
    m.here_kernels += n;
    if (const auto f = a.find(name); f != a.end()) common += std::min(n, f->second);
  }
  for (const auto& [name, n] : a) m.alone_kernels += n;
  if (nh == 0 || na == 0 || m.here_kernels <= 0 || m.alone_kernels <= 0) {
    m.why = "no compute kernels in the kept steps of one of them";
    return m;
  }
  m.here_in_alone = common / m.here_kernels;
  m.alone_in_here = common / m.alone_kernels;
  m.matched = m.alone_in_here >= kAloneInHereMin && m.here_in_alone >= kHereInAloneMin;
  if (!m.matched) {
    char counts[96];
    std::snprintf(counts, sizeof counts, "%.0f compute kernels per step here, %.0f there",
                  m.here_kernels, m.alone_kernels);
    m.why = std::string(counts) + "; " + share(m.here_in_alone) + " of this trace's step runs in " +
            "its step and " + share(m.alone_in_here) + " of its step here";
  }
  return m;
}

std::string steps_mismatch(const Trace& here, const StepSet& hs, const Trace& alone,
                           const StepSet& as) {
  for (const auto& [rank, windows] : hs.ranks) {
    if (windows.empty() || !as.ranks.count(rank)) continue;
    const StepMatch m = match_steps(here, hs, alone, as, rank);
    if (!m.matched) return "rank " + std::to_string(rank) + ": " + m.why;
  }
  return "";
}

}  // namespace cco::trace
