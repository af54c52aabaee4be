#include "steps/schedule.hpp"

namespace cco::steps {

int64_t round_of_step(uint64_t step, int n, uint64_t warmup) {
  if (n < 1 || step < warmup) return -1;
  return static_cast<int64_t>((step - warmup) / static_cast<uint64_t>(n));
}

int order_slot(int n, uint64_t round, int pos) {
  if (n <= 1) return 0;
  const uint64_t rows = n % 2 == 0 ? static_cast<uint64_t>(n) : 2 * static_cast<uint64_t>(n);
  const uint64_t row = round % rows;
  // An odd n: the second n rows are the first n reversed.
  const int j = row >= static_cast<uint64_t>(n) ? n - 1 - pos : pos;
  // The first row 0, 1, n-1, 2, n-2, ...; row r adds r (mod n).
  const int first = j == 0 ? 0 : j % 2 == 1 ? (j + 1) / 2 : n - j / 2;
  return static_cast<int>((static_cast<uint64_t>(first) + row % static_cast<uint64_t>(n)) %
                          static_cast<uint64_t>(n));
}

int config_of_step(uint64_t step, int n, uint64_t warmup) {
  if (n <= 1 || step < warmup) return 0;
  const uint64_t j = step - warmup;
  return order_slot(n, j / static_cast<uint64_t>(n), static_cast<int>(j % static_cast<uint64_t>(n)));
}

}  // namespace cco::steps
