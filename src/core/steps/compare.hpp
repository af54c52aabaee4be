// A paired comparison from the step files of one run (cco run --compare A,B,...).
//
// The steps and their configurations come from the lowest rank's file; every other file is
// checked to agree with it -- same period, same configurations, same configuration at every step
// index -- and any disagreement is reported (and makes the comparison refused: ranks that switch
// at different steps are not a paired comparison). A step's time is the mean of its time on
// every rank that has it: each rank times a step from its own arrival at the boundary, so one
// rank's steps trade time with their neighbours as the ranks' arrival order changes (measured on
// DDP under nocomm, 2 H200s: rank 0 alone gave a price of 4.8 ms and 8.7 ms in two runs, rank 1
// alone 16.2 and 11.1, the mean of both 11.0 and 12.2; docs/results/2026-11-28-price.md).
//
// Steps are grouped into the schedule's rounds (schedule.hpp); a round where every configuration
// has a regular step gives one sample per configuration. Configuration c is compared with
// configuration 0 by the paired differences over those rounds (paired.hpp). The metric is the
// GPU time between step boundaries when every compared step has one, else the host time. When the
// rotation's check stopped it (nothing to win), the rounds before it are the comparison and the
// report says so.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "steps/paired.hpp"
#include "steps/record.hpp"

namespace cco::steps {

inline constexpr const char* kCompareSchema = model::kRunCompareSchema;  ///< with schema_version 1.x
inline constexpr const char* kCompareSchemaLegacy = model::kRunCompareSchemaLegacy;  ///< read

struct ConfigResult {
  std::string name;
  Summary summary;     ///< over the rounds used (ms)
  PairedDiff vs_first; ///< this minus configuration 0, per round (ms); empty for configuration 0
};

struct CompareReport {
  std::string metric;  ///< "gpu" or "host"
  std::size_t files = 0;
  std::size_t ranks = 1;      ///< the most ranks a step's time was the mean of (text only)
  std::size_t steps = 0;      ///< steps recorded (lowest rank)
  std::size_t rounds = 0;     ///< complete rounds used
  std::size_t irregular = 0;  ///< steps left out: off the period
  int period = 0;
  std::string source;
  std::vector<ConfigResult> configs;
  std::vector<std::string> problems;  ///< ranks that disagree, files that could not be used
  std::vector<std::string> notes;     ///< ranks left out without refusing (no step recorded)
  std::string refused;                ///< why no comparison was made (empty: one was)
  /// The check after the rotation's first rounds (the lowest rank's; docs/STEPS.md), if made.
  std::optional<RotationCheck> check;
};

/// The place of the measuring configuration nocomm among the compared items (never the first),
/// if there: its paired difference is the price of communication.
std::optional<std::size_t> nocomm_item(const CompareReport& r);

/// Builds the report. `files` may be empty (refused, with the reason).
CompareReport compare(const std::vector<StepFile>& files);

/// The text printed at the end of `cco run --compare`.
std::string format_report(const CompareReport& r);

/// The report as JSON (schema "ccoverlap.run_compare" 1.x; "cco.compare/1" before).
std::string to_json(const CompareReport& r);

/// A report read back from to_json's text (cco report reads what --compare-json wrote). Throws
/// std::runtime_error with one line naming `what`: not JSON, another schema, a missing or
/// mistyped field, more than 64 configurations.
CompareReport parse_compare(const std::string& text, const std::string& what = "compare file");

}  // namespace cco::steps
