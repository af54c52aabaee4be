// The steps of an unmodified program, found in the sequence of its collectives.
//
// A training step issues the same collectives, with the same sizes, in the same order, every
// step. PeriodDetector is fed one signature per collective (a hash of its kind, count, data type,
// operation, root or peer, and communicator: see signature()) and finds the sequence's repeating
// unit, its *period* P (in collectives). Once a period is locked, every P-th collective starts a
// step; the first step starts at the collective after the one that locked it.
//
// Which period: for every candidate P <= max_period the detector keeps run[P], the number of
// consecutive latest collectives that equal the one P before. P is *valid* once
// run[P] >= (repeats - 1) * P, i.e. the latest `repeats` * P collectives repeat with period P.
// The period is the valid P with the longest run (the most evidence); ties go to the smaller P.
// A locked period is replaced only by a valid one whose run is longer than the locked one's
// longest run since it was locked (its peak). So a short stretch of equal collectives (DDP's
// equally sized gradient buckets) may lock P = 1 for a while, but the true step, once seen
// `repeats` times, has a longer run and replaces it (a *relock*: steps start again at the next
// collective); and a true step broken by one extra collective stays locked (that step is marked
// irregular) until a longer repeating unit has more evidence. A collective that occurs only every
// N steps thus ends, after about `repeats` * N steps, in the exact repeating unit (N steps long).
//
// Decisions depend only on the sequence of signatures, never on time: every rank of a program
// whose ranks issue the same collectives finds the same period at the same collective, so a
// configuration switched at step boundaries switches at the same collective on every rank.
//
// Cost: O(max_period) per collective (one comparison per candidate) and O(max_period) memory.
// Not thread-safe: the caller serialises feed().
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace cco::steps {

struct PeriodOptions {
  int max_period = 2048;  ///< the longest step, in collectives, that can be found (>= 1)
  int repeats = 3;        ///< how many identical periods in a row make a period valid (>= 2)
};

/// What one collective meant.
struct Feed {
  bool boundary = false;      ///< this collective starts a step
  bool ends_step = false;     ///< ... and so ends the previous step (false for a lock's first)
  bool prev_regular = false;  ///< the step that ends here matched the period throughout
  bool relocked = false;      ///< a (new) period was locked at this collective
};

class PeriodDetector {
 public:
  explicit PeriodDetector(PeriodOptions o = {});

  Feed feed(uint64_t signature);

  int period() const { return period_; }        ///< 0 while none is locked
  uint64_t fed() const { return n_; }           ///< collectives seen
  uint64_t locks() const { return locks_; }     ///< periods locked (1 + relocks), 0 if none
  uint64_t anchor() const { return anchor_; }   ///< index of the current lock's first boundary
  uint64_t mismatches() const { return mism_total_; }  ///< collectives off the locked period

 private:
  PeriodOptions o_;
  std::vector<uint64_t> hist_;  // ring: signature of collective i at i % hist_.size()
  std::vector<uint32_t> run_;   // run_[P], P = 1..max_period (index 0 unused)
  uint64_t n_ = 0;
  int period_ = 0;
  uint64_t anchor_ = 0;
  uint64_t locks_ = 0;
  uint32_t peak_ = 0;       // the locked period's longest run since it was locked
  uint64_t step_mism_ = 0;  // mismatches inside the current step
  uint64_t mism_total_ = 0;
};

/// The signature of one collective: a hash of what identifies it within a rank's sequence.
/// `kind` is the NCCL call's name ("AllReduce"); `count`, `dtype`, `op` (-1: none), `peer` (root
/// or peer; -1: none) as passed; `comm` is an index of the communicator in order of first use
/// (not its address, which differs between runs).
uint64_t signature(std::string_view kind, uint64_t count, int dtype, int op, int peer, int comm);

}  // namespace cco::steps
