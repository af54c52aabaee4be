#include "trace/levers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace cco::trace {
namespace {

struct LeverDef {
  const char* name;
  int64_t LeverBounds::*field;
  const char* how;
};

// In the bounds table's order (report/diagnosis_text.cpp), each with what tries it.
constexpr std::array<LeverDef, 6> kLevers = {{
    {"priority/shaping", &LeverBounds::priority_shaping_ns,
     "cco run's default policy priority, or shape (cco tune -- CMD measures both)"},
    {"sm-budget/channels/CE", &LeverBounds::sm_budget_ns,
     "cco tune --candidates off,sm-target:-16@overlap,channels:8 -- CMD (not in its default "
     "candidates; copy engines: pair tuning only)"},
    {"scheduling", &LeverBounds::scheduling_ns,
     "the program's bucket size or prefetch (cco run --framework ddp.bucket_mb=N)"},
    {"rank_skew", &LeverBounds::rank_skew_ns,
     "not overlap: the awaited rank's host stalls, data loading or GPU"},
    {"copies/bucket-view", &LeverBounds::framework_copies_ns,
     "cco run --framework ddp.bucket_view (DDP)"},
    {"memory-traffic", &LeverBounds::memory_traffic_ns,
     "fewer bytes beside compute: zero-copy collectives (no cco control yet)"},
}};

std::string ms(int64_t ns) {
  return fmt::format("{:.2f}", static_cast<double>(ns) / 1e6);
}

}  // namespace

std::vector<Lever> ranked_levers(const Diagnosis& d, int64_t floor_ns) {
  std::vector<Lever> out;
  for (const auto& def : kLevers) {
    Lever l{def.name, 0, -1, -1, def.how};
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
