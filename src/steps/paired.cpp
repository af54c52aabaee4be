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
  std::vector<double> d(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) d[i] = b[i] - a[i];
  std::sort(d.begin(), d.end());
  r.median = quantile_sorted(d, 0.5);
  const double alpha = 1.0 - level;
  // The largest k (1-based) with 2 * P(B <= k - 1) <= alpha.
  std::size_t k = 0;
  for (std::size_t c = 1; c <= d.size() / 2; ++c) {
    if (2.0 * binomial_half_cdf(d.size(), c - 1) <= alpha) k = c;
    else break;
  }
  if (k == 0) return r;
  r.enough = true;
  r.lo = d[k - 1];
  r.hi = d[d.size() - k];
  r.coverage = 1.0 - 2.0 * binomial_half_cdf(d.size(), k - 1);
  return r;
}

}  // namespace cco::steps
