// The bench result, schema "ccoverlap.bench" 1.x (`cco bench --json`): its record, its writer and
// its one reader (issue 35 item 2: one reader and one writer per format). cco bench
// (lab/bench/report.cpp) fills a BenchResult from its measurements and writes it with write_bench;
// cco report, its comparisons and the fuzzer (app/report/sweep.cpp) read it with read_bench. The
// field names are spelled here only, so a name cannot drift between the two sides
// (tests/app/report/test_result_roundtrip.cpp checks writer -> reader). GPU-free, in cco.core.
//
// A row's controls (gemm_sms, nccl_ctas, green_sms, nccl_register, cta_policy) are spelled by the
// control table (model/controls.hpp): cco bench hands them in as `BenchRow::controls`, written
// beside these fields; no reader of this format reads them.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cco::results {

/// One timed quantity (microseconds): its summary and every sample. NaN is written as null.
struct BenchTiming {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  double median_us = kNaN, p25_us = kNaN, p75_us = kNaN, min_us = kNaN, max_us = kNaN;
  std::vector<double> samples_us;
};

/// One row of "results": a collective size under one mode (docs/METRICS.md names the figures).
/// Figures are NaN where not defined (written as null).
struct BenchRow {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  int64_t size_bytes = 0;
  int64_t count = 0;
  std::string dtype;  ///< the row's collective data type
  std::string mode;   ///< seq, concurrent, priority, shape, shape+priority
  int target_blocks_per_sm = 0;
  int64_t pad_bytes = 0;
  int blocks_per_sm = 0;  ///< as launched (0: unknown)
  BenchTiming t_comp, t_comm, t_seq, t, t_comp_part, t_comm_part, t_comp_alone, t_comm_alone;
  nlohmann::json comm_path;  ///< where NCCL ran the collective (null: not probed)
  std::string label;         ///< the row's full label ("shape+priority k=3 reg=window")
  double t_ideal_us = kNaN;
  double t_mem_us = 0;  ///< the memory-traffic floor (0: unknown, written as null)
  double reduction = kNaN, ideal_reduction = kNaN, efficiency = kNaN, efficiency_best = kNaN;
  double comp_slowdown = kNaN, comm_slowdown = kNaN;
  double best_compute_us = 0, best_collective_us = 0;  ///< "best_parts_us"
  double tflops = kNaN, algbw_gbps = kNaN, busbw_gbps = kNaN;
  bool checked = false;
  unsigned long long wrong = 0;
  /// The collective alone in place (`cco bench --in-place 1`); these fields are written only
  /// where `in_place`.
  bool in_place = false;
  double comm_algbw_gbps = kNaN, comm_busbw_gbps = kNaN;
  BenchTiming t_comm_in_place;
  double in_place_algbw_gbps = kNaN, in_place_busbw_gbps = kNaN;
  unsigned long long in_place_wrong = 0;
  /// The row's controls, each as the control table names it in JSON (model::Spelling::Json),
  /// written into the row as they are.
  nlohmann::json controls = nlohmann::json::object();
};

/// A whole bench result.
struct BenchResult {
  std::vector<std::string> argv;
  std::string date;  ///< ISO 8601, UTC
  std::string host;
  std::string bootstrap;
  int nranks = 0;
  nlohmann::json versions = nlohmann::json::object();
  nlohmann::json devices = nlohmann::json::array();  ///< one object per rank
  nlohmann::json config = nlohmann::json::object();  ///< the options as understood
  std::string compute, collective, datatype, op;     ///< "workload"
  std::vector<std::string> notes;
  /// --in-place 1: "measured", or why the collective was not timed in place ("": not asked).
  std::string in_place;
  std::vector<BenchRow> rows;
};

/// The result as JSON, schema model::kBenchSchema stamped: every field above, each row's controls
/// beside its fields.
nlohmann::json write_bench(const BenchResult& r);

/// True when j looks like a bench result (an object whose "schema" is model::kBenchSchema).
bool is_bench(const nlohmann::json& j);

/// Reads a bench result: what cco report uses of it -- date, nranks, devices, the workload's
/// compute, collective and datatype; per row size, mode, target and launched blocks per SM, pad,
/// the medians of t, t_seq, t_comp and t_comm (and t's quartiles), t_ideal_us, reduction,
/// efficiency, efficiency_best, label, dtype, and where recorded the in-place figures
/// (t_comm_in_place's median, comm_busbw_gbps, in_place_busbw_gbps); other fields keep their
/// defaults. Throws model::Error naming `source` and the field on: another schema, an unsupported
/// major version, a missing or non-numeric field, a row without a time, no results.
BenchResult read_bench(const nlohmann::json& j, const std::string& source);
/// The first rank's device name ("" when the result names none).
std::string first_device_name(const BenchResult& r);

}  // namespace cco::results
