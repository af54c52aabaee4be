// The levers of a diagnosed step, largest bound first (issue 43 item 3): each lever the user has
// that the diagnosis bounds (LeverBounds), its bound over the ranks (a step is as slow as its
// slowest rank), and how to try it. Printed after the bounds table and in the JSON, so the first
// lever named is the one that can win the most; none here is measured (cco run --compare and
// cco tune -- measure them). GPU-free.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "trace/diagnosis.hpp"

namespace cco::trace {

/// A step's bounds (LeverBounds), spelled once for every output: the key under the JSON's
/// "bounds_ns", the CSV column (ms), the heading of the text and Markdown tables (a lever's name),
/// the field, and for a lever how to try it (nullptr: not a lever but what the step would be, the
/// all-hidden and ideal steps). In the tables' order, which breaks ties between levers.
struct BoundColumn {
  const char* json;
  const char* csv;
  const char* text;
  int64_t LeverBounds::*field;
  const char* how;
};
inline constexpr std::array<BoundColumn, 8> kBoundColumns = {{
    {"priority_shaping", "bound_priority_shaping_ms", "priority/shaping",
     &LeverBounds::priority_shaping_ns,
     "cco run's default policy priority, or shape (cco tune -- CMD measures both)"},
    {"sm_budget_channels_copy_engines", "bound_sm_budget_channels_copy_engines_ms",
     "sm-budget/channels/CE", &LeverBounds::sm_budget_ns,
     "cco tune --candidates off,sm-target:-16@overlap,channels:8 -- CMD (not in its default "
     "candidates; copy engines: pair tuning only)"},
    {"scheduling", "bound_scheduling_ms", "scheduling", &LeverBounds::scheduling_ns,
     "the program's bucket size or prefetch (cco run --framework ddp.bucket_mb=N)"},
    {"rank_skew", "bound_rank_skew_ms", "rank_skew", &LeverBounds::rank_skew_ns,
     "not overlap: the awaited rank's host stalls, data loading or GPU"},
    {"step_all_hidden", "step_all_hidden_ms", "all_hidden", &LeverBounds::all_hidden_ns, nullptr},
    {"step_ideal", "step_ideal_ms", "ideal", &LeverBounds::ideal_ns, nullptr},
    {"framework_copies", "bound_framework_copies_ms", "copies/bucket-view",
     &LeverBounds::framework_copies_ns, "cco run --framework ddp.bucket_view (DDP)"},
    {"memory_traffic", "bound_memory_traffic_ms", "memory-traffic", &LeverBounds::memory_traffic_ns,
     "fewer bytes beside compute: zero-copy collectives (no cco control yet)"},
}};

struct Lever {
  std::string name;   ///< as the bounds table names it ("copies/bucket-view", ...)
  int64_t bound_ns = 0;  ///< the largest over the ranks' typical steps
  int rank = -1;      ///< the rank of that bound
  int peer = -1;      ///< rank_skew: the rank it waits for (its typical step's slowest peer)
  std::string how;    ///< what to run or change to try it
};

/// The levers whose bound is at least `floor_ns` in some rank's typical step, largest bound
/// first (ties: the table's order). Not levers: the all-hidden and ideal steps (what the step
/// would be, not what a control can win).
std::vector<Lever> ranked_levers(const Diagnosis& d, int64_t floor_ns = 50'000);

/// "copies/bucket-view <= 4.70 ms (rank 0: cco run --framework ddp.bucket_view), ...": the
/// levers in that order, "" when none.
std::string levers_text(const std::vector<Lever>& levers);

}  // namespace cco::trace
