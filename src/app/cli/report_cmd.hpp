// cco report: the overlap analysis of kernel traces, and pictures of traces and bench sweeps.
// GPU-free (docs/cli/report.md is its help text).
#pragma once

#include <string>
#include <vector>

namespace cco::cli {

/// args[0] is "report". Returns the exit code: 0 success. Bad flags throw cli::Usage (exit 2);
/// unreadable, malformed or wrong-schema input throws model::Error (exit 2, one line naming the
/// file); an unwritable output throws std::runtime_error (exit 1).
int report_main(const std::vector<std::string>& args);

}  // namespace cco::cli
