// Statistics of step times: medians with their spread, and paired differences with a
// distribution-free confidence interval.
//
// Step times have outliers (a garbage collection, a data-loader stall, a checkpoint), so
// everything here is order statistics: medians, quartiles, and for a paired difference the
// median of the per-pair differences with the sign-test interval -- the k-th smallest and k-th
// largest difference, k the largest with 2 * P(Binomial(n, 1/2) <= k - 1) <= 1 - level. It makes
// no assumption about the distribution; its exact coverage (>= level) is reported. With fewer
// than 6 pairs no 95% interval exists and `enough` is false.
#pragma once

#include <cstddef>
#include <vector>

namespace cco::steps {

struct Summary {
  std::size_t n = 0;
  double median = 0, q1 = 0, q3 = 0, min = 0, max = 0;  ///< 0 when n == 0
};

/// Median, quartiles (linear interpolation between order statistics) and extremes.
Summary summarize(std::vector<double> v);

struct PairedDiff {
  std::size_t pairs = 0;
  double median = 0;     ///< median of (b_i - a_i)
  double lo = 0, hi = 0; ///< the interval (only meaningful when `enough`)
  double coverage = 0;   ///< its exact coverage (>= the level asked for)
  bool enough = false;   ///< an interval at the level exists (n large enough)
  bool contains_zero() const { return enough && lo <= 0 && hi >= 0; }
};

/// The paired difference b - a over pairs (a[i], b[i]); a and b must have the same size.
PairedDiff paired_difference(const std::vector<double>& a, const std::vector<double>& b,
                             double level = 0.95);

/// P(Binomial(n, 1/2) <= k), exactly enough for n up to a few thousand.
double binomial_half_cdf(std::size_t n, std::size_t k);

}  // namespace cco::steps
