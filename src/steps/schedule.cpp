#include "steps/schedule.hpp"

namespace cco::steps {

int64_t round_of_step(uint64_t step, int n, uint64_t warmup) {
  if (n < 1 || step < warmup) return -1;
  return static_cast<int64_t>((step - warmup) / static_cast<uint64_t>(n));
}

int config_of_step(uint64_t step, int n, uint64_t warmup) {
  if (n <= 1 || step < warmup) return 0;
  const uint64_t j = step - warmup;
  const auto pos = static_cast<int>(j % static_cast<uint64_t>(n));
  const bool reverse = (j / static_cast<uint64_t>(n)) % 2 == 1;
  return reverse ? n - 1 - pos : pos;
}

}  // namespace cco::steps
