#include "steps/paired.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace cco::steps {
namespace {

double quantile_sorted(const std::vector<double>& s, double q) {
  const double pos = q * static_cast<double>(s.size() - 1);
  const auto i = static_cast<std::size_t>(std::floor(pos));
  const double frac = pos - static_cast<double>(i);
  if (i + 1 >= s.size()) return s.back();
  return s[i] + frac * (s[i + 1] - s[i]);
}

}  // namespace

Summary summarize(std::vector<double> v) {
  Summary s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = quantile_sorted(v, 0.5);
  s.q1 = quantile_sorted(v, 0.25);
  s.q3 = quantile_sorted(v, 0.75);
  return s;
}

double binomial_half_cdf(std::size_t n, std::size_t k) {
  if (k >= n) return 1.0;
  // Sum of C(n, i) / 2^n in log space: no overflow for large n.
  double total = 0;
  const double ln2n = static_cast<double>(n) * std::log(2.0);
  for (std::size_t i = 0; i <= k; ++i) {
    const double lc = std::lgamma(static_cast<double>(n) + 1) -
                      std::lgamma(static_cast<double>(i) + 1) -
                      std::lgamma(static_cast<double>(n - i) + 1);
    total += std::exp(lc - ln2n);
  }
  return std::min(total, 1.0);
}

PairedDiff paired_difference(const std::vector<double>& a, const std::vector<double>& b,
                             double level) {
  if (a.size() != b.size()) throw std::invalid_argument("paired_difference: sizes differ");
  PairedDiff r;
  r.pairs = a.size();
  if (a.empty()) return r;
  const std::size_t n = a.size();
  std::vector<double> d(n);
  for (std::size_t i = 0; i < n; ++i) d[i] = b[i] - a[i];
  const double alpha = 1.0 - level;
  // The largest k (1-based, k <= n/2) with 2 * P(B <= k - 1) <= alpha, B ~ Binomial(n, 1/2):
  // the CDF summed term by term in one pass (each term in log space: no overflow for large n),
  // so a comparison of a million steps costs O(n), not the O(n^2) of a CDF per candidate k.
  std::size_t k = 0;
  double cdf_k = 0;  // P(B <= k - 1)
  const double ln2n = static_cast<double>(n) * std::log(2.0);
  const double lgn = std::lgamma(static_cast<double>(n) + 1);
  double cdf = 0;
  for (std::size_t c = 1; c <= n / 2; ++c) {
    const std::size_t i = c - 1;  // cdf becomes P(B <= c - 1)
    cdf += std::exp(lgn - std::lgamma(static_cast<double>(i) + 1) -
                    std::lgamma(static_cast<double>(n - i) + 1) - ln2n);
    if (2.0 * std::min(cdf, 1.0) > alpha) break;
    k = c;
    cdf_k = std::min(cdf, 1.0);
  }
  // Order statistics by selection (O(n)), not a full sort: the median, and the k-th smallest and
  // largest differences.
  auto nth = [&](std::size_t i) {
    std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(i), d.end());
    return d[i];
  };
  const double hi_mid = nth(n / 2);
  if (n % 2 == 1) {
    r.median = hi_mid;
  } else {
    // The lower middle is the largest element before position n/2 (nth_element partitioned).
    const double lo_mid = *std::max_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(n / 2));
    r.median = lo_mid + 0.5 * (hi_mid - lo_mid);
  }
  if (k == 0) return r;
  r.enough = true;
  r.lo = nth(k - 1);
  r.hi = nth(n - k);
  r.coverage = 1.0 - 2.0 * cdf_k;
  return r;
}

}  // namespace cco::steps
