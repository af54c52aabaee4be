// A bench sweep (a `cco bench --json` file, schema "ccoverlap.bench" 1.x) read back, printed and
// drawn: per collective size, time and overlap efficiency against blocks per SM (or padding),
// with seq, concurrent, priority and the ideal as horizontal references and shape and
// shape+priority as lines over k.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/svg.hpp"

namespace cco::report {

struct SweepRow {
  int64_t bytes = 0;
  std::string mode;       ///< seq, concurrent, priority, shape, shape+priority (others kept)
  int target_k = 0;       ///< target blocks per SM (0: none)
  int64_t pad = 0;        ///< padding in bytes
  int blocks_per_sm = 0;  ///< as launched in this row (0: unknown)
  double t_us = 0, t_p25_us = 0, t_p75_us = 0;  ///< the row's time: median and quartiles
  double t_seq_us = 0, t_comp_us = 0, t_comm_us = 0, t_ideal_us = 0;
  double efficiency = 0;  ///< as the bench computed it (NaN when absent)
  double reduction = 0;   ///< as the bench computed it (NaN when absent)
  double efficiency_best = 0;  ///< E_best as the bench computed it (NaN when absent)
  /// The row's full label ("shape+priority k=3 reg=window cta=zero"); results written before
  /// labels were recorded get the mode and k.
  std::string label;
  /// Step and tune results (report/results.hpp): (T_seq - T) / (T_seq - T_ideal) and the row's
  /// wrong elements (-1: not recorded, as in bench results and pair tunes).
  double of_ideal = std::numeric_limits<double>::quiet_NaN();
  int64_t wrong = -1;
  /// Bench results: the row's collective data type ("dtype"; empty: the workload's), and with
  /// `cco bench --in-place 1` the collective alone in place (t_comm_in_place) and both busbw
  /// figures (in_place false and NaN when not recorded).
  std::string dtype;
  bool in_place = false;
  double t_comm_in_place_us = std::numeric_limits<double>::quiet_NaN();
  double comm_busbw_gbps = std::numeric_limits<double>::quiet_NaN();
  double in_place_busbw_gbps = std::numeric_limits<double>::quiet_NaN();
  bool shaped() const { return mode == "shape" || mode == "shape+priority"; }
};

/// What a result file holds: a bench sweep (ccoverlap.bench), a step bench
/// (ccoverlap.step_bench) or a tune result (a ccoverlap.plan with a "tuning" section).
enum class ResultKind { Bench, Step, Tune };
/// "bench", "step", "tune".
const char* kind_name(ResultKind k);

/// One result's rows. Bench results fill the collective fields and rows per size; step and tune
/// results (report/results.hpp) have size 0 in every row and fill the fields below.
struct BenchSweep {
  std::string source;  ///< file name, for messages and titles
  std::string compute, collective, datatype, date, device;
  int nranks = 0;
  std::vector<SweepRow> rows;
  ResultKind kind = ResultKind::Bench;
  /// Step and tune: what ran ("tp-llama-7b (workloads/tp_llama7b.json)", or a pair tune's
  /// "cublaslt || allreduce bfloat16") and its parameters, name and value, sorted by name.
  std::string workload;
  std::vector<std::pair<std::string, std::string>> params;
  /// Step and tune: the result-wide medians (NaN when not recorded).
  double t_seq_us = std::numeric_limits<double>::quiet_NaN();
  double t_ideal_us = std::numeric_limits<double>::quiet_NaN();
  double t_comp_us = std::numeric_limits<double>::quiet_NaN();
  double t_comm_us = std::numeric_limits<double>::quiet_NaN();
  std::string choice, applied;  ///< tune: the fastest row's label, and what `cco run` applies
  std::vector<std::string> notes;
};

/// True when j looks like a bench result (an object whose "schema" is model::kBenchSchema).
bool is_bench_json(const nlohmann::json& j);
/// Reads a bench result: the one reader of the format bench/report.cpp writes (cco report, its
/// comparisons and the fuzzer go through it). Throws model::Error naming `source` and the field
/// on: another schema, an unsupported major version, a missing or non-numeric field, no results.
BenchSweep sweep_from_json(const nlohmann::json& j, const std::string& source);
/// A result of several collective data types (cco bench -d all or a list) as one result per
/// type, in the order the types first appear, each naming its type as `datatype`; a result of
/// one type comes back whole. Throws model::Error when there are several and one is not a type
/// cco bench writes (each names a chart file and a CSV field).
std::vector<std::pair<std::string, BenchSweep>> split_by_dtype(const BenchSweep& s);
/// "# collective alone at 256M: out of place 600.0 us, in place 590.0 us (busbw 447.4 and
/// 455.0 GB/s)", once per size, from the rows that recorded the collective in place.
std::string in_place_lines(const BenchSweep& s);
/// `cco report BENCH.json --json`: {"schema": model::kSweepReportSchema, "input", "rows"}; each
/// row its size, mode, blocks per SM, pad, time, T_seq, reduction and E, and its type when there
/// are several.
nlohmann::json sweep_report_json(const std::vector<std::pair<std::string, BenchSweep>>& parts,
                                 const std::string& input);

enum class SweepAxis { Auto, BlocksPerSm, Pad };

struct SweepOptions {
  /// Auto: blocks per SM when the shaped rows of each mode have distinct known values, else pad.
  SweepAxis axis = SweepAxis::Auto;
  double width = 960;
  std::string title;
};

/// The chart (one pair of panels, time and efficiency, per collective size).
Svg sweep_svg(const BenchSweep& s, const SweepOptions& opt = {});
enum class TableFormat { Text, Csv, Markdown };
/// A CSV field: as it is, or quoted (quotes doubled) when it holds a comma, a quote or a newline.
std::string csv_field(const std::string& s);
/// One row of a CSV (each cell a csv_field) or Markdown table (each '|' escaped), with its
/// newline; any format but Csv is Markdown.
std::string table_row(const std::vector<std::string>& cells, TableFormat f);
/// The sweep's rows: size, row label, blocks per SM, pad, time, T_seq, reduction, efficiency,
/// E_best; text (with "#" lines), CSV (one header line) or a Markdown table.
std::string format_sweep(const BenchSweep& s, TableFormat f = TableFormat::Text);
/// One type's table among several: CSV gains a leading dtype column (one header line for all,
/// from the `first`); the text and Markdown blocks name their type in their own header line.
std::string typed_table(const std::string& table, TableFormat f, const std::string& type, bool first);

}  // namespace cco::report
