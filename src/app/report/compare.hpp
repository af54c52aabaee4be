// `cco report A.json B.json`: two results of one kind (bench, step or tune) side by side, row by
// row (the same row label, and for bench results the same collective size), with each row's
// spread, so a user sees what changed between two runs (another version, another machine, another
// setting) and whether the change exceeds the noise. GPU-free.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/sweep.hpp"

namespace cco::report {

/// One row matched across the two results (either side may be missing).
struct ComparedRow {
  int64_t bytes = 0;
  std::string label;
  const SweepRow* a = nullptr;
  const SweepRow* b = nullptr;
  /// b's median over a's (NaN unless both exist).
  double ratio() const;
  /// "faster" when B's interquartile range lies wholly below A's, "slower" when above, "~"
  /// when they overlap (not a difference the samples can tell), "" when a side is missing.
  std::string verdict() const;
};

/// Rows in A's order, then those only in B. Throws model::Error when the two share no row, or
/// are of different kinds.
std::vector<ComparedRow> compare_rows(const BenchSweep& a, const BenchSweep& b);
/// Ways the two runs differ that make a comparison of like with unlike (workload, ranks, device;
/// for step and tune results each parameter, and rows that computed wrong results).
std::vector<std::string> compare_caveats(const BenchSweep& a, const BenchSweep& b);
/// The table: text (with "#" comment lines), CSV (one header line, no comments) or Markdown
/// (the caveats as a list above the table). Step and tune results: format_result_compare.
std::string format_compare(const BenchSweep& a, const BenchSweep& b,
                           TableFormat f = TableFormat::Text);
/// {"schema": "ccoverlap.compare", "a", "b", "caveats", "rows": [...]}; step and tune results
/// add "kind" and leave out the size (result_compare_json).
nlohmann::json compare_json(const BenchSweep& a, const BenchSweep& b);

/// Two bench results of several collective types between them (split_by_dtype): compared type by
/// type (rows match by type, size and label); a type only one side ran is named, not compared.
/// `text` holds the tables in format f, `json` the one comparison (rows with their "dtype",
/// "only_in_a", "only_in_b"). Throws model::Error when the two share no type.
struct TypedCompare {
  std::string text;
  nlohmann::json json;
};
TypedCompare compare_by_dtype(const std::vector<std::pair<std::string, BenchSweep>>& a,
                              const std::vector<std::pair<std::string, BenchSweep>>& b,
                              TableFormat f);

/// The chart of two results of one kind compared (`cco report A.json B.json --svg`): per matched
/// row, A's and B's median with their p25..p75 as bars, in percent of A's median (A at 0), the
/// verdict beside it; rows only one side has are named, not drawn.
std::string compare_results_svg(const BenchSweep& a, const BenchSweep& b, const std::string& title);

/// Two step or two tune results (compare_results.cpp): per row its label, time and spread in A
/// and B, B/A, the verdict, E in A and B (E_best where either has it) and the rows' reduction.
std::string format_result_compare(const BenchSweep& a, const BenchSweep& b, TableFormat f);
nlohmann::json result_compare_json(const BenchSweep& a, const BenchSweep& b);
std::vector<std::string> result_caveats(const BenchSweep& a, const BenchSweep& b);

}  // namespace cco::report
