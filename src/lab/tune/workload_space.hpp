// `cco tune --workload FILE`: the search space of a training step (docs/WORKLOADS.md), its
// pruning, the model-based default, the cache key and the tuned plan's record. GPU-free
// (cco.tune_core); the measuring rounds are in tune_workload.hpp (cco.tune).
//
// A candidate is a row of `cco bench --workload`: a mode (concurrent, priority, shape k,
// shape+priority k), an NCCL CTA count (a communicator with minCTAs = maxCTAs) and optionally a
// green-context SM partition for the compute stream. Shape k pads every kernel of ours in the
// step (memory-bound ops, built-in GEMMs) to at most k blocks per SM, each with its own padding;
// cuBLASLt GEMMs are not ours and run as they are.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "bench/options.hpp"
#include "bench/workload_bench.hpp"
#include "model/limits.hpp"
#include "tune/space.hpp"
#include "workload/workload.hpp"

namespace cco::tune {

/// What the space is built from: the device and the step's kernels of ours.
struct WorkloadSpaceInput {
  model::DeviceLimits limits;
  std::vector<bench::StepKernel> kernels;  ///< shapeable kernels with footprints (may be empty)
  /// The step has an all-gather or all-to-all (the collectives NCCL carries on the copy engines):
  /// the zero-CTA policy is then a candidate. `run_policy`: the run's own (nullopt: NCCL's
  /// default).
  bool copy_engine = false;
  std::optional<model::CtaPolicy> run_policy = std::nullopt;
  /// CTA policies to try beyond the run's own (--nccl-cta-policy's further values); empty: zero
  /// where copy_engine.
  std::vector<model::CtaPolicy> cta_policies;
  int nccl_ctas = 24;  ///< CTAs NCCL uses by default (the climb's CTA rungs start from it)
};

/// Which controls to search. Empty lists take the defaults of docs/cli/tune.md.
struct WorkloadSpaceOptions {
  std::vector<int> ctas;  ///< NCCL minCTAs = maxCTAs (-1 = NCCL's default); default -1,16,32
  std::vector<int> blocks_per_sm;  ///< shape targets; default every k below the largest natural
  bool priority = true;            ///< also try the high-priority communication stream
  std::vector<int> green_sms;  ///< green-context partitions for the compute stream (default none)
  int refine = 3;  ///< screened candidates whose neighbours are screened (0: no hill climb)
  int rounds = 3;  ///< neighbour rounds at most (tune/search.hpp)
};

/// Validates the lists against the device (CTAs 1..64 or -1, k >= 1, partitions 1..SMs-1);
/// throws bench::UsageError with one line.
void validate(const WorkloadSpaceInput& in, const WorkloadSpaceOptions& opt);

/// Blocks per SM of each kernel (indexed like in.kernels) under shape target k: a kernel at or
/// below k keeps its own, the others get model::plan_padding's. When a kernel cannot be brought to
/// k, returns an empty vector and sets `why` (when given).
std::vector<int> shaped_occupancy(const WorkloadSpaceInput& in, int k, std::string* why = nullptr);

/// Candidates: concurrent and priority, every shape target with and without priority, each
/// crossed with the CTA counts; green partitions crossed with CTAs and priority (not with shape
/// targets: one compute budget at a time). Pruned, with a note each: targets at or above every
/// kernel's own blocks per SM, targets the model cannot reach, targets that give every kernel the
/// same blocks per SM as an earlier target, shaping when every kernel already runs at one block
/// per SM or the step has no kernel of ours.
std::vector<bench::RowSpec> build_workload_space(const WorkloadSpaceInput& in,
                                                 const WorkloadSpaceOptions& opt,
                                                 std::vector<std::string>* notes = nullptr);

/// The hill climb's neighbours of a screened candidate (tune/search.hpp), each one step away in
/// one control: priority flipped, a green partition +-8 SMs, the adjacent CTA counts of
/// cta_ladder() (space.hpp: common_neighbours), and the shape target +-1 where it gives some
/// kernel a blocks-per-SM different from the row's (one step above every kernel's own: no
/// shaping). None for a zero-CTA row (the copy engines use no SM a control divides). Never the
/// row itself.
std::vector<bench::RowSpec> workload_neighbours(const WorkloadSpaceInput& in, const bench::RowSpec& r);

/// The model-based default for a step: the collective on the high-priority stream with NCCL's own
/// CTA count, no shaping. A step mixes kernels we do not launch (cuBLASLt) with ours, and the
/// pair's residency formula (tune::predict) is per kernel, so the default keeps only the control
/// that needs no kernel of ours.
bench::RowSpec predict_workload(const WorkloadSpaceInput& in);

/// A stable hash (16 hex digits) of the expanded step: everything workload::to_json records but the
/// file's path, so the same workload with the same parameters hashes alike wherever it lies.
std::string step_hash(const workload::Step& step);

/// The workload as recorded in a plan: file, name, ranks, every parameter's final value, the
/// overrides given (--param) and step_hash.
nlohmann::json workload_json(const workload::Step& step);

/// The cache key of a workload tuning result: devices (name, SMs), software versions, ranks, the
/// expanded step (step_hash), the communicator flags (--nccl-*), whether results are verified
/// (-c) and the space searched. -n, -w, -q and output paths do not enter it.
std::string workload_cache_key(const nlohmann::json& devices, const nlohmann::json& versions,
                               int nranks, const workload::Step& step, const bench::Options& common,
                               const WorkloadSpaceOptions& space);

/// One candidate's result in the final (side-by-side) round.
struct StepTried {
  bench::RowSpec spec;
  double t_us = 0, p25_us = 0, p75_us = 0;  ///< the whole step: median and quartiles
  double reduction = 0;                     ///< 1 - t / T_seq
  double efficiency = 0;                    ///< (T_seq - t) / min(T_comp, T_comm)
  double of_ideal = 0;  ///< (T_seq - t) / (T_seq - T_ideal): share of the possible saving
  std::string shaping;  ///< per kernel pads ("membound +40K (2/SM of 8)"); empty unshaped
  unsigned long long wrong = 0;
  bool predicted = false;  ///< the model-based default
};

/// Tried rows from a step report of the final round (every row but seq, in the report's order),
/// against that report's T_seq, T_comp, T_comm and T_ideal (medians).
std::vector<StepTried> tried_from_step(const bench::StepReport& rep,
                                       const bench::RowSpec& predicted);

/// The final round as text: T_seq and T_ideal, one line per candidate, fastest first, the choice
/// and the model's default marked, then the shaping of the shaped candidates.
std::string format_step_tried(const std::vector<StepTried>& tried, std::size_t best,
                              double t_seq_us, double t_ideal_us);

/// The tuned plan (schema ccoverlap.plan 1.0.0, policy "tuned", the same record as the pair
/// tuner's plan_json): the choice's priority, residency and NCCL CTAs as the plan applies them,
/// made_for (device, SMs, ranks, versions), and under "tuning" the date, cache key, workload
/// (workload_json), the choice, every finalist with its times and figures against T_seq and
/// T_ideal of the final round, and notes.
nlohmann::json workload_plan_json(const bench::StepReport& final_round,
                                  const std::vector<StepTried>& tried, std::size_t best,
                                  const std::string& key);

}  // namespace cco::tune
