// What the step diagnosis shares with the finding of steps (step_find.cpp): a trace's kernels
// per rank, and the steps found from them. Internal to the trace core; the API is
// trace/diagnosis.hpp's find_steps.
#pragma once

#include <map>
#include <vector>

#include "trace/diagnosis.hpp"

namespace cco::trace::detail {

using KernelsByRank = std::map<int, std::vector<const KernelEvent*>>;

/// The trace's kernels (compute, communication and copies) per rank, by start.
KernelsByRank kernels_by_rank(const Trace& t);

/// find_steps with the kernels per rank already drawn (the diagnosis draws them once).
StepSet find_steps_in(const Trace& t, const StepOptions& o, const KernelsByRank& ks);

}  // namespace cco::trace::detail
