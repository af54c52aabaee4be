// `cco report A.json B.json`: two bench results side by side, row by row (the same collective
// size and row label), with each row's spread, so a user sees what changed between two runs
// (another version, another machine, another setting) and whether the change exceeds the noise.
// GPU-free.
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

/// Rows in A's order, then those only in B. Throws model::Error when the two share no row.
std::vector<ComparedRow> compare_rows(const BenchSweep& a, const BenchSweep& b);
/// Ways the two runs differ that make a comparison of like with unlike (workload, ranks, device).
std::vector<std::string> compare_caveats(const BenchSweep& a, const BenchSweep& b);
/// The table: text (with "#" comment lines), CSV (one header line, no comments) or Markdown
/// (the caveats as a list above the table).
std::string format_compare(const BenchSweep& a, const BenchSweep& b,
                           TableFormat f = TableFormat::Text);
/// {"schema": "ccoverlap.compare", "a", "b", "caveats", "rows": [...]}.
nlohmann::json compare_json(const BenchSweep& a, const BenchSweep& b);

}  // namespace cco::report
