// Paired statistics against hand-computed values, and the comparison of step files.
#include <gtest/gtest.h>

#include <cmath>

#include "steps/compare.hpp"
#include "steps/paired.hpp"

using namespace cco::steps;

TEST(Paired, SummaryQuartiles) {
  const Summary s = summarize({4, 1, 3, 2});
  EXPECT_EQ(s.n, 4u);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.q1, 1.75);
  EXPECT_DOUBLE_EQ(s.q3, 3.25);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 4);
  EXPECT_EQ(summarize({}).n, 0u);
}

TEST(Paired, BinomialCdf) {
  EXPECT_NEAR(binomial_half_cdf(6, 0), 1.0 / 64, 1e-12);
  EXPECT_NEAR(binomial_half_cdf(10, 1), 11.0 / 1024, 1e-12);
  EXPECT_NEAR(binomial_half_cdf(10, 2), 56.0 / 1024, 1e-12);
  EXPECT_DOUBLE_EQ(binomial_half_cdf(10, 10), 1.0);
}

TEST(Paired, SignTestIntervalSixPairs) {
  // d = b - a = {1, 2, 3, 4, 5, 6}: k = 1, interval [1, 6], coverage 1 - 2/64.
  const PairedDiff d = paired_difference({10, 10, 10, 10, 10, 10}, {11, 12, 13, 14, 15, 16});
  EXPECT_TRUE(d.enough);
  EXPECT_DOUBLE_EQ(d.median, 3.5);
  EXPECT_DOUBLE_EQ(d.lo, 1);
  EXPECT_DOUBLE_EQ(d.hi, 6);
  EXPECT_NEAR(d.coverage, 1 - 2.0 / 64, 1e-12);
  EXPECT_FALSE(d.contains_zero());
}

TEST(Paired, SignTestIntervalTenPairs) {
  // d = {-3, -1, 0, 1, 2, 2, 3, 4, 8, 9} (unsorted below): k = 2 -> [d2, d9] = [-1, 8].
  const std::vector<double> a(10, 100.0);
  const std::vector<double> b = {102, 97, 100, 109, 101, 103, 104, 99, 108, 102};
  const PairedDiff d = paired_difference(a, b);
  EXPECT_TRUE(d.enough);
  EXPECT_DOUBLE_EQ(d.median, 2);
  EXPECT_DOUBLE_EQ(d.lo, -1);
  EXPECT_DOUBLE_EQ(d.hi, 8);
  EXPECT_NEAR(d.coverage, 1 - 2 * 11.0 / 1024, 1e-12);
  EXPECT_TRUE(d.contains_zero());
}

TEST(Paired, TooFewPairs) {
  const PairedDiff d = paired_difference({1, 1, 1, 1, 1}, {2, 2, 2, 2, 2});
  EXPECT_FALSE(d.enough);
  EXPECT_FALSE(d.contains_zero());  // no interval: never called "within noise"
  EXPECT_THROW(paired_difference({1}, {1, 2}), std::invalid_argument);
}

namespace {

// One rank's steps under A B B A ...: config 0 takes `a` ms, config 1 `b` ms, plus a drift.
StepFile make_file(int rank, int nsteps, double a, double b, double drift_per_step) {
  StepFile f;
  f.pid = 100 + rank;
  f.rank = rank;
  f.source = "collectives";
  f.period = 4;
  f.configs = {"off", "shape:1"};
  f.warmup = 2;
  for (int s = 0; s < nsteps; ++s) {
    StepTime t;
    t.step = static_cast<uint64_t>(s);
    t.config = s < 2 ? 0 : ((s - 2) / 2 % 2 == 0 ? (s - 2) % 2 : 1 - (s - 2) % 2);
    t.host_ms = (t.config == 0 ? a : b) + drift_per_step * s;
    t.gpu_ms = t.host_ms - 0.5;
    f.steps.push_back(t);
  }
  return f;
}

}  // namespace

TEST(Compare, PairedDifferenceCancelsDrift) {
  // A drift of 1 ms per step is far larger than the 2 ms effect spread over separate runs, but
  // the paired differences within rounds see the effect +- the drift of one step.
  const CompareReport r = compare({make_file(0, 42, 50, 52, 1.0), make_file(1, 42, 50, 52, 1.0)});
  ASSERT_TRUE(r.refused.empty()) << r.refused;
  EXPECT_EQ(r.metric, "gpu");
  EXPECT_EQ(r.rounds, 20u);
  ASSERT_EQ(r.configs.size(), 2u);
  EXPECT_TRUE(r.configs[1].vs_first.enough);
  EXPECT_NEAR(r.configs[1].vs_first.median, 2.0, 1.0 + 1e-9);
  EXPECT_GT(r.configs[1].vs_first.lo, 0);  // slower, and the interval says so
  const std::string text = format_report(r);
  EXPECT_NE(text.find("slower"), std::string::npos) << text;
}

TEST(Compare, SameConfigurationIsWithinNoise) {
  StepFile f = make_file(0, 40, 50, 50, 0.0);
  for (std::size_t i = 0; i < f.steps.size(); ++i) {  // noise of +-1 ms, alternating
    const double n = static_cast<double>(i * 7 % 5) - 2.0;
    f.steps[i].host_ms += n;
    f.steps[i].gpu_ms = f.steps[i].host_ms;
  }
  const CompareReport r = compare({f});
  ASSERT_TRUE(r.refused.empty()) << r.refused;
  EXPECT_TRUE(r.configs[1].vs_first.contains_zero());
  EXPECT_NE(format_report(r).find("within noise"), std::string::npos);
}

TEST(Compare, HostTimeWhenAGpuTimeIsMissing) {
  StepFile f = make_file(0, 20, 50, 52, 0.0);
  f.steps[5].gpu_ms.reset();
  EXPECT_EQ(compare({f}).metric, "host");
}

TEST(Compare, IrregularStepsAreLeftOut) {
  StepFile f = make_file(0, 22, 50, 52, 0.0);
  f.steps[4].regular = false;
  f.steps[4].gpu_ms = 5000;  // would dominate if used
  const CompareReport r = compare({f});
  EXPECT_EQ(r.irregular, 1u);
  EXPECT_EQ(r.rounds, 9u);  // 10 rounds, the one holding step 4 dropped
  EXPECT_LT(r.configs[0].summary.max, 60);
}

TEST(Compare, RefusedWithoutStepsOrWhenRanksDisagree) {
  EXPECT_FALSE(compare({}).refused.empty());
  StepFile none;
  none.source = "none";
  none.configs = {"off", "shape:1"};
  const CompareReport r0 = compare({none});
  EXPECT_NE(r0.refused.find("no steps were found"), std::string::npos);

  StepFile a = make_file(0, 20, 50, 52, 0), b = make_file(1, 20, 50, 52, 0);
  b.period = 5;
  const CompareReport r1 = compare({a, b});
  EXPECT_FALSE(r1.refused.empty());
  ASSERT_EQ(r1.problems.size(), 1u);
  EXPECT_NE(r1.problems[0].find("rank 1"), std::string::npos);

  StepFile c = make_file(1, 20, 50, 52, 0);
  c.steps[7].config = 1 - c.steps[7].config;
  EXPECT_FALSE(compare({a, c}).refused.empty());

  const CompareReport r2 = compare({make_file(0, 3, 50, 52, 0)});  // warm-up only
  EXPECT_NE(r2.refused.find("no complete round"), std::string::npos);
}
