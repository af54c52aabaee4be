// Step and tune results read back for `cco report`, into the rows bench sweeps use (sweep.hpp):
// a step bench (`cco bench --workload FILE --json`, schema "ccoverlap.step_bench" 1.x) and a tune
// result (`cco tune --plan P.json`, a "ccoverlap.plan" 1.x with a "tuning" section), each printed
// as a table (text, CSV, Markdown, JSON) and drawn as one chart of its rows. Two of one kind are
// compared by report/compare.hpp. GPU-free.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "report/svg.hpp"
#include "report/sweep.hpp"

namespace cco::report {

/// The kind of result j is, from its "schema"; nullopt for anything else (a trace).
std::optional<ResultKind> result_kind(const nlohmann::json& j);

/// Reads a step bench result. Throws model::Error naming `source` and the field on: another
/// schema, an unsupported major version, a missing or non-numeric field, no rows.
BenchSweep step_from_json(const nlohmann::json& j, const std::string& source);
/// Reads a tune result (the plan `cco tune` writes); the same errors, and a plan without a
/// "tuning" section (`cco plan` writes those). A pair tune records no T_seq: each row's is
/// T / (1 - reduction), as the tuner computed the reduction.
BenchSweep tune_from_json(const nlohmann::json& j, const std::string& source);
/// Any of the three kinds (sweep_from_json for a bench result), by the schema.
BenchSweep result_from_json(const nlohmann::json& j, const std::string& source);

/// The rows of a step or tune result: label, time, spread, reduction, E, E_best, of_ideal,
/// wrong (and, for a tune, which row was chosen and which applied); text (with "#" lines), CSV
/// (one header line) or a Markdown table.
std::string format_result(const BenchSweep& s, TableFormat f = TableFormat::Text);
/// {"schema": "ccoverlap.result_report", "kind", "input", ..., "rows": [...]}.
nlohmann::json result_json(const BenchSweep& s);

/// The chart of a step or tune result: one line per row, its median time as a bar with the
/// p25..p75 whisker, T_seq and T_ideal as vertical references, E (and E_best) per row as text.
Svg result_svg(const BenchSweep& s, const SweepOptions& opt = {});

/// (p75 - p25) / median of a row: NaN without quartiles or time.
double row_spread(const SweepRow& r);
/// "1 rank", "8 ranks".
std::string ranks_text(int n);

}  // namespace cco::report
