// What cco run writes beside its table, read back by cco report (issue 34 item 3): the paired
// comparison (--compare-json, schema ccoverlap.run_compare) and a process's step file
// (--steps-out, ccoverlap.steps), as tables (text, CSV, Markdown), JSON and, for a comparison,
// a chart of each configuration's paired difference to the first with its 95% interval.
// GPU-free.
#pragma once

#include <string>

#include "report/sweep.hpp"  // TableFormat
#include "steps/compare.hpp"
#include "steps/record.hpp"

namespace cco::report {

/// The comparison: the text of cco run (steps::format_report) or one row per configuration in
/// CSV or Markdown: name, rounds, median, q1, q3 (ms), the paired difference to the first with
/// its interval (ms, empty without one), that difference in % of the first's median, and the
/// verdict (baseline, faster, slower, within noise, too few rounds).
std::string format_compare(const steps::CompareReport& r, TableFormat f);

/// The chart: one line per configuration after the first, its median paired difference (a dot)
/// and 95% interval (a bar) on a millisecond axis through zero; left of zero is faster. Refused
/// comparisons and ones of fewer than two configurations give a chart that says so.
std::string compare_svg(const steps::CompareReport& r, const std::string& title);

/// A step file: text (a summary per configuration, as before) or, in CSV and Markdown, one row
/// per step: step, configuration (index and name), host and GPU time (ms; GPU empty when not
/// measured), regular, and whether it was a warm-up step.
std::string format_step_file(const steps::StepFile& f, TableFormat t);

}  // namespace cco::report
