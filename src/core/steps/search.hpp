// The online search of `cco tune -- CMD` (docs/STEPS.md): successive halving over candidate
// configurations, with the program's own steps as samples.
//
// The layout is fixed in advance by the options alone: steps [0, warmup) run candidate 0; then
// stage s runs m_s candidates (m_0 = n, m_{s+1} = ceil(m_s / 2), until one is left) for r_s
// rounds of m_s steps, in the carry-over balanced order of schedule.hpp (a Williams design; A B B A
// for two); r_s = max(min_rounds, budget / (stages * m_s)). So every rank knows at which step
// each stage starts. *Which* candidates a stage runs is a decision, made at its first step from
// the previous stage's step times of one process (the decider: rank 0) and shared with the
// others (the decision file below), never from each rank's own timing.
//
// A decision ranks the previous stage's candidates by the median over its rounds of
// (the candidate's step time - that round's median) -- a paired score: drift common to a round
// cancels -- and keeps the best ceil(m/2), ties to the earlier candidate. The final decision (one
// left, the budget spent, or the time budget) names the winner, which runs from then on; the
// winner must also beat candidate 0 (the baseline, "off" by default) beyond noise: the paired
// difference over every round in which both ran must have a 95% sign-test interval below zero,
// else the baseline wins ("never slower": a control that cannot show a gain is not chosen).
//
// The decision file (schema "ccoverlap.tune_decision" 1.x, "cco.tune/1" before; written by the
// decider by write-then-rename):
//   { "schema": "ccoverlap.tune_decision", "schema_version": "1.0.0", "epoch": 1, "candidates": ["off", ...], "warmup": 5,
//     "decider": {"rank": 0 | null, "pid": 123, "device": 0, "device_name": "...", "sms": 132,
//                 "cuda_driver": "13.0"},
//     "layout": [ {"start": 5, "size": 4, "rounds": 6}, ... ],
//     "decisions": [ {"stage": 1, "at_step": 29, "set": [2, 0], "final": false, "metric": "gpu",
//                     "scores": [[0, 1.2], [2, -0.4], ...], "why": "halved"}, ... ] }
// `epoch` counts restarts of the step count (a relock of the period); a decision applies only
// within its epoch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "steps/record.hpp"

namespace cco::steps {

inline constexpr const char* kTuneSchema = model::kTuneDecisionSchema;  ///< with schema_version 1.x
inline constexpr const char* kTuneSchemaLegacy = model::kTuneDecisionSchemaLegacy;  ///< read
/// Rounds per stage at least: 6 pairs is the fewest with a 95% sign-test interval (paired.hpp).
inline constexpr int kMinRounds = 6;

struct SearchOptions {
  int n = 1;               ///< candidates, 1..8
  uint64_t warmup = 5;     ///< steps under candidate 0 before the search
  uint64_t budget = 0;     ///< search steps wanted (0: the minimum the layout needs)
  int min_rounds = kMinRounds;  ///< rounds per stage at least
};

struct Stage {
  uint64_t start = 0;  ///< its first step
  int size = 0;        ///< candidates it runs
  int rounds = 0;
  uint64_t end() const { return start + static_cast<uint64_t>(size) * static_cast<uint64_t>(rounds); }
};

/// The stages (each of size > 1); empty when n == 1. The final phase starts at back().end().
std::vector<Stage> layout(const SearchOptions& o);

/// The fewest search steps `layout` takes for n candidates and min_rounds.
uint64_t minimum_budget(int n, int min_rounds);

/// The position in `set` of the candidate that step `step` of stage `st` runs (order_slot).
int slot_of(const Stage& st, uint64_t step);

struct Decision {
  int stage = 0;             ///< the stage it starts (layout index); == layout size: final
  uint64_t at_step = 0;      ///< its first step
  std::vector<int> set;      ///< the candidates from at_step on (final: the winner alone)
  bool final = false;
  std::string metric;        ///< "gpu" or "host": which times were compared
  std::vector<std::pair<int, double>> scores;  ///< the previous stage's candidates, best first (ms)
  std::string why;           ///< "halved", "one left", "budget", "time", "baseline kept: ..."
};

/// The times of one stage's steps, in step order (index i = step st.start + i); nullopt where a
/// step was irregular or not measured.
using StageTimes = std::vector<std::optional<double>>;

/// The paired scores of a stage: (candidate, median over rounds of its time minus the round's
/// median), best first; a candidate without any time scores +infinity (last).
std::vector<std::pair<int, double>> stage_scores(const Stage& st, const std::vector<int>& set,
                                                 const StageTimes& times);

/// The decision that starts stage `next` (< stages.size()) after stage next-1 ran `set` with
/// these times: the best stages[next].size candidates, in their order in `set`.
Decision decide_next(const std::vector<Stage>& stages, int next, const std::vector<int>& set,
                     const StageTimes& times, const std::string& metric);

/// Every step so far, indexed by step: the candidate it ran and its time (if measured).
using History = std::vector<std::pair<int, std::optional<double>>>;

/// A process's steps (record.hpp) as a history: by step index from 0 until the first gap, each
/// step's candidate and its GPU time (`gpu`) or host time; no time for an irregular step or a
/// missing GPU time.
History history_of(const std::vector<StepTime>& steps, bool gpu);

/// The times of candidate `c`'s steps among history[from, to) that have one, in step order.
std::vector<double> times_of(const History& history, int c, uint64_t from, uint64_t to);

/// The times of stage `st`'s steps in a history (none where the history ends first).
StageTimes stage_times(const Stage& st, const History& history);

/// The final decision, taking effect at step `at`, after stage `last` ran `set` (times as above).
/// The best candidate wins if it beats candidate 0 beyond noise over the rounds of `history` in
/// which both ran, else candidate 0 does; `why` (the reason the search ends) is kept and the
/// baseline rule appended when it applies.
Decision decide_final(const std::vector<Stage>& stages, int last, const std::vector<int>& set,
                      const StageTimes& times, const std::string& metric, const History& history,
                      uint64_t at, const std::string& why);

/// What the deciding process's diagnosis of the first stage says (cco tune -- CMD).
struct StageVerdict {
  bool nothing_to_win = false;  ///< the controls' bound is below the step noise: stop, keep candidate 0
  std::string sentence;         ///< what the controls can win at most, for cco tune to print
};

/// The final decision when the diagnosis of the first stage (cco tune -- CMD, docs/STEPS.md) says
/// the controls have nothing to win: candidate 0 (the baseline) is kept at step `at`, after stage
/// `last` ran `set`; `why` says so and the scores are that stage's, for the record.
Decision decide_nothing_to_win(const std::vector<Stage>& stages, int last,
                               const std::vector<int>& set, const StageTimes& times,
                               const std::string& metric, uint64_t at, const std::string& why);

/// The rounds of the search's stages in which both candidates ran with a time: (a's, b's) pairs.
std::pair<std::vector<double>, std::vector<double>> paired_rounds(const std::vector<Stage>& stages,
                                                                  const History& history, int a,
                                                                  int b);

struct Decider {
  std::optional<int> rank;
  int pid = 0;
  int device = -1;
  std::string device_name;
  int sms = 0;
  std::string cuda_driver;  ///< "13.0"
};

struct TuneFile {
  uint64_t epoch = 0;
  std::vector<std::string> candidates;
  uint64_t warmup = 0;
  Decider decider;
  std::vector<Stage> stages;
  std::vector<Decision> decisions;
  /// The deciding process's diagnosis of candidate 0's steps in the first stage: what the
  /// controls can win at most ("" : none made; the "diagnosis" key is optional).
  std::string diagnosis;
  /// The final decision, if any.
  const Decision* final_decision() const;
};

std::string to_json(const TuneFile& f);
/// Throws std::runtime_error with one line.
TuneFile parse_tune_file(const std::string& text, const std::string& what = "tune file");
/// A regular file of at most 16 MiB. Throws std::runtime_error.
TuneFile read_tune_file(const std::string& path);

}  // namespace cco::steps
