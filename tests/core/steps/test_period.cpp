// Period detection on synthetic collective sequences, and the rotation schedule.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "steps/period.hpp"
#include "steps/schedule.hpp"

using cco::steps::Feed;
using cco::steps::PeriodDetector;

namespace {

struct Fed {
  std::vector<Feed> feeds;
  std::vector<uint64_t> boundaries;  // collective indices that start a step
};

Fed feed_all(PeriodDetector& d, const std::vector<uint64_t>& seq) {
  Fed r;
  for (std::size_t i = 0; i < seq.size(); ++i) {
    r.feeds.push_back(d.feed(seq[i]));
    if (r.feeds.back().boundary) r.boundaries.push_back(i);
  }
  return r;
}

std::vector<uint64_t> repeat(const std::vector<uint64_t>& unit, int times) {
  std::vector<uint64_t> s;
  for (int i = 0; i < times; ++i) s.insert(s.end(), unit.begin(), unit.end());
  return s;
}

}  // namespace

TEST(Period, CleanSequenceLocksAfterThreeRepeats) {
  PeriodDetector d;
  const auto seq = repeat({11, 22, 33}, 10);
  const Fed r = feed_all(d, seq);
  EXPECT_EQ(d.period(), 3);
  EXPECT_EQ(d.locks(), 1u);
  // Valid once 9 collectives (3 periods) are seen: locked at index 8, first step at 9.
  EXPECT_TRUE(r.feeds[8].relocked);
  for (std::size_t i = 0; i < 8; ++i) EXPECT_FALSE(r.feeds[i].relocked) << i;
  EXPECT_EQ(r.boundaries, (std::vector<uint64_t>{9, 12, 15, 18, 21, 24, 27}));
  EXPECT_FALSE(r.feeds[9].ends_step);  // the lock's first boundary ends nothing
  for (uint64_t b : r.boundaries) {
    if (b > 9) {
      EXPECT_TRUE(r.feeds[b].ends_step && r.feeds[b].prev_regular) << b;
    }
  }
  EXPECT_EQ(d.mismatches(), 0u);
}

TEST(Period, WarmupNoiseIsSkipped) {
  PeriodDetector d;
  std::vector<uint64_t> seq = {901, 902, 903, 904};  // initialisation: broadcasts and the like
  const auto steps = repeat({1, 2, 3, 4, 5}, 8);
  seq.insert(seq.end(), steps.begin(), steps.end());
  const Fed r = feed_all(d, seq);
  EXPECT_EQ(d.period(), 5);
  EXPECT_EQ(d.locks(), 1u);
  ASSERT_GE(r.boundaries.size(), 4u);
  for (std::size_t i = 1; i < r.boundaries.size(); ++i)
    EXPECT_EQ(r.boundaries[i] - r.boundaries[i - 1], 5u);
}

TEST(Period, EqualBucketsDoNotHideTheStep) {
  // DDP-like: one different bucket, 20 equal ones, one different; after a few steps the whole
  // step (22 collectives) replaces the period of 1 the equal buckets lock first.
  std::vector<uint64_t> unit = {7};
  for (int i = 0; i < 20; ++i) unit.push_back(8);
  unit.push_back(9);
  std::vector<uint64_t> seq = {100, 100, 100};  // parameter broadcasts at start
  const auto steps = repeat(unit, 8);
  seq.insert(seq.end(), steps.begin(), steps.end());
  PeriodDetector d;
  const Fed r = feed_all(d, seq);
  EXPECT_EQ(d.period(), 22);
  EXPECT_GE(d.locks(), 2u);  // period 1 first, then the step
  // After the last lock every step is 22 collectives and starts with the same collective.
  const uint64_t a = d.anchor();
  for (uint64_t b : r.boundaries) {
    if (b < a) continue;
    EXPECT_EQ((b - a) % 22, 0u);
    EXPECT_EQ(seq[b], seq[a]);
    if (b > a) {
      EXPECT_TRUE(r.feeds[b].prev_regular);
    }
  }
  EXPECT_GE(r.boundaries.back(), a + 3 * 22);
}

TEST(Period, ExtraCollectiveMarksTheStepIrregularThenLongerUnitWins) {
  // Steps of 2 collectives; every 4th step one more (a metrics all-reduce).
  std::vector<uint64_t> seq;
  for (int s = 0; s < 60; ++s) {
    seq.push_back(1);
    seq.push_back(2);
    if (s % 4 == 3) seq.push_back(3);
  }
  PeriodDetector d;
  const Fed r = feed_all(d, seq);
  // While period 2 is locked, the step holding the extra collective is irregular.
  bool saw_irregular = false;
  for (std::size_t i = 0; i < r.feeds.size(); ++i)
    if (r.feeds[i].ends_step && !r.feeds[i].prev_regular) saw_irregular = true;
  EXPECT_TRUE(saw_irregular);
  EXPECT_GT(d.mismatches(), 0u);
  // In the end the exact repeating unit: 4 steps of 2 plus the extra one.
  EXPECT_EQ(d.period(), 9);
}

TEST(Period, OneExtraCollectiveKeepsTheStep) {
  // Once the step (22 collectives, 20 of them equal) is locked, a single extra collective breaks
  // its run; the equal ones then briefly have the longer current run, but not more evidence than
  // the step had: the step stays locked, and only the step holding the extra one is irregular.
  std::vector<uint64_t> unit = {7};
  for (int i = 0; i < 20; ++i) unit.push_back(8);
  unit.push_back(9);
  auto seq = repeat(unit, 10);
  PeriodDetector d;
  feed_all(d, seq);
  ASSERT_EQ(d.period(), 22);
  const uint64_t locks = d.locks();
  std::vector<Feed> after;
  after.push_back(d.feed(77));  // the extra collective
  for (int s = 0; s < 5; ++s)
    for (uint64_t v : unit) after.push_back(d.feed(v));
  EXPECT_EQ(d.period(), 22);
  EXPECT_EQ(d.locks(), locks);
  int irregular = 0;
  for (const Feed& f : after) {
    EXPECT_FALSE(f.relocked);
    if (f.ends_step && !f.prev_regular) ++irregular;
  }
  EXPECT_GE(irregular, 1);
}

// FSDP2 with fully_shard per block (issue 43 item 4): each step all-gathers every block in forward
// (equal signatures), then all-gathers and reduce-scatters every block in backward (a unit of 2),
// with a root module's collectives of other sizes. Layer-sized periods lock first (P = 1, then
// P = 2); the training step must win once seen three times, and stay: every later boundary one
// whole step apart.
TEST(Period, FsdpStepsAreTrainingStepsNotLayers) {
  constexpr int kBlocks = 24;
  const uint64_t ag = 101, rs = 202, ag_root = 303, rs_root = 404;
  std::vector<uint64_t> step = {ag_root};
  for (int b = 0; b < kBlocks; ++b) step.push_back(ag);
  for (int b = 0; b < kBlocks; ++b) {
    step.push_back(ag);
    step.push_back(rs);
  }
  step.push_back(rs_root);
  const int L = static_cast<int>(step.size());  // 74
  PeriodDetector d;
  const auto r = feed_all(d, repeat(step, 12));
  EXPECT_EQ(d.period(), L);
  ASSERT_GE(r.boundaries.size(), 6u);
  // From the lock on, every boundary is one step after the one before.
  const uint64_t anchor = d.anchor();
  std::size_t after = 0;
  for (std::size_t i = 1; i < r.boundaries.size(); ++i)
    if (r.boundaries[i - 1] >= anchor) {
      EXPECT_EQ(r.boundaries[i] - r.boundaries[i - 1], static_cast<uint64_t>(L));
      ++after;
    }
  EXPECT_GE(after, 6u) << "the training step locked too late";
  // Without a root module's own collectives (only blocks wrapped) the step is still found.
  std::vector<uint64_t> bare(step.begin() + 1, step.end() - 1);
  PeriodDetector d2;
  feed_all(d2, repeat(bare, 12));
  EXPECT_EQ(d2.period(), static_cast<int>(bare.size()));
}

TEST(Period, NeverRepeatingFindsNothing) {
  std::mt19937_64 rng(42);
  std::vector<uint64_t> seq(3000);
  for (auto& v : seq) v = rng();
  PeriodDetector d;
  const Fed r = feed_all(d, seq);
  EXPECT_EQ(d.period(), 0);
  EXPECT_EQ(d.locks(), 0u);
  EXPECT_TRUE(r.boundaries.empty());
}

TEST(Period, LongerThanMaxPeriodIsNotFound) {
  std::vector<uint64_t> unit(50);
  for (std::size_t i = 0; i < unit.size(); ++i) unit[i] = 1000 + i;
  PeriodDetector small({.max_period = 40, .repeats = 3});
  feed_all(small, repeat(unit, 6));
  EXPECT_EQ(small.period(), 0);
  PeriodDetector big({.max_period = 64, .repeats = 3});
  feed_all(big, repeat(unit, 6));
  EXPECT_EQ(big.period(), 50);
}

TEST(Period, SameSequenceSameDecisionsOnEveryRank) {
  // Ranks see the same sequence of signatures: the same boundaries at the same collectives.
  std::vector<uint64_t> unit = {5, 6, 6, 6, 7};
  auto seq = repeat(unit, 12);
  seq.insert(seq.begin() + 13, 99);  // an irregularity every rank sees
  PeriodDetector a, b;
  const Fed ra = feed_all(a, seq), rb = feed_all(b, seq);
  EXPECT_EQ(ra.boundaries, rb.boundaries);
  EXPECT_FALSE(ra.boundaries.empty());
}

TEST(Period, SignatureSeparatesFields) {
  using cco::steps::signature;
  const uint64_t base = signature("AllReduce", 1024, 7, 0, -1, 0);
  EXPECT_EQ(base, signature("AllReduce", 1024, 7, 0, -1, 0));
  EXPECT_NE(base, signature("AllGather", 1024, 7, 0, -1, 0));
  EXPECT_NE(base, signature("AllReduce", 1025, 7, 0, -1, 0));
  EXPECT_NE(base, signature("AllReduce", 1024, 9, 0, -1, 0));
  EXPECT_NE(base, signature("AllReduce", 1024, 7, 1, -1, 0));
  EXPECT_NE(base, signature("AllReduce", 1024, 7, 0, 2, 0));
  EXPECT_NE(base, signature("AllReduce", 1024, 7, 0, -1, 1));
}

TEST(Schedule, BalancedRoundsAfterWarmup) {
  using cco::steps::config_of_step;
  using cco::steps::round_of_step;
  std::vector<int> two;
  for (uint64_t s = 0; s < 10; ++s) two.push_back(config_of_step(s, 2, 2));
  EXPECT_EQ(two, (std::vector<int>{0, 0, 0, 1, 1, 0, 0, 1, 1, 0}));  // warm-up, then A B B A A B B A
  std::vector<int> three;
  for (uint64_t s = 0; s < 9; ++s) three.push_back(config_of_step(s, 3, 0));
  EXPECT_EQ(three, (std::vector<int>{0, 1, 2, 1, 2, 0, 2, 0, 1}));  // Williams rows
  EXPECT_EQ(round_of_step(1, 2, 2), -1);
  EXPECT_EQ(round_of_step(2, 2, 2), 0);
  EXPECT_EQ(round_of_step(5, 2, 2), 1);
  EXPECT_EQ(config_of_step(7, 1, 0), 0);
}
