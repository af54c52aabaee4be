// `cco bench --workload FILE`: a training step (docs/WORKLOADS.md) measured under every mode on
// every rank. Per iteration, round-robin like `cco bench`: each op alone (for T_comp, T_comm and
// T_ideal), the whole step on one stream (seq = T_seq), then the step under each overlapped row
// (concurrent, priority, shape k, shape+priority k). A sample is the max over ranks of one
// iteration; figures are medians over -n samples. docs/METRICS.md defines the figures, with
// T_comp = the sum of compute ops alone, T_comm = the sum of collectives alone and T_ideal = the
// critical path of the step's graph with each op's time alone (workload::ideal_time).
//
// The declarations are GPU-free; the options and the renderings are in cco.bench_core
// (workload_report.cpp, tested without CUDA); run_step needs CUDA and NCCL (cco.bench, workload_bench.cpp).
// --validate does not come here: it is workload::load_step + workload::validation_summary
// (GPU-free, cco.core).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "bench/options.hpp"
#include "bench/report.hpp"
#include "model/occupancy.hpp"
#include "workload/workload.hpp"

namespace cco::bench {

inline constexpr const char* kStepSchema = model::kStepBenchSchema;
inline constexpr const char* kStepSchemaVersion = model::kSchemaVersion;

struct StepOptions {
  std::string workload;                                     ///< --workload FILE
  std::vector<std::pair<std::string, std::string>> params;  ///< --param NAME=VALUE
  /// The flags shared with `cco bench` that apply to a step: -g -n -w -c, --modes,
  /// --blocks-per-sm, --pad, --nccl-min-ctas/--nccl-max-ctas/--nccl-cta-policy/
  /// --nccl-cga-cluster-size, --json, --csv, -q; argv as given.
  Options common;
};

/// Parses `cco bench --workload FILE [--param N=V ...] [flags]` (args[0] is "bench"). Throws
/// UsageError with one line for a bad value, --validate / --gpu-memory (they belong to the
/// GPU-free validate path), or a flag that does not apply to a workload (-b -e -f -d -o
/// --collective --compute --gemm --gemm-dtype --count --mem-bytes --gemm-sms --green-sms: the file
/// sets the sizes and types).
StepOptions parse_step_options(const std::vector<std::string>& args);

/// One op's time alone (samples: max over ranks per iteration), and its wrong elements.
struct StepOpResult {
  std::string id;
  std::string kind;    ///< "gemm", "elementwise", "norm", or the collective's name
  std::string stream;  ///< "compute" or "comm"
  Timing alone;
  double flops = 0;    ///< GEMM FLOPs
  double traffic = 0;  ///< bytes moved at least (collectives: their size)
  bool shapeable = false;
  /// Wrong elements over every verified run (-c), summed over ranks: which op went wrong.
  unsigned long long wrong = 0;
};

/// A kernel of ours that the step launches (one per distinct __global__ function): what shape
/// rows pad, each to the row's k with its own padding (model::plan_padding).
struct StepKernel {
  std::string name;            ///< "membound", "builtin gemm bfloat16"
  model::Footprint footprint;  ///< as launched (no padding)
  int natural_bps = 0;         ///< blocks per SM as launched
};

/// What rank 0's device says about the step, for choosing rows.
struct StepDeviceContext {
  model::DeviceLimits limits;       ///< of rank 0's device
  std::vector<StepKernel> kernels;  ///< the step's shapeable kernels (empty: no shape rows)
  int nranks = 0;
  const workload::Step* step = nullptr;  ///< the step as expanded for this run
};

/// Chooses the rows once the device is known (called on rank 0 only; the rows are then sent to
/// every rank). May append to `notes`. A row may carry `nccl_ctas` (its own communicator with
/// minCTAs = maxCTAs) and `green_sms` (the compute stream in a green-context SM partition);
/// `gemm_sms` does not apply to a step (run_step throws UsageError), nor do budgets on seq.
using StepRowProvider =
    std::function<std::vector<RowSpec>(const StepDeviceContext&, std::vector<std::string>& notes)>;

/// One mode of the step.
struct StepRow {
  RowSpec spec;  ///< mode, shape target k or explicit pad, budgets (label() names them)
  Timing t;      ///< the whole step, start to both streams done
  std::string
      shaping;  ///< "membound +40K (2/SM), builtin gemm bfloat16 +72K (1/SM)"; empty unshaped
  unsigned long long wrong = 0;  ///< wrong elements in this row's verified run, summed over ranks
};

struct StepReport {
  std::vector<std::string> argv;
  std::string date, host, bootstrap = "threads";
  bool writer = true;  ///< this process prints and writes the report (rank 0's, under a launcher)
  int nranks = 0;
  nlohmann::json versions = nlohmann::json::object();
  nlohmann::json devices = nlohmann::json::array();
  nlohmann::json config = nlohmann::json::object();
  workload::Step step;          ///< as expanded for this run (parameters with overrides)
  int64_t memory_bytes = 0;  ///< device memory the step's layout takes on each rank
  bool checked = false;
  Timing t_seq;                     ///< the seq row's samples
  Timing t_comp, t_comm;            ///< per iteration: sums of the ops' times alone
  Timing t_ideal;                   ///< per iteration: workload::ideal_time of the ops' times alone,
                                    ///< at least t_mem_us
  /// The memory-traffic floor (us): the step's ops' least device-memory bytes at the device's peak
  /// bandwidth (0: unknown). No overlap runs the step faster.
  double t_mem_us = 0;
  std::vector<StepOpResult> ops;    ///< indexed like step.ops
  std::vector<StepKernel> kernels;  ///< the step's shapeable kernels on rank 0's device
  std::vector<StepRow> rows;
  std::vector<std::string> notes;
  /// Where NCCL ran the step's collectives on each communicator whose CTA policy was set: one
  /// {"communicator", "cta_policy", "path", ...} per probed communicator (comm_path_json).
  nlohmann::json comm_paths = nlohmann::json::array();

  unsigned long long wrong() const;  ///< over every row (the seq row includes the reference checks)
  /// Medians as model::OverlapTimes for `row` (t_comp, t_comm, t_seq, the row's time).
  model::OverlapTimes times(const StepRow& row) const;
};

/// Loads the workload for -g ranks (every visible GPU when 0), refuses it before anything runs
/// when it does not fit the smallest GPU's memory (workload::check_memory) or when -c cannot verify
/// a reduction, then measures it on one thread per GPU (or one process per GPU under a launcher:
/// ranks.hpp) with the rows of expand_rows() (--modes,
/// --blocks-per-sm, --pad). `progress` gets a line every few seconds unless -q. Throws
/// workload::StepError (bad file: exit 2), UsageError, NoGpu, rt::Error.
StepReport run_step(const StepOptions& options, std::ostream& progress);

/// Refuses, before anything runs, a step that does not fit `memory_bytes` (workload::check_memory)
/// or, with `check`, has a reduction -c cannot verify (prod, avg); throws workload::StepError.
void check_step_runnable(const workload::Step& step, int64_t memory_bytes, bool check);

/// The same with rows chosen by `rows` (used by `cco tune --workload`). Ops alone and seq always
/// use the run's own communicator (the --nccl-* flags) and the whole device, so every row
/// compares with the same T_seq; rows with budgets get their own communicator (one per distinct
/// CTA count, created on every rank in the same order) or SM partition (one per distinct size)
/// and are measured in the same round-robin as the others.
StepReport run_step(const StepOptions& options, const StepRowProvider& rows,
                    std::ostream& progress);

/// The table: "#" header lines (workload, parameters, devices, versions, T_comp, T_comm, T_seq,
/// T_ideal), one line per mode (time, spread, reduction, ideal reduction, efficiency, share of
/// the possible saving reached, #wrong), the shaping per row and the footer ("Out of bounds
/// values : N OK|FAILED", the best mode).
std::string format_step_report(const StepReport& r);
/// Everything, every sample; schema "ccoverlap.step_bench" 1.0.0.
nlohmann::json step_report_json(const StepReport& r);
/// One line per mode, with a header line; columns in step_csv_columns().
std::string step_report_csv(const StepReport& r);
std::vector<std::string> step_csv_columns();

}  // namespace cco::bench
