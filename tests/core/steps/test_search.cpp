// The online search of cco tune -- CMD (search.hpp) against hand-computed layouts, scores and
// decisions, and its decision file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "steps/schedule.hpp"
#include "steps/search.hpp"

using namespace cco::steps;

TEST(Search, LayoutHalvesUntilOneIsLeft) {
  // 5 -> 3 -> 2 -> 1: three stages; the minimum is 6 rounds each.
  auto st = layout(SearchOptions{5, 4, 0, 6});
  ASSERT_EQ(st.size(), 3u);
  EXPECT_EQ(st[0].start, 4u);
  EXPECT_EQ(st[0].size, 5);
  EXPECT_EQ(st[0].rounds, 6);
  EXPECT_EQ(st[1].start, 34u);
  EXPECT_EQ(st[1].size, 3);
  EXPECT_EQ(st[2].start, 52u);
  EXPECT_EQ(st[2].size, 2);
  EXPECT_EQ(st[2].end(), 64u);
  EXPECT_EQ(minimum_budget(5, 6), 60u);
  // A budget of 300 steps: 100 per stage -> 20, 33, 50 rounds.
  st = layout(SearchOptions{5, 0, 300, 6});
  EXPECT_EQ(st[0].rounds, 20);
  EXPECT_EQ(st[1].rounds, 33);
  EXPECT_EQ(st[2].rounds, 50);
  EXPECT_TRUE(layout(SearchOptions{1, 0, 100, 6}).empty());
  EXPECT_EQ(minimum_budget(2, 6), 12u);
}

TEST(Search, SlotsFollowTheWilliamsRows) {
  const Stage st{10, 3, 7};
  std::vector<int> got;
  for (uint64_t k = st.start; k < st.end(); ++k) got.push_back(slot_of(st, k));
  // n = 3: 0 1 2 | 1 2 0 | 2 0 1, then the same rows reversed, then again from the first.
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2, 1, 2, 0, 2, 0, 1, 2, 1, 0, 0, 2, 1, 1, 0, 2, 0, 1, 2}));
  const Stage two{0, 2, 4};
  got.clear();
  for (uint64_t k = 0; k < two.end(); ++k) got.push_back(slot_of(two, k));
  EXPECT_EQ(got, (std::vector<int>{0, 1, 1, 0, 0, 1, 1, 0}));  // A B B A for two
}

TEST(Schedule, EveryConfigurationFollowsEveryOtherEquallyOften) {
  for (int n = 2; n <= 8; ++n) {
    const uint64_t rows = n % 2 ? 2 * static_cast<uint64_t>(n) : static_cast<uint64_t>(n);
    // Each round is a permutation.
    for (uint64_t r = 0; r < rows; ++r) {
      std::vector<int> seen(static_cast<std::size_t>(n), 0);
      for (int p = 0; p < n; ++p) ++seen[static_cast<std::size_t>(order_slot(n, r, p))];
      for (int c = 0; c < n; ++c) EXPECT_EQ(seen[static_cast<std::size_t>(c)], 1) << n << " " << r;
    }
    // Inside rounds, over a full set of rows: every ordered pair equally often (a Williams design).
    std::vector<int> pairs(static_cast<std::size_t>(n * n), 0);
    for (uint64_t r = 0; r < rows; ++r)
      for (int p = 1; p < n; ++p)
        ++pairs[static_cast<std::size_t>(order_slot(n, r, p - 1) * n + order_slot(n, r, p))];
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b)
        if (a != b) {
          EXPECT_EQ(pairs[static_cast<std::size_t>(a * n + b)], pairs[1]) << n << ": " << a << b;
        }
    // Across round boundaries too, as the steps run: how often each configuration runs right
    // after a given one differs by at most 2 over two full sets of rows (the forward/reverse
    // order gave the middle configuration all of them: 12 against 0 for n = 3).
    for (int slow = 0; slow < n; ++slow) {
      std::vector<int> after(static_cast<std::size_t>(n), 0);
      int prev = -1;
      for (uint64_t step = 0; step < 2 * rows * static_cast<uint64_t>(n); ++step) {
        const int c = config_of_step(step, n, 0);
        if (prev == slow && c != slow) ++after[static_cast<std::size_t>(c)];
        prev = c;
      }
      int lo = 1 << 30, hi = 0;
      for (int c = 0; c < n; ++c)
        if (c != slow) {
          lo = std::min(lo, after[static_cast<std::size_t>(c)]);
          hi = std::max(hi, after[static_cast<std::size_t>(c)]);
        }
      EXPECT_LE(hi - lo, 2) << "n=" << n << " after " << slow;
    }
  }
}

TEST(Search, ScoresAreMediansOfDeviationsFromTheRound) {
  // Candidates {7, 3, 5} in slots 0, 1, 2; 2 rounds: rows 0 1 2 and 1 2 0.
  const Stage st{0, 3, 2};
  // Round 0 (slots 0 1 2): 10, 12, 20  -> median 12: deviations -2, 0, +8
  // Round 1 (slots 1 2 0): 30, 14, 11  -> median 14: deviations slot1 +16, slot2 0, slot0 -3
  const StageTimes t = {10.0, 12.0, 20.0, 30.0, 14.0, 11.0};
  const auto s = stage_scores(st, {7, 3, 5}, t);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].first, 7);  // -2, -3
  EXPECT_DOUBLE_EQ(s[0].second, -2.5);
  EXPECT_EQ(s[1].first, 5);  // +8, 0
  EXPECT_DOUBLE_EQ(s[1].second, 4.0);
  EXPECT_EQ(s[2].first, 3);  // 0, +16
  EXPECT_DOUBLE_EQ(s[2].second, 8.0);
}

TEST(Search, AConstantDriftDoesNotChangeTheRanking) {
  // Candidate 1 is 1 ms faster; every step is 5 ms slower than the one before. Per-candidate
  // means would favour whoever runs first in a round; the paired score sees through it.
  const Stage st{0, 2, 6};
  StageTimes t;
  for (uint64_t k = 0; k < 12; ++k) {
    const int c = slot_of(st, k);  // set {0, 1}: slot == candidate
    t.push_back(100.0 + 5.0 * static_cast<double>(k) - (c == 1 ? 1.0 : 0.0));
  }
  const auto s = stage_scores(st, {0, 1}, t);
  EXPECT_EQ(s[0].first, 1);
  EXPECT_LT(s[0].second, s[1].second);
}

TEST(Search, UnmeasuredCandidatesGoLastAndTiesKeepOrder) {
  const Stage st{0, 3, 2};
  // Round 0 (slots 0 1 2): slot 2 unmeasured; round 1 (slots 1 2 0): only slot 2 measured, so
  // nothing to pair against. Slot 2 has no deviation at all.
  const StageTimes t = {10.0, 10.0, std::nullopt, std::nullopt, 10.0, std::nullopt};
  const auto s = stage_scores(st, {4, 2, 6}, t);
  EXPECT_EQ(s[0].first, 4);  // tie with 2: the earlier one first
  EXPECT_EQ(s[1].first, 2);
  EXPECT_EQ(s[2].first, 6);
  EXPECT_TRUE(std::isinf(s[2].second));
}

TEST(Search, DecideNextKeepsTheBestHalfInSetOrder) {
  const auto stages = layout(SearchOptions{3, 0, 0, 2});  // 3 -> 2
  ASSERT_EQ(stages.size(), 2u);
  // Candidate 2 fastest, 0 next, 1 slowest.
  StageTimes t;
  for (uint64_t k = stages[0].start; k < stages[0].end(); ++k) {
    const int c = slot_of(stages[0], k);
    t.push_back(c == 2 ? 90.0 : c == 0 ? 100.0 : 130.0);
  }
  const Decision d = decide_next(stages, 1, {0, 1, 2}, t, "gpu");
  EXPECT_EQ(d.stage, 1);
  EXPECT_EQ(d.at_step, stages[1].start);
  EXPECT_EQ(d.set, (std::vector<int>{0, 2}));
  EXPECT_FALSE(d.final);
  EXPECT_EQ(d.scores.front().first, 2);
  EXPECT_EQ(d.scores.back().first, 1);
}

namespace {
// A history where candidate `fast` is `gain` ms faster than candidate 0, with a jitter that is
// +j on even steps and -j on odd ones.
History history_of(const std::vector<Stage>& stages, const std::vector<int>& set, int fast,
                   double gain, double j) {
  History h;
  for (uint64_t k = 0; k < stages.back().end(); ++k) {
    if (k < stages[0].start) {
      h.emplace_back(0, 100.0);
      continue;
    }
    const Stage& st = k < stages[0].end() ? stages[0] : stages.back();
    const int c = set[static_cast<std::size_t>(slot_of(st, k))];
    h.emplace_back(c, 100.0 - (c == fast ? gain : 0.0) + (k % 2 ? -j : j));
  }
  return h;
}
}  // namespace

TEST(Search, FinalChoosesAWinnerThatBeatsTheBaselineBeyondNoise) {
  const auto stages = layout(SearchOptions{2, 2, 0, 6});  // one stage of 2 x 6
  const History h = history_of(stages, {0, 1}, 1, 3.0, 0.5);
  StageTimes t;
  for (uint64_t k = stages[0].start; k < stages[0].end(); ++k) t.push_back(h[k].second);
  const Decision d = decide_final(stages, 0, {0, 1}, t, "gpu", h, stages[0].end(), "one left");
  EXPECT_TRUE(d.final);
  EXPECT_EQ(d.set, (std::vector<int>{1}));
  EXPECT_EQ(d.why, "one left");
  EXPECT_EQ(d.at_step, stages[0].end());
}

TEST(Search, FinalKeepsTheBaselineWhenTheGainIsWithinNoise) {
  // 0.5 ms faster on average, but the jitter (+-3 ms alternating by step) flips the sign of the
  // paired difference from round to round: the interval holds 0.
  const auto stages = layout(SearchOptions{2, 2, 0, 8});
  const History h = history_of(stages, {0, 1}, 1, 0.5, 3.0);
  StageTimes t;
  for (uint64_t k = stages[0].start; k < stages[0].end(); ++k) t.push_back(h[k].second);
  const auto scores = stage_scores(stages[0], {0, 1}, t);
  ASSERT_EQ(scores.front().first, 1);  // the score alone would pick candidate 1
  const Decision d = decide_final(stages, 0, {0, 1}, t, "gpu", h, stages[0].end(), "one left");
  EXPECT_EQ(d.set, (std::vector<int>{0}));
  EXPECT_NE(d.why.find("baseline kept"), std::string::npos) << d.why;
  // Too few rounds beside the baseline for an interval: also the baseline.
  const auto short_stages = layout(SearchOptions{2, 0, 0, 3});
  const History hs = history_of(short_stages, {0, 1}, 1, 5.0, 0.1);
  StageTimes ts;
  for (uint64_t k = 0; k < short_stages[0].end(); ++k) ts.push_back(hs[k].second);
  const Decision ds = decide_final(short_stages, 0, {0, 1}, ts, "gpu", hs, 6, "time budget");
  EXPECT_EQ(ds.set, (std::vector<int>{0}));
  EXPECT_NE(ds.why.find("too few rounds"), std::string::npos) << ds.why;
}

TEST(Search, PairedRoundsUseOnlyRoundsWithBoth) {
  const auto stages = layout(SearchOptions{3, 1, 0, 2});  // 3 x 2 rounds, then 2 x 2 rounds
  History h(stages.back().end(), {0, std::nullopt});
  // Stage 0, round 0: 0 1 2 at steps 1 2 3; round 1: 2 1 0 at steps 4 5 6.
  h[1] = {0, 10.0};
  h[2] = {1, 9.0};
  h[3] = {2, 12.0};
  h[4] = {2, 12.0};
  h[5] = {1, std::nullopt};  // candidate 1 unmeasured in round 1
  h[6] = {0, 11.0};
  // Stage 1 ran {0, 1}: round 0 at steps 7 8, round 1 at 9 10.
  h[7] = {0, 10.5};
  h[8] = {1, 9.5};
  h[9] = {1, 9.0};
  h[10] = {0, 10.0};
  const auto [a, b] = paired_rounds(stages, h, 0, 1);
  EXPECT_EQ(a, (std::vector<double>{10.0, 10.5, 10.0}));
  EXPECT_EQ(b, (std::vector<double>{9.0, 9.5, 9.0}));
}

TEST(Search, HistoryOfStepsStopsAtAGapAndDropsIrregularTimes) {
  std::vector<StepTime> s(4);
  for (uint64_t k = 0; k < 4; ++k) {
    s[k].step = k;
    s[k].config = static_cast<int>(k % 2);
    s[k].host_ms = 10.0 + static_cast<double>(k);
    s[k].gpu_ms = 9.0 + static_cast<double>(k);
  }
  s[1].regular = false;
  s[2].gpu_ms.reset();
  s[3].step = 7;  // a gap: nothing after it belongs to the history
  const History g = history_of(s, true);
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0], (std::pair<int, std::optional<double>>{0, 9.0}));
  EXPECT_FALSE(g[1].second.has_value());  // irregular
  EXPECT_FALSE(g[2].second.has_value());  // no GPU time
  const History h = history_of(s, false);
  EXPECT_EQ(h[2], (std::pair<int, std::optional<double>>{0, 12.0}));
  const StageTimes t = stage_times(Stage{1, 2, 2}, h);  // steps 1..4: beyond the history, none
  ASSERT_EQ(t.size(), 4u);
  EXPECT_FALSE(t[0].has_value());
  EXPECT_EQ(t[1], 12.0);
  EXPECT_FALSE(t[2].has_value());
  EXPECT_FALSE(t[3].has_value());
}

TEST(Search, TuneFileRoundTripAndBadInput) {
  TuneFile f;
  f.epoch = 2;
  f.candidates = {"off", "priority"};
  f.warmup = 3;
  f.decider.rank = 0;
  f.decider.pid = 42;
  f.decider.device = 1;
  f.decider.device_name = "NVIDIA H100 80GB HBM3";
  f.decider.sms = 132;
  f.decider.cuda_driver = "13.0";
  f.stages = layout(SearchOptions{2, 3, 0, 6});
  Decision d;
  d.stage = 1;
  d.at_step = 15;
  d.set = {1};
  d.final = true;
  d.metric = "gpu";
  d.scores = {{1, -0.5}, {0, std::numeric_limits<double>::infinity()}};
  d.why = "one left";
  f.decisions.push_back(d);
  const TuneFile g = parse_tune_file(to_json(f));
  EXPECT_EQ(g.epoch, 2u);
  EXPECT_EQ(g.candidates, f.candidates);
  ASSERT_TRUE(g.decider.rank.has_value());
  EXPECT_EQ(g.decider.device_name, "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(g.stages.size(), 1u);
  EXPECT_EQ(g.stages[0].end(), 15u);
  ASSERT_NE(g.final_decision(), nullptr);
  EXPECT_EQ(g.final_decision()->set, (std::vector<int>{1}));
  EXPECT_TRUE(std::isinf(g.decisions[0].scores[1].second));
  EXPECT_THROW(parse_tune_file("{}"), std::runtime_error);
  EXPECT_THROW(parse_tune_file("[1"), std::runtime_error);
  TuneFile bad = f;
  bad.decisions[0].set = {7};  // no such candidate
  EXPECT_THROW(parse_tune_file(to_json(bad)), std::runtime_error);
  bad.decisions[0].set = {};
  EXPECT_THROW(parse_tune_file(to_json(bad)), std::runtime_error);
  EXPECT_THROW(read_tune_file("/dev/null/none"), std::runtime_error);
}
