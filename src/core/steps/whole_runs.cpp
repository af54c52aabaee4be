#include "steps/whole_runs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace cco::steps {

std::vector<std::size_t> whole_run_order(std::size_t candidates, int rounds) {
  std::vector<std::size_t> order;
  for (int r = 0; r < rounds; ++r)
    for (std::size_t i = 0; i < candidates; ++i) order.push_back(r % 2 == 0 ? i : candidates - 1 - i);
  return order;
}

std::vector<double> run_step_times(const std::vector<StepFile>& files, uint64_t warmup,
                                   std::vector<uint64_t>* index) {
  if (index) index->clear();
  if (files.empty()) return {};
  // step index -> (sum over files, files that have it, irregular anywhere)
  struct Acc {
    double sum = 0;
    std::size_t n = 0;
    bool irregular = false;
  };
  std::map<uint64_t, Acc> by_step;
  for (const auto& f : files)
    for (const auto& s : f.steps) {
      if (s.step < warmup) continue;
      Acc& a = by_step[s.step];
      a.sum += s.gpu_ms ? *s.gpu_ms : s.host_ms;
      ++a.n;
      a.irregular = a.irregular || !s.regular;
    }
  std::vector<double> out;
  for (const auto& [step, a] : by_step)
    if (a.n == files.size() && !a.irregular) {
      out.push_back(a.sum / static_cast<double>(a.n));
      if (index) index->push_back(step);
    }
  return out;
}

namespace {

double median_of(std::vector<double> v) { return summarize(std::move(v)).median; }

// The pairs of two runs: on the step indices both have (each run's times carry their indices),
// else by position.
void pair_runs(const WholeRun& a, const WholeRun& b, std::vector<double>& ra, std::vector<double>& rb) {
  ra.clear();
  rb.clear();
  const bool indexed = a.step_index.size() == a.step_ms.size() && b.step_index.size() == b.step_ms.size() &&
                       !a.step_index.empty() && !b.step_index.empty();
  if (!indexed) {
    const std::size_t n = std::min(a.step_ms.size(), b.step_ms.size());
    ra.assign(a.step_ms.begin(), a.step_ms.begin() + static_cast<std::ptrdiff_t>(n));
    rb.assign(b.step_ms.begin(), b.step_ms.begin() + static_cast<std::ptrdiff_t>(n));
    return;
  }
  std::map<uint64_t, double> at;
  for (std::size_t i = 0; i < a.step_ms.size(); ++i) at[a.step_index[i]] = a.step_ms[i];
  for (std::size_t i = 0; i < b.step_ms.size(); ++i)
    if (auto it = at.find(b.step_index[i]); it != at.end()) {
      ra.push_back(it->second);
      rb.push_back(b.step_ms[i]);
    }
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.3f", v);
  return buf;
}

}  // namespace

WholeRunDecision decide_whole_runs(const std::vector<WholeRun>& runs, std::size_t candidates) {
  WholeRunDecision d;
  int rounds = 0;
  for (const auto& r : runs) rounds = std::max(rounds, r.round + 1);
  for (std::size_t c = 0; c < candidates; ++c) {
    WholeRunVerdict v;
    v.candidate = c;
    for (const auto& r : runs)
      if (r.candidate == c) {
        v.run_medians.push_back(r.step_ms.empty() ? std::nan("") : median_of(r.step_ms));
        v.memory_fraction = std::max(v.memory_fraction, r.memory_fraction);
      }
    d.verdicts.push_back(v);
  }
  for (std::size_t c = 1; c < candidates; ++c) {
    WholeRunVerdict& v = d.verdicts[c];
    std::vector<double> a_all, b_all;
    bool short_round = false;
    for (int round = 0; round < rounds; ++round) {
      const WholeRun *a = nullptr, *b = nullptr;
      for (const auto& r : runs) {
        if (r.round != round) continue;
        if (r.candidate == 0) a = &r;
        if (r.candidate == c) b = &r;
      }
      std::vector<double> ra, rb;
      if (a && b) pair_runs(*a, *b, ra, rb);
      if (ra.size() < kWholeRunMinPairs) {
        short_round = true;
        continue;
      }
      v.round_medians.push_back(paired_difference(ra, rb).median);
      a_all.insert(a_all.end(), ra.begin(), ra.end());
      b_all.insert(b_all.end(), rb.begin(), rb.end());
    }
    if (short_round || a_all.empty()) {
      v.why = "too few steps (fewer than " + std::to_string(kWholeRunMinPairs) +
              " in a round: the program's steps were not found, or it ran too few)";
      continue;
    }
    const double level = 1.0 - 0.05 / static_cast<double>(std::max<std::size_t>(1, candidates - 1));
    v.vs_baseline = paired_difference(a_all, b_all, level);
    const bool every_round = std::all_of(v.round_medians.begin(), v.round_medians.end(),
                                         [](double m) { return m < 0; });
    const auto& base_runs = d.verdicts[0].run_medians;
    const double aa = base_runs.size() < 2 ? 0
                      : *std::max_element(base_runs.begin(), base_runs.end()) -
                            *std::min_element(base_runs.begin(), base_runs.end());
    if (!v.vs_baseline.enough)
      v.why = "too few steps for an interval";
    else if (v.vs_baseline.hi < 0 && every_round && -v.vs_baseline.median <= aa)
      v.why = "faster in every round, but by less than the baseline's own runs differ (" +
              fmt(-aa).substr(1) + " ms): a run-to-run change could make it";
    else if (v.vs_baseline.hi < 0 && every_round && v.memory_fraction > kWholeRunMemoryLimit) {
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    "faster, but it held %.0f%% of the device's memory at its peak (more than "
                    "%.0f%%: no margin)",
                    100 * v.memory_fraction, 100 * kWholeRunMemoryLimit);
      v.why = buf;
    } else if (v.vs_baseline.hi < 0 && every_round)
      v.wins = true, v.why = "faster in every round";
    else if (v.vs_baseline.hi < 0)
      v.why = "faster overall but not in every round (a round against it: " +
              [&] {
                std::string s;
                for (double m : v.round_medians) s += (s.empty() ? "" : ", ") + fmt(m);
                return s;
              }() + " ms)";
    else if (v.vs_baseline.lo > 0)
      v.why = "slower";
    else
      v.why = "within noise";
  }
  double best = 0;
  for (const auto& v : d.verdicts)
    if (v.wins && -v.vs_baseline.median > best) {
      best = -v.vs_baseline.median;
      d.winner = v.candidate;
    }
  d.why = d.winner == 0 ? "no candidate beat the baseline in every round beyond noise"
                        : "the largest gain of those faster in every round (" +
                              fmt(d.verdicts[d.winner].vs_baseline.median) + " ms a step)";
  return d;
}

}  // namespace cco::steps
