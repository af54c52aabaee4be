// What a tuned plan claims that the round which chose it cannot prove (issue 22). The choice is
// the fastest row of its final round and `concurrent` is always in that round, so "the choice is
// no slower than concurrent there" holds by construction. These checks do not:
//   - the plan's choice fields describe one candidate again (mode, shape target, budgets give the
//     label the plan names), so `cco run` applies what was measured;
//   - measured again in a fresh run, side by side with `concurrent` (the same iterations, so the
//     ratio is paired), the choice is not slower beyond the measured spread.
// A tuner that picks a slow candidate, or writes a choice it did not measure, fails them.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/options.hpp"
#include "model/metrics.hpp"

namespace cco::tune_test {

/// The candidate a plan's choice describes.
inline bench::RowSpec spec_of_choice(const nlohmann::json& c) {
  bench::RowSpec r;
  r.mode = bench::parse_mode(c.at("mode").get<std::string>());
  r.set_k(bench::is_shape(r.mode) ? c.at("blocks_per_sm").get<int>() : 0);
  r.controls.gemm_sms = bench::budget_from_number(c.value("gemm_sms", -1));
  r.controls.nccl_ctas = bench::budget_from_number(c.value("nccl_ctas", -1));
  r.controls.green_sms = bench::budget_from_number(c.value("green_sms", -1));
  r.controls.nccl_reg = model::comm_register_from_number(c.value("nccl_register", -1));
  return r;
}

/// The paired comparison of two rows measured in the same iterations.
struct Paired {
  double ratio = 0;   ///< median over iterations of t_choice / t_reference
  double spread = 0;  ///< half the interquartile range of those ratios
  std::size_t n = 0;
};

inline Paired paired(const std::vector<double>& choice, const std::vector<double>& reference) {
  Paired p;
  std::vector<double> r;
  for (std::size_t i = 0; i < std::min(choice.size(), reference.size()); ++i)
    if (reference[i] > 0) r.push_back(choice[i] / reference[i]);
  p.n = r.size();
  if (r.empty()) return p;
  const auto s = model::summarize(r);
  p.ratio = s.median;
  p.spread = (s.p75 - s.p25) / 2;
  return p;
}

/// The tolerance a re-measured choice gets against concurrent: 2% (a quiet GPU's run-to-run
/// difference between two equal rows) or the measured spread of the ratio, whichever is larger.
inline void expect_not_slower(const Paired& p, const std::string& what) {
  ASSERT_GE(p.n, 10u) << what << ": too few paired samples";
  const double allowed = 1.0 + std::max(0.02, p.spread);
  std::printf("re-measured %s against concurrent: ratio %.4f (spread %.4f, %zu paired samples; "
              "allowed %.4f)\n",
              what.c_str(), p.ratio, p.spread, p.n, allowed);
  EXPECT_LE(p.ratio, allowed) << what << ": the tuned choice, measured again beside concurrent, is "
                              << (p.ratio - 1) * 100 << "% slower (allowed "
                              << (allowed - 1) * 100 << "%, " << p.n << " paired samples)";
}

}  // namespace cco::tune_test
