// The levers of a diagnosed step, largest bound first (issue 43 item 3): each lever the user has
// that the diagnosis bounds (LeverBounds), its bound over the ranks (a step is as slow as its
// slowest rank), and how to try it. Printed after the bounds table and in the JSON, so the first
// lever named is the one that can win the most; none here is measured (cco run --compare and
// cco tune -- measure them). GPU-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/diagnosis.hpp"

namespace cco::trace {

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
