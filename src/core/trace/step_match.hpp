// Whether an alone trace's steps are the same program's steps as a trace's (cco report --alone):
// set against each other, their step times split into compute slowed, compute only here, exposed
// communication and idle; steps of another unit (the alone run found no step, a layer's period,
// another program) would give a split that means nothing (issue 43 item 5).
//
// The test is the compute kernels a step runs, by name: per kept step, on one rank, the count of
// each compute kernel (copies and collectives left out) over the kept steps' span. Two steps
// match when nearly all of the alone step's kernels are in this trace's step (alone_in_here >=
// 0.9) and they make at least half of it (here_in_alone >= 0.5: this trace may add its own
// kernels, DDP's bucket copies, but not run twice the work).
#pragma once

#include <cstddef>
#include <string>

#include "trace/diagnosis.hpp"
#include "trace/format.hpp"

namespace cco::trace {

struct StepMatch {
  double here_kernels = 0;   ///< compute kernels per kept step here
  double alone_kernels = 0;  ///< ... in the alone trace
  double here_in_alone = 0;  ///< share of this trace's step kernels that the alone step runs
  double alone_in_here = 0;  ///< share of the alone step's kernels that this trace's step runs
  bool matched = false;
  std::string why;  ///< when not matched: one plain clause
};

inline constexpr double kAloneInHereMin = 0.9;
inline constexpr double kHereInAloneMin = 0.5;

/// The steps of `rank` in `here` (found as `hs`) against that rank's in `alone` (found as `as`).
StepMatch match_steps(const Trace& here, const StepSet& hs, const Trace& alone, const StepSet& as,
                      int rank);

/// Every rank kept in both, matched: "" when all match (or none is in both), else why the first
/// that does not ("rank R: ...").
std::string steps_mismatch(const Trace& here, const StepSet& hs, const Trace& alone,
                           const StepSet& as);

}  // namespace cco::trace
