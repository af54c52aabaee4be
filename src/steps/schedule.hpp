// Which configuration a step runs under in a paired comparison (cco run --compare A,B,...).
//
// The first `warmup` steps run under configuration 0 and are not compared. After them, steps go
// in rounds of n (one step per configuration); even rounds in order (0 1 ... n-1), odd rounds in
// reverse (n-1 ... 0). With n = 2 that is A B B A A B B A ...: a linear drift over a pair of
// rounds affects both configurations alike, and each round holds one step of each, so steps of
// one round form a pair. A pure function of the step index: every rank that counts the same steps
// switches at the same step.
#pragma once

#include <cstdint>

namespace cco::steps {

/// The configuration of step `step` (0-based). n >= 1; warmup >= 0.
int config_of_step(uint64_t step, int n, uint64_t warmup);

/// The round a step belongs to (-1 while warming up).
int64_t round_of_step(uint64_t step, int n, uint64_t warmup);

}  // namespace cco::steps
