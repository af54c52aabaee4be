// `cco bench` results and their three renderings: the nccl-tests-style table, JSON (schema
// "ccoverlap.bench" 1.0.0) and CSV. GPU-free, so the formats are tested with golden files.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "bench/options.hpp"
#include "model/metrics.hpp"
#include "model/schema_names.hpp"

namespace cco::bench {

inline constexpr const char* kSchema = model::kBenchSchema;
inline constexpr const char* kSchemaVersion = model::kSchemaVersion;

/// Samples of one quantity in microseconds (each the max over ranks) and their summary.
struct Timing {
  std::vector<double> samples;
  model::Summary summary() const { return model::summarize(samples); }
  double median() const { return samples.empty() ? 0.0 : model::median(samples); }
};

/// One row: a collective size under one mode (and one shape target).
struct Row {
  int64_t bytes = 0;       ///< collective size (nccl-tests "size")
  int64_t count = 0;       ///< elements per NCCL call
  RowSpec spec;            ///< mode, target k, explicit pad
  int64_t pad = 0;         ///< extra dynamic shared memory used (bytes)
  int blocks_per_sm = 0;   ///< compute blocks per SM as launched in this row (0: unknown)
  Timing t_comp, t_comm, t_seq;  ///< the size's baselines (shared by the size's rows)
  Timing t;                ///< the row's mode: start to both parts done
  Timing t_comp_part;      ///< within t: start to compute done
  Timing t_comm_part;      ///< within t: start to collective done
  Timing t_comp_alone;     ///< compute alone with this row's shaping and budget (= t_comp when default)
  Timing t_comm_alone;     ///< collective alone on this row's communicator (= t_comm when default)
  double flops = 0;        ///< of the compute part
  /// The memory-traffic floor (us): the compute part's and the collective's least device-memory
  /// bytes at the device's peak bandwidth (0: unknown); T_ideal is at least this.
  double t_mem_us = 0;
  double comm_busbw_factor = 1;
  unsigned long long wrong = 0;  ///< elements wrong under this row's mode (-c), summed over ranks
  bool checked = false;
  /// The CTAPolicy its communicator ran with (nullopt: NCCL's default, unset).
  std::optional<model::CtaPolicy> cta_policy = std::nullopt;
  /// Where NCCL ran the row's collective, from a traced run (comm_path.hpp; null: not probed).
  nlohmann::json comm_path;
  std::string dtype;  ///< the collective's data type ("": the report's)
  /// The collective alone in place (--in-place 1) on the run's own communicator, the size's like
  /// t_comm; measured only where `in_place`.
  Timing t_comm_in_place;
  bool in_place = false;
  /// Wrong elements of the verified in-place run, summed over ranks (also counted once in
  /// `wrong` of the size's first row).
  unsigned long long in_place_wrong = 0;

  model::OverlapTimes times() const;  ///< medians
};

/// Everything recorded about one run.
struct Report {
  std::vector<std::string> argv;
  std::string date;            ///< ISO 8601, UTC
  std::string host;
  std::string bootstrap = "threads";
  int nranks = 0;
  bool writer = true;          ///< this process prints and writes the report (rank 0's)
  nlohmann::json versions = nlohmann::json::object();
  nlohmann::json devices = nlohmann::json::array();  ///< one object per rank
  nlohmann::json config = nlohmann::json::object();  ///< the options as understood
  std::string compute;         ///< description of the compute part
  std::string collective;      ///< "allreduce"
  std::string dtype;           ///< collective data type ("all" or a list when several ran)
  std::string redop;
  /// --in-place 1: "measured", or why the collective was not timed in place ("": not asked).
  std::string in_place;
  std::vector<std::string> notes;
  std::vector<Row> rows;
};

/// "# ..." lines: tool, devices, versions, workload, notes.
std::string format_header(const Report& r);
/// The column header lines and one line per row (no trailing summary).
std::string format_table_header();
std::string format_row(const Row& row, const Report& r);
/// Last lines: wrong elements in total and the best row per size.
std::string format_footer(const Report& r);

nlohmann::json to_json(const Report& r);
std::string to_csv(const Report& r);
/// Column names of to_csv, in order (with the in-place columns when a row has them).
std::vector<std::string> csv_columns();
std::vector<std::string> csv_columns(const Report& r);
/// A row's collective data type (the report's when the row names none).
const std::string& row_dtype(const Row& row, const Report& r);
/// "# collective alone at 256M: out of place 600.0 us (algbw .., busbw .. GB/s), in place ..."
/// per size (and type) where the collective was timed in place; "" when none was.
std::string format_in_place(const Report& r);

/// Now as ISO 8601 UTC ("2026-11-22T03:49:42Z") and this machine's host name, for the record.
std::string iso_now();
std::string host_name();

/// The fastest compute part alone and the fastest collective alone at one size, over every
/// setting the run measured (the baselines and each row's own parts): E_best's S and L
/// (model::efficiency_best), over rows of `dtype` only when one is given (several types ran).
/// 0 where nothing was measured.
struct BestParts {
  double comp = 0, comm = 0;
};
BestParts best_parts(const Report& r, int64_t bytes, const std::string& dtype = "");
/// E_best of a row against its size's best parts.
double efficiency_best(const Row& row, const Report& r);

/// Each part's time under overlap against its time alone with the row's own settings (issue 18,
/// item 4): t_comp_part / t_comp_alone and t_comm_part / t_comm_alone (medians; NaN without
/// samples). 1 = not slowed. The part slowed most is what limits the row.
struct Slowdown {
  double comp = 0, comm = 0;
};
Slowdown slowdown(const Row& row);
/// One line a user can act on: which part overlap slowed and what to try ("" for seq rows).
std::string slowdown_verdict(const Row& row);

/// JSON text of a report or plan. Text from the user (argv, paths) may not be UTF-8: such bytes
/// are replaced (U+FFFD) instead of failing the write after a whole run.
std::string json_text(const nlohmann::json& j, int indent = 1);

/// Rows as rank 0 sends them to every rank (cco bench and the step bench alike): one array
/// [mode, k, pad, gemm_sms, nccl_ctas, green_sms, nccl_reg, cta_policy] per row (the
/// registration and the policy as model::comm_register_number and cta_policy_number write them);
/// rows_from_json reads it back (an older row of 6 or 7
/// fields has no registration or policy).
nlohmann::json rows_to_json(const std::vector<RowSpec>& rows);
std::vector<RowSpec> rows_from_json(const nlohmann::json& j);

/// The options as a JSON object (recorded in every file).
nlohmann::json options_json(const Options& o);
/// CTA policies as a JSON array of NCCL's numbers (model::cta_policy_number), as the options and
/// the tuners' cache keys record them.
nlohmann::json policy_numbers(const std::vector<model::CtaPolicy>& policies);

}  // namespace cco::bench
