// `cco tune`: measures the search space of tune/space.hpp on GPUs in rounds (a short screening of
// every candidate, a screening of the neighbours of the best few -- one step in one control,
// tune::neighbours -- then the best few side by side with seq and concurrent), picks the
// fastest, writes the plan, and caches the result per device, versions and workload.
#pragma once

#include <iosfwd>
#include <string>

#include "bench/options.hpp"
#include "tune/cache.hpp"
#include "tune/space.hpp"

namespace cco::tune {

/// What both tuners take besides the workload and its space (TuneOptions, WorkloadTuneOptions).
struct TunerOptions {
  int screen_iters = 6;   ///< samples per candidate in the screening round
  int top = 6;            ///< screened candidates kept for the final round (plus references)
  double budget_s = 110;  ///< wall-clock budget; the final round shrinks when it runs short
  std::string cache_dir;  ///< "" = $CCO_CACHE_DIR, $XDG_CACHE_HOME/ccoverlap, ~/.cache/ccoverlap
  bool use_cache = true;
  bool retune = false;  ///< measure even when the cache has a result
};

struct TuneOptions : TunerOptions {
  bench::Options bench;  ///< the workload (one size), and -n for the final round
  SpaceOptions space;
  std::string plan_path;  ///< where to write the plan ("" = not written)
  std::vector<std::string> argv;
};

/// What both tuners return (TuneResult, WorkloadTuneResult).
struct TunerResult {
  nlohmann::json plan;  ///< plan_json() or workload_plan_json() of the choice
  bool from_cache = false;
  std::string cache_file;  ///< "" when the cache is not used
  std::string table;       ///< the final round, formatted (format_tried, format_step_tried)
};

struct TuneResult : TunerResult {
  bool writer = true;  ///< this process writes the plan (rank 0 under a launcher)
};

/// What the cache keys hold of the machine: devices 0..ngpus-1 ({name, sms} each; the smallest
/// device memory in `min_memory` when given) and the versions of the driver, runtime, NCCL and
/// cuBLASLt in use.
nlohmann::json devices_json(int ngpus, int64_t* min_memory = nullptr);
nlohmann::json versions_json();

TuneResult run_tune(const TuneOptions& o, std::ostream& progress);

/// The final round as text: one line per candidate, fastest first, the choice and the model's
/// prediction marked.
std::string format_tried(const std::vector<Tried>& tried, std::size_t best, double t_seq_us,
                         double t_ideal_us);

}  // namespace cco::tune
