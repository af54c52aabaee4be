// cco tune --framework-candidate SPEC ... -- CMD: framework controls (docs/FRAMEWORK.md), which
// cannot switch between steps, searched by whole runs of the program: every candidate (the
// baseline, no framework control, first) runs in alternating rounds (A B B A), each run under
// the same policy with its steps recorded, and steps/whole_runs decides from the step files. The
// plan holds the policy and the winner's framework controls. Decided by cco alone, so every rank
// of every later run gets the same settings.
#pragma once

#include <string>
#include <vector>

#include "model/framework.hpp"

namespace cco::cli {

struct FrameworkSearchOptions {
  std::vector<model::FrameworkSettings> candidates;  ///< [0]: the baseline (empty)
  std::string policy = "priority";  ///< every run's policy, and the plan's
  long warmup = 5;                  ///< steps left out at the start of each run
  int rounds = 2;
  std::string steps_out;            ///< a folder per run inside (run-1, run-2, ...)
  std::string out;                  ///< the plan
  std::string lib;                  ///< --lib
  std::vector<std::string> command;
};

/// Runs the search; prints each run's line (stderr) and the table (stdout); writes the plan.
/// Returns 0, the program's exit status when a run failed (the search stops there), or 3 when
/// no decision could be made.
int framework_search_main(const FrameworkSearchOptions& o);

/// A candidate's name in reports: its controls as --framework writes them, "(none)" for none.
std::string candidate_name(const model::FrameworkSettings& s);

}  // namespace cco::cli
