#include "trace/levers.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace cco::trace {
namespace {

std::string ms(int64_t ns) {
  return fmt::format("{:.2f}", static_cast<double>(ns) / 1e6);
}

}  // namespace

std::vector<Lever> ranked_levers(const Diagnosis& d, int64_t floor_ns) {
  std::vector<Lever> out;
  for (const auto& def : kBoundColumns) {
    if (!def.how) continue;  // what the step would be, not what a control can win
    Lever l{def.text, 0, -1, -1, def.how};
    for (const auto& r : d.ranks) {
      if (r.steps.empty()) continue;
      const StepParts& p = r.steps[r.typical];
      const int64_t b = lever_bounds(p).*(def.field);
      if (b > l.bound_ns) {
        l.bound_ns = b;
        l.rank = r.rank;
        l.peer = def.field == &LeverBounds::rank_skew_ns ? p.slowest_peer : -1;
      }
    }
    if (l.rank >= 0 && l.bound_ns >= floor_ns) out.push_back(std::move(l));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Lever& a, const Lever& b) { return a.bound_ns > b.bound_ns; });
  return out;
}

std::string levers_text(const std::vector<Lever>& levers) {
  std::string o;
  for (const auto& l : levers)
    o += fmt::format("{}{} <= {} ms (rank {}{}: {})", o.empty() ? "" : "; ", l.name, ms(l.bound_ns),
                     l.rank, l.peer >= 0 ? fmt::format(" waits for rank {}", l.peer) : "", l.how);
  return o;
}

}  // namespace cco::trace
