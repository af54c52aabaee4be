// Paired statistics against hand-computed values, and the comparison of step files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

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

  // Rank 0 died before its steps reached its file, rank 1 recorded 20: said as such, and rank 1's
  // steps compared (it was refused as "no steps were found").
  StepFile dead;
  dead.rank = 0;
  dead.pid = 100;
  dead.configs = {"off", "shape:1"};
  dead.ended = "running";
  const CompareReport r3 = compare({dead, make_file(1, 20, 50, 52, 0)});
  EXPECT_TRUE(r3.refused.empty()) << r3.refused;
  ASSERT_EQ(r3.notes.size(), 1u);
  EXPECT_EQ(r3.notes[0], "rank 0 recorded no step (it did not exit normally: it died or was "
                         "stopped before its steps reached its file); the other ranks' steps are "
                         "compared");
  EXPECT_EQ(r3.configs.size(), 2u);
  EXPECT_EQ(format_report(parse_compare(to_json(r3))), format_report(r3));
}

// The rotation's check stopped it at step 14 (nothing to win): every later step ran under 'off'.
// The comparison is the 6 rounds before it, and the report says where and why it stopped; the
// JSON carries the check through cco report. A check that let the rotation go on is said too.
TEST(Compare, AStoppedRotationIsComparedOverItsRoundsAndSaysSo) {
  StepFile a = make_file(0, 40, 50, 52, 0), b = make_file(1, 40, 50, 52, 0);
  for (StepFile* f : {&a, &b}) {
    for (auto& s : f->steps)
      if (s.step >= 14) s.config = 0;
    f->check = RotationCheck{14, true, "nothing to win here: below the noise; 'off' from here on",
                             "Communication is 98% hidden in this 50 ms step"};
  }
  const CompareReport r = compare({a, b});
  ASSERT_TRUE(r.refused.empty()) << r.refused;
  EXPECT_EQ(r.rounds, 6u);
  ASSERT_TRUE(r.check.has_value());
  const std::string text = format_report(r);
  EXPECT_NE(text.find("# compare stopped at step 14: nothing to win here"), std::string::npos) << text;
  EXPECT_NE(text.find("Every later step ran under 'off'"), std::string::npos) << text;
  EXPECT_NE(text.find("98% hidden"), std::string::npos) << text;
  const CompareReport back = parse_compare(to_json(r));
  ASSERT_TRUE(back.check.has_value());
  EXPECT_EQ(back.check->at_step, 14u);
  EXPECT_TRUE(back.check->stopped);
  EXPECT_EQ(format_report(back), text);

  a.check = b.check = RotationCheck{14, false, "the controls may win more than the step-to-step "
                                               "noise: the comparison goes on", "10 ms to win"};
  const CompareReport on = compare({make_file(0, 40, 50, 52, 0)});
  EXPECT_FALSE(on.check.has_value());
  EXPECT_EQ(format_report(on).find("# compare"), 0u);
  const std::string went = format_report(compare({a, b}));
  EXPECT_NE(went.find("# compare checked at step 14: the controls may win"), std::string::npos) << went;
  EXPECT_EQ(parse_compare(to_json(compare({make_file(0, 40, 50, 52, 0)}))).check, std::nullopt);
}

namespace {

// The sign-test interval as it was computed before it became one pass: a CDF per candidate k and
// a full sort (O(n^2)); the one-pass version must give the same k, bounds and coverage exactly.
PairedDiff reference(const std::vector<double>& a, const std::vector<double>& b) {
  PairedDiff r;
  r.pairs = a.size();
  std::vector<double> d(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) d[i] = b[i] - a[i];
  std::sort(d.begin(), d.end());
  const double pos = 0.5 * static_cast<double>(d.size() - 1);
  const auto i = static_cast<std::size_t>(std::floor(pos));
  r.median = i + 1 >= d.size() ? d.back() : d[i] + (pos - static_cast<double>(i)) * (d[i + 1] - d[i]);
  std::size_t k = 0;
  for (std::size_t c = 1; c <= d.size() / 2; ++c) {
    if (2.0 * binomial_half_cdf(d.size(), c - 1) <= 0.05) k = c;
    else break;
  }
  if (k == 0) return r;
  r.enough = true;
  r.lo = d[k - 1];
  r.hi = d[d.size() - k];
  r.coverage = 1.0 - 2.0 * binomial_half_cdf(d.size(), k - 1);
  return r;
}

}  // namespace

TEST(Paired, OnePassIntervalEqualsTheReference) {
  uint64_t x = 88172645463325252ULL;
  auto rnd = [&] {  // xorshift: deterministic
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return static_cast<double>(x % 100000) / 1000.0;
  };
  for (std::size_t n = 1; n <= 400; n += (n < 40 ? 1 : 7)) {
    std::vector<double> a(n), b(n);
    for (std::size_t i = 0; i < n; ++i) {
      a[i] = rnd();
      b[i] = a[i] + rnd() - 50.0;
    }
    const PairedDiff got = paired_difference(a, b), want = reference(a, b);
    EXPECT_EQ(got.enough, want.enough) << n;
    EXPECT_EQ(got.median, want.median) << n;
    if (!want.enough) continue;
    EXPECT_EQ(got.lo, want.lo) << n;
    EXPECT_EQ(got.hi, want.hi) << n;
    EXPECT_EQ(got.coverage, want.coverage) << n;
  }
}

// A comparison of a long job: a million pairs (the quadratic version took minutes at this size,
// inside the training process). The interval brackets the median and has its 95% coverage.
TEST(Paired, AMillionPairs) {
  const std::size_t n = 1'000'000;
  std::vector<double> a(n), b(n);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = 100.0 + static_cast<double>(i % 997) * 0.01;
    b[i] = a[i] + 1.0 + static_cast<double>((i * 7919) % 1000) * 0.001 - 0.5;
  }
  const PairedDiff d = paired_difference(a, b);
  ASSERT_TRUE(d.enough);
  EXPECT_LE(d.lo, d.median);
  EXPECT_GE(d.hi, d.median);
  EXPECT_NEAR(d.median, 1.0, 0.01);
  EXPECT_GE(d.coverage, 0.95);
  EXPECT_LT(d.coverage, 0.951);
}

TEST(Compare, ThePriceIsTheNoCommDifferenceTurnedAround) {
  // off 59.5 ms of GPU time, nocomm 49.5: communication costs each step 10 ms, 16.8% of it.
  StepFile f = make_file(0, 42, 60, 50, 0.0);
  f.configs = {"off", "nocomm"};
  const CompareReport r = compare({f});
  ASSERT_TRUE(r.refused.empty()) << r.refused;
  EXPECT_EQ(cco::steps::nocomm_item(r), std::optional<std::size_t>(1));
  const std::string text = format_report(r);
  EXPECT_NE(text.find("# the price of communication: 10.000 ms [10.000, 10.000] per step (16.8% "
                      "of 'off''s step): what 'off''s steps cost over the same steps whose "
                      "collectives move no data. No overlap control can win more than this."),
            std::string::npos)
      << text;
  // A policy compared without nocomm gets no price line; a nocomm that costs nothing says so.
  EXPECT_EQ(format_report(compare({make_file(0, 42, 60, 50, 0.0)})).find("price"),
            std::string::npos);
  EXPECT_FALSE(cco::steps::nocomm_item(compare({make_file(0, 42, 60, 50, 0.0)})));
  StepFile same = make_file(0, 42, 60, 60, 0.0);
  same.configs = {"off", "nocomm"};
  EXPECT_NE(format_report(compare({same})).find("Within noise: no overlap control can win here."),
            std::string::npos);
}

// Each rank times a step from its own arrival at the boundary, so the ranks' step times trade
// time between neighbours (rank 0 long where rank 1 is short): the step's time is their mean, and
// the comparison sees the true 10 ms, where rank 0 alone would see its noise.
TEST(Compare, AStepIsTheMeanOverTheRanks) {
  StepFile a = make_file(0, 42, 50, 40, 0.0), b = make_file(1, 42, 50, 40, 0.0);
  a.configs = b.configs = {"off", "nocomm"};
  for (std::size_t k = 0; k < a.steps.size(); ++k) {
    const double e = (k * 7 % 5) * 3.0 - 6.0;  // -6 .. +6, trading between the ranks
    *a.steps[k].gpu_ms += e;
    *b.steps[k].gpu_ms -= e;
  }
  const CompareReport r = compare({a, b});
  ASSERT_TRUE(r.refused.empty()) << r.refused;
  EXPECT_EQ(r.ranks, 2u);
  EXPECT_DOUBLE_EQ(r.configs[1].vs_first.median, -10.0);
  EXPECT_DOUBLE_EQ(r.configs[1].vs_first.lo, -10.0);
  EXPECT_DOUBLE_EQ(r.configs[1].vs_first.hi, -10.0);
  EXPECT_NE(format_report(r).find("gpu time per step in ms (each step the mean of 2 ranks'), 2 step files"),
            std::string::npos) << format_report(r);
  EXPECT_EQ(parse_compare(to_json(r)).ranks, 2u);
  // Rank 0 alone carries the noise.
  const CompareReport alone = compare({a});
  EXPECT_EQ(alone.ranks, 1u);
  EXPECT_GT(alone.configs[1].vs_first.hi - alone.configs[1].vs_first.lo, 1.0);
}
