// cco report's command line: the options, read and checked once (docs/cli/report.md), before any
// input is read. GPU-free.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "report/sweep.hpp"
#include "trace/diagnosis.hpp"

namespace cco::cli {

/// What `cco report`'s arguments ask for.
struct ReportArgs {
  std::vector<std::string> files;
  bool json_stdout = false;
  std::string json_file;
  std::string svg;
  std::optional<double> from_us, to_us;
  std::string range;  ///< --range: the window is this NVTX range (per rank, unique)
  report::SweepAxis axis = report::SweepAxis::Auto;
  double width = 0;
  std::string title;
  std::string format;  ///< --format text|csv|md (comparisons)
  std::string merge;   ///< --merge OUT.json: the traces as one Perfetto file
  trace::StepOptions steps;           ///< --steps, --warmup-steps
  std::vector<std::string> alone;     ///< --alone: traces of the program without overlap
  std::optional<trace::StepOptions> alone_steps;  ///< --alone-steps
  bool whole = false;  ///< --whole: the timeline of the whole window, not the typical step
  bool kernels = false;  ///< --kernels: traces: only the kernels by total time, all of them
};

/// "--NAME VALUE" as a number, or Usage naming the flag.
double number_arg(const std::string& flag, const std::string& v);

/// --steps and --alone-steps: auto, nvtx[:NAME], marks[:NAME], config:N, profiler, collectives or
/// none; Usage for anything else.
trace::StepOptions step_spec(const std::string& flag, const std::string& arg);

/// args[0] is "report". Usage (exit 2) for a bad option or combination, one line.
ReportArgs parse_report_args(const std::vector<std::string>& args);

}  // namespace cco::cli
