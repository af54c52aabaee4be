// `cco tune --workload FILE`: measures the search space of tune/workload_space.hpp for a training
// step on GPUs in the rounds of tune/search.hpp (every candidate screened with a few samples, the
// neighbour climb, then the best few side by side with seq, concurrent, priority and the model's
// default, verified), picks the fastest median, writes the plan, and caches the result per
// devices, versions, expanded step and space.
#pragma once

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <string>
#include <vector>

#include "bench/workload_bench.hpp"
#include "tune/tune.hpp"
#include "tune/workload_space.hpp"

namespace cco::tune {

struct WorkloadTuneOptions : TunerOptions {
  /// The workload (--workload, --param) and the step flags: -g, -n (final round), -w, -c,
  /// --nccl-* (the run's own communicator), -q (no progress lines).
  bench::StepOptions step;
  WorkloadSpaceOptions space;
};

/// The plan is workload_plan_json()'s, the table format_step_tried()'s.
using WorkloadTuneResult = TunerResult;

/// Loads the workload for -g ranks (every visible GPU when 0), answers from the cache when it
/// holds this key (unless retune), else screens every candidate (run_step with -c 0 and
/// screen_iters samples), then measures the finalists with -n samples and -c verification, picks
/// the fastest median (concurrent is always a finalist) and caches the plan. Progress lines go to
/// `progress` unless -q. Runs one process with a thread per GPU, like `cco bench --workload`.
/// Throws NoGpu without a GPU, UsageError or workload::StepError for bad input (also when started
/// under a launcher of several processes), std::runtime_error when the final round has wrong
/// elements (no plan is made), rt::Error on a failed GPU call.
WorkloadTuneResult run_tune_workload(const WorkloadTuneOptions& o, std::ostream& progress);

}  // namespace cco::tune
