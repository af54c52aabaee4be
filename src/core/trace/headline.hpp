// The first line of a step's diagnosis (issue 45 item 5): at most 30 words, in the user's terms,
// naming the largest part of the step beyond its compute alone and the one thing to try first
// for it. The diagnosis' full sentence (bounds per control) follows it. GPU-free.
#pragma once

#include <string>

#include "trace/diagnosis.hpp"

namespace cco::trace {

/// The headline of step `p` (a rank's typical step; its slowest_peer names the rank waited for).
std::string headline(const StepParts& p);

/// Words in `s` (runs of non-blanks): what the 30-word limit counts.
std::size_t word_count(const std::string& s);

}  // namespace cco::trace
