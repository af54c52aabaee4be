// The measuring loop that pairs (runner.cpp) and training steps (workload_bench.cpp) share: the
// round-robin of runs, the barriers that line the ranks up before each run, which runs are
// verified, the samples kept after the warm-up, and how the ranks' samples and wrong elements
// combine. GPU-free (it drives a Subject and a boot::Group), so the loop is tested without a GPU
// (tests/lab/bench/test_engine.cpp); a control that changes how a run is made lands in a Subject,
// the loop stays as it is.
//
// Per iteration (warm-up first, then the measured ones), for every slot in order:
//   subject.before(slot, verify)   padding; with verify, outputs poisoned (and synchronised)
//   group.barrier()                every rank starts the run together
//   subject.run(slot, it, last)    enqueue and time it (returns when it is done)
//   subject.after(slot, verify)    padding undone; with verify, wrong elements of the outputs
// `verify` is true in the last iteration for the slots the subject verifies (when checking).
// Afterwards each slot's samples are combined over ranks, sample by sample (the iteration's
// max by default; -a: mean, min, or rank 0's), and its wrong elements summed over ranks.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.hpp"

namespace cco::bench {

/// One run's times (the subject's unit): the whole run, and its compute and collective parts
/// where the subject tells them apart (0 otherwise).
struct RunTimes {
  double total = 0, comp = 0, comm = 0;
};

/// What one rank measures: a fixed list of slots (runs per iteration).
class Subject {
 public:
  virtual ~Subject() = default;
  virtual std::size_t slots() const = 0;
  /// Whether the slot's last run is verified (when the round checks at all).
  virtual bool verified(std::size_t slot) const = 0;
  virtual void before(std::size_t slot, bool verify) = 0;
  virtual RunTimes run(std::size_t slot, int iteration, bool last) = 0;
  /// Wrong elements per output the subject counts (always the same length for a slot; empty
  /// when not verifying).
  virtual std::vector<unsigned long long> after(std::size_t slot, bool verify) = 0;
};

/// How the ranks' samples of one iteration become the sample: -a's values.
enum class Combine { Rank0 = 0, Mean = 1, Min = 2, Max = 3 };

struct RoundsOptions {
  int warmup = 0;
  int iters = 1;
  bool check = false;
  Combine combine = Combine::Max;
  /// Called on every rank after each iteration (progress lines); may be empty.
  std::function<void(int iteration, int total)> on_iteration;
};

struct SlotSamples {
  std::vector<double> total, comp, comm;  ///< after warm-up, combined over ranks
  /// Wrong elements of the verified run, per output, summed over ranks (empty: not verified).
  std::vector<unsigned long long> wrong;
};

/// Runs the round-robin on this rank (every rank of `g` calls it with the same slots and
/// options). Returns one SlotSamples per slot, the same on every rank.
std::vector<SlotSamples> run_rounds(Subject& s, boot::Group& g, const RoundsOptions& o);

/// -a's value (0 rank 0, 1 mean, 2 min, 3 max) as a Combine.
inline Combine combine_of(int average) {
  return average == 0 ? Combine::Rank0 : average == 1 ? Combine::Mean
                                       : average == 2 ? Combine::Min : Combine::Max;
}

/// The ranks' samples combined in place, sample by sample (a collective call of `g`).
void combine_samples(boot::Group& g, std::vector<double>& samples, Combine c);

}  // namespace cco::bench
