#include "steps/period.hpp"

#include <algorithm>

namespace cco::steps {

PeriodDetector::PeriodDetector(PeriodOptions o) : o_(o) {
  o_.max_period = std::clamp(o_.max_period, 1, 1 << 20);
  o_.repeats = std::max(o_.repeats, 2);
  hist_.assign(static_cast<std::size_t>(o_.max_period) + 1, 0);
  run_.assign(static_cast<std::size_t>(o_.max_period) + 1, 0);
}

Feed PeriodDetector::feed(uint64_t sig) {
  const uint64_t n = n_++;
  const std::size_t H = hist_.size();
  const uint64_t maxp = std::min<uint64_t>(static_cast<uint64_t>(o_.max_period), n);
  // Update every candidate's run; find the valid one with the longest run.
  int best = 0;
  uint32_t best_run = 0;
  const uint64_t need_per_p = static_cast<uint64_t>(o_.repeats - 1);
  for (uint64_t p = 1; p <= maxp; ++p) {
    uint32_t& r = run_[p];
    r = hist_[(n - p) % H] == sig ? r + 1 : 0;
    if (r >= need_per_p * p && r > best_run) {
      best = static_cast<int>(p);
      best_run = r;
    }
  }
  hist_[n % H] = sig;

  Feed f;
  if (period_ > 0) {
    const bool match = n >= static_cast<uint64_t>(period_) && run_[period_] > 0;
    if (!match) ++mism_total_;
    if (n >= anchor_ && (n - anchor_) % static_cast<uint64_t>(period_) == 0) {
      f.boundary = true;
      f.ends_step = n > anchor_;
      f.prev_regular = f.ends_step && step_mism_ == 0;
      step_mism_ = 0;
    }
    if (!match && n >= anchor_) ++step_mism_;
  }
  // (Re)lock: a valid period with more evidence than the current one has ever had (its peak run,
  // so that a period broken by an occasional extra collective is not replaced by a short stretch
  // of equal collectives while its run builds up again).
  if (period_ > 0) peak_ = std::max(peak_, run_[period_]);
  if (best > 0 && best != period_ && (period_ == 0 || best_run > peak_)) {
    period_ = best;
    peak_ = best_run;
    anchor_ = n + 1;
    step_mism_ = 0;
    ++locks_;
    f.relocked = true;
  }
  return f;
}

uint64_t signature(std::string_view kind, uint64_t count, int dtype, int op, int peer, int comm) {
  // FNV-1a over the fields: stable across runs and processes (no pointer, no std::hash).
  uint64_t h = 1469598103934665603ULL;
  auto mix = [&h](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ULL;
    }
  };
  for (char c : kind) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  mix(count);
  mix(static_cast<uint64_t>(static_cast<int64_t>(dtype)));
  mix(static_cast<uint64_t>(static_cast<int64_t>(op)));
  mix(static_cast<uint64_t>(static_cast<int64_t>(peer)));
  mix(static_cast<uint64_t>(static_cast<int64_t>(comm)));
  return h;
}

}  // namespace cco::steps
