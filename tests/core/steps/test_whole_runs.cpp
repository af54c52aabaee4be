// Whole runs compared (steps/whole_runs.hpp): the run order alternates, a run's steps are the mean
// over its ranks of the steps all have, a candidate faster in every round wins, one whose gain
// comes from a single slow baseline run does not, and the largest winner is chosen.
#include <gtest/gtest.h>

#include <cmath>

#include "steps/whole_runs.hpp"

namespace {

using namespace cco::steps;

std::vector<double> steps_of(double base, std::size_t n, double wiggle = 0.5, unsigned seed = 1) {
  std::vector<double> v;
  for (std::size_t i = 0; i < n; ++i)  // a deterministic spread around base
    v.push_back(base + wiggle * std::sin(static_cast<double>(i * 7 + seed * 13)));
  return v;
}

WholeRun wr(std::size_t c, int round, std::vector<double> ms, double memory = 0) {
  WholeRun r;
  r.candidate = c;
  r.round = round;
  r.step_ms = std::move(ms);
  r.memory_fraction = memory;
  return r;
}

TEST(WholeRuns, OrderAlternates) {
  EXPECT_EQ(whole_run_order(2, 2), (std::vector<std::size_t>{0, 1, 1, 0}));
  EXPECT_EQ(whole_run_order(3, 2), (std::vector<std::size_t>{0, 1, 2, 2, 1, 0}));
  EXPECT_EQ(whole_run_order(2, 3), (std::vector<std::size_t>{0, 1, 1, 0, 0, 1}));
}

TEST(WholeRuns, StepTimesAreTheMeanOverRanksOfCommonRegularSteps) {
  StepFile a, b;
  for (uint64_t s = 0; s < 6; ++s) {
    a.steps.push_back({s, 0, 100.0, 10.0 + static_cast<double>(s), true});
    if (s != 4) b.steps.push_back({s, 0, 100.0, 20.0 + static_cast<double>(s), s != 5});
  }
  a.steps[3].gpu_ms.reset();  // host time where there is no GPU time
  const auto t = run_step_times({a, b}, 2);
  // steps 2 and 3 kept (4: rank b lacks it; 5: irregular on b); step 3: (100 + 23) / 2
  ASSERT_EQ(t.size(), 2u);
  EXPECT_DOUBLE_EQ(t[0], (12.0 + 22.0) / 2);
  EXPECT_DOUBLE_EQ(t[1], (100.0 + 23.0) / 2);
  EXPECT_TRUE(run_step_times({}, 0).empty());
}

TEST(WholeRuns, FasterInEveryRoundWinsTheLargestIsChosen) {
  std::vector<WholeRun> runs;
  const auto order = whole_run_order(3, 2);
  for (std::size_t i = 0; i < order.size(); ++i) {
    const std::size_t c = order[i];
    const double base = c == 0 ? 160 : c == 1 ? 157 : 150;  // 1: -3 ms, 2: -10 ms
    runs.push_back(wr(c, static_cast<int>(i / 3), steps_of(base, 40, 0.5, static_cast<unsigned>(i))));
  }
  const auto d = decide_whole_runs(runs, 3);
  ASSERT_EQ(d.verdicts.size(), 3u);
  EXPECT_TRUE(d.verdicts[1].wins) << d.verdicts[1].why;
  EXPECT_TRUE(d.verdicts[2].wins) << d.verdicts[2].why;
  EXPECT_EQ(d.winner, 2u);
  EXPECT_NEAR(d.verdicts[2].vs_baseline.median, -10, 1.0);
  EXPECT_EQ(d.verdicts[2].run_medians.size(), 2u);
  EXPECT_EQ(d.verdicts[2].round_medians.size(), 2u);
}

TEST(WholeRuns, NoWinnerWithoutAMarginOfMemory) {
  std::vector<WholeRun> runs = {wr(0, 0, steps_of(160, 40), 0.50), wr(1, 0, steps_of(150, 40), 0.95),
                                wr(1, 1, steps_of(150, 40), 0.93), wr(0, 1, steps_of(160, 40), 0.50)};
  auto d = decide_whole_runs(runs, 2);
  EXPECT_FALSE(d.verdicts[1].wins);
  EXPECT_DOUBLE_EQ(d.verdicts[1].memory_fraction, 0.95);
  EXPECT_NE(d.verdicts[1].why.find("held 95% of the device's memory"), std::string::npos)
      << d.verdicts[1].why;
  EXPECT_EQ(d.winner, 0u);
  runs[1].memory_fraction = runs[2].memory_fraction = 0.85;  // a margin left: it wins
  d = decide_whole_runs(runs, 2);
  EXPECT_TRUE(d.verdicts[1].wins) << d.verdicts[1].why;
}

TEST(WholeRuns, AGainSmallerThanTheBaselinesOwnRunToRunChangeDoesNotWin) {
  // The baseline's runs differ by 8 ms; the candidate is 3 ms faster than each in its round.
  std::vector<WholeRun> runs = {wr(0, 0, steps_of(160, 40)), wr(1, 0, steps_of(157, 40, 0.5, 2)),
                                wr(1, 1, steps_of(165, 40, 0.5, 3)), wr(0, 1, steps_of(168, 40, 0.5, 4))};
  const auto d = decide_whole_runs(runs, 2);
  EXPECT_FALSE(d.verdicts[1].wins);
  EXPECT_NE(d.verdicts[1].why.find("by less than the baseline's own runs differ"), std::string::npos)
      << d.verdicts[1].why;
}

TEST(WholeRuns, PairedOnStepIndices) {
  // Step 20 of the baseline's runs was irregular (left out): pairing by position would set every
  // later baseline step against the candidate's step before it. The steps alternate fast and slow
  // (say, every other step does more), so a shift of one reverses every pair.
  auto run = [](std::size_t c, int round, double base, bool drop20) {
    WholeRun r;
    r.candidate = c;
    r.round = round;
    for (uint64_t i = 0; i < 40; ++i) {
      if (drop20 && i == 20) continue;
      r.step_index.push_back(i);
      r.step_ms.push_back(base + (i % 2 ? 10.0 : 0.0));
    }
    return r;
  };
  std::vector<WholeRun> runs = {run(0, 0, 160, true), run(1, 0, 158, false), run(1, 1, 158, false),
                                run(0, 1, 160, true)};
  const auto d = decide_whole_runs(runs, 2);
  EXPECT_DOUBLE_EQ(d.verdicts[1].vs_baseline.median, -2.0);
  EXPECT_EQ(d.verdicts[1].vs_baseline.pairs, 2u * 39u);
  EXPECT_TRUE(d.verdicts[1].wins) << d.verdicts[1].why;
  std::vector<uint64_t> idx;
  StepFile f;
  f.steps.push_back({3, 0, 1.0, 2.0, true});
  f.steps.push_back({7, 0, 1.0, 4.0, true});
  EXPECT_EQ(run_step_times({f}, 0, &idx), (std::vector<double>{2.0, 4.0}));
  EXPECT_EQ(idx, (std::vector<uint64_t>{3, 7}));
}

TEST(WholeRuns, OneSlowBaselineRunMakesNoWinner) {
  // Round 0: the baseline's run was slow as a whole (+20 ms); round 1 (shorter runs): the
  // candidate is 1 ms slower. Pooled, two thirds of the pairs say faster and the interval is
  // below zero; per round it is not faster.
  std::vector<WholeRun> runs = {wr(0, 0, steps_of(180, 40)), wr(1, 0, steps_of(160, 40, 0.5, 2)),
                                wr(1, 1, steps_of(161, 20, 0.5, 3)), wr(0, 1, steps_of(160, 20, 0.5, 4))};
  const auto d = decide_whole_runs(runs, 2);
  EXPECT_FALSE(d.verdicts[1].wins);
  EXPECT_NE(d.verdicts[1].why.find("not in every round"), std::string::npos) << d.verdicts[1].why;
  EXPECT_EQ(d.winner, 0u);
}

TEST(WholeRuns, NoiseSlowerAndTooFewSteps) {
  std::vector<WholeRun> same = {wr(0, 0, steps_of(160, 40, 2.0, 1)), wr(1, 0, steps_of(160, 40, 2.0, 2)),
                                wr(1, 1, steps_of(160, 40, 2.0, 3)), wr(0, 1, steps_of(160, 40, 2.0, 4))};
  EXPECT_EQ(decide_whole_runs(same, 2).verdicts[1].why, "within noise");
  std::vector<WholeRun> slower = {wr(0, 0, steps_of(160, 40)), wr(1, 0, steps_of(170, 40)),
                                  wr(1, 1, steps_of(170, 40)), wr(0, 1, steps_of(160, 40))};
  EXPECT_EQ(decide_whole_runs(slower, 2).verdicts[1].why, "slower");
  std::vector<WholeRun> few = {wr(0, 0, steps_of(160, 40)), wr(1, 0, steps_of(150, 3)),
                               wr(1, 1, steps_of(150, 40)), wr(0, 1, steps_of(160, 40))};
  const auto d = decide_whole_runs(few, 2);
  EXPECT_FALSE(d.verdicts[1].wins);
  EXPECT_NE(d.verdicts[1].why.find("too few steps"), std::string::npos);
}

}  // namespace
