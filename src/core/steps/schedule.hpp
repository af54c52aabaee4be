// Which configuration a step runs under in a paired comparison (cco run --compare A,B,...).
//
// The first `warmup` steps run under configuration 0 and are not compared. After them, steps go
// in rounds of n (one step per configuration, so the steps of a round form a pair). The order in
// a round is a row of a Williams design: row r of the square whose first row is
// 0, 1, n-1, 2, n-2, ... and whose row r adds r (mod n); for odd n the n rows again reversed
// (2n rows). Over a full set of rows every configuration runs right after every other one equally
// often. That matters: a step that follows a slow one can look faster (the host has queued its
// work ahead), and a plain forward/reverse order (A B C C B A) puts the middle configuration after
// the slow one far more often than the others (measured: docs/results/2026-11-23-h100-tune.md).
// With n = 2 the rows are A B, B A: A B B A A B B A ..., balanced and drift-cancelling. A pure
// function of the step index: every rank that counts the same steps switches at the same step.
#pragma once

#include <cstdint>

namespace cco::steps {

/// The configuration at position `pos` (0..n-1) of round `round` (a Williams design, above).
int order_slot(int n, uint64_t round, int pos);

/// The configuration of step `step` (0-based). n >= 1; warmup >= 0.
int config_of_step(uint64_t step, int n, uint64_t warmup);

/// The round a step belongs to (-1 while warming up).
int64_t round_of_step(uint64_t step, int n, uint64_t warmup);

}  // namespace cco::steps
