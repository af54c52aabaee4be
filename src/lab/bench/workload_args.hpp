// The arguments of `cco bench --workload` (GPU-free, so --validate works anywhere): the workload
// flags taken out of the argument list before the pair options are parsed.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "workload/workload.hpp"

namespace cco::bench {

struct StepArgs {
  std::string workload;   ///< --workload FILE (empty: not a workload run)
  bool validate = false;  ///< --validate
  std::vector<std::pair<std::string, std::string>> params;  ///< --param NAME=VALUE (repeatable)
  int64_t gpu_memory = 0;         ///< --gpu-memory SIZE (validate: memory to check against)
  int ngpus = 0;                  ///< -g/--ngpus as given (also left in `rest`)
  bool check = true;              ///< -c/--check as given (also left in `rest`)
  std::string json_path;          ///< --json as given (also left in `rest`): --validate's output
  std::vector<std::string> rest;  ///< the other arguments in order (args[0] kept)
  /// Load options for --validate: nranks = ngpus (2 when 0), overrides, gpu_memory, check.
  workload::StepLoadOptions load_options() const;
};

/// Takes --workload, --validate, --param and --gpu-memory out of `cco bench` arguments (args[0]
/// is "bench"), parsed with CLI11 from the flag table (bench/flags.hpp); reads -g, -c and --json
/// without removing them. Throws Error for a missing or malformed value (in the house wording,
/// bench::cli_error_text), or --validate / --param / --gpu-memory without --workload.
StepArgs split_step_args(const std::vector<std::string>& args);

}  // namespace cco::bench
