// Settings that cannot switch between steps (framework controls: docs/FRAMEWORK.md) compared by
// whole runs of the program: the runs alternate in rounds (0 1 2 | 2 1 0 | ...), each run's
// steps are its step files' (the preload library's step clock), and a candidate is set against
// the baseline (candidate 0) step by step: step i of its run against step i of the baseline's run
// of the same round, the sign-test interval over all those pairs (steps/paired.hpp), at 95% over
// all candidates together (Bonferroni: 1 - 0.05 / candidates for each). GPU-free; cco tune
// --framework-candidate (src/app/cli/tune_framework.cpp) drives it.
//
// Steps of one run share what the run had (the machine's state), so pairs are not independent:
// a candidate wins only when the whole interval is below zero, its median difference is below
// zero in every round on its own, and its gain is larger than the baseline's own runs differ
// from each other (their medians' range: what a run-to-run change alone makes); and its runs
// leave a margin of the device's memory (kWholeRunMemoryLimit). Of the winners the one with the largest median gain is chosen; none: the
// baseline. Decided by cco alone from the step files, so every rank gets the same plan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "steps/paired.hpp"
#include "steps/record.hpp"

namespace cco::steps {

/// The candidate of each run, in order: `rounds` rounds, the even ones 0..n-1, the odd ones
/// n-1..0 (A B B A for two candidates and two rounds).
std::vector<std::size_t> whole_run_order(std::size_t candidates, int rounds);

/// One run's step times (ms): per step index the mean over the files (ranks) of the GPU time (the
/// host time where a file has none), the first `warmup` steps left out, only the indices every
/// file has and only regular steps (a step some rank marks irregular is left out). `index`, when
/// given, receives each time's step index.
std::vector<double> run_step_times(const std::vector<StepFile>& files, uint64_t warmup,
                                   std::vector<uint64_t>* index = nullptr);

struct WholeRun {
  std::size_t candidate = 0;
  int round = 0;
  std::vector<double> step_ms;  ///< run_step_times
  /// Each time's step index (run_step_times' `index`): runs are paired on the indices both have
  /// (the same batch of data, where the program's data is the same run to run); empty: by position.
  std::vector<uint64_t> step_index;
  /// The run's peak device memory as a share of the device's (0: not known).
  double memory_fraction = 0;
};

/// A candidate whose run held more than this share of its device's memory at its peak cannot be
/// the winner: the program's memory may vary (another batch, fragmentation) and no margin is left.
inline constexpr double kWholeRunMemoryLimit = 0.9;

struct WholeRunVerdict {
  std::size_t candidate = 0;
  std::vector<double> run_medians;    ///< per run of this candidate, in run order (NaN: no steps)
  std::vector<double> round_medians;  ///< median paired difference against the baseline, per round
  PairedDiff vs_baseline;             ///< all rounds' pairs (candidate 0: none)
  double memory_fraction = 0;         ///< the largest of its runs' (0: not known)
  bool wins = false;
  std::string why;  ///< "faster in every round", "within noise", "slower", "too few steps", ...
};

struct WholeRunDecision {
  std::vector<WholeRunVerdict> verdicts;  ///< one per candidate, baseline first
  std::size_t winner = 0;
  std::string why;
};

/// At least this many pairs per round for a verdict.
inline constexpr std::size_t kWholeRunMinPairs = 6;

WholeRunDecision decide_whole_runs(const std::vector<WholeRun>& runs, std::size_t candidates);

}  // namespace cco::steps
