// The other files cco writes, read back by cco report (issue 34: one viewer for everything cco
// writes): the decision file of `cco tune -- CMD` and of `cco run --compare`'s check
// (ccoverlap.tune_decision), the JSON outputs of cco report itself (trace_analysis,
// step_diagnosis, compare, sweep_report, result_report), of cco doctor and cco info, and the
// footprint report of `cco plan --json` (ccoverlap.footprint; "ccoverlap.plan" with a footprint
// before). Each as a short text; the traces, bench, step and tune results and what cco run writes
// have viewers of their own. GPU-free.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace cco::report {

/// The text for `doc` (read from `path`) when it is one of the kinds above, else nullopt. Throws
/// model::Error (one line) when it names such a kind but is malformed or of another major version.
std::optional<std::string> describe_written(const nlohmann::json& doc, const std::string& path);

}  // namespace cco::report
