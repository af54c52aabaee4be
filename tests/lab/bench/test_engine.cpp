// The measuring loop of pairs and steps (src/lab/bench/engine.hpp) with a fake subject on real
// thread ranks: the order of the calls, the barrier before every run, which runs are verified,
// the warm-up dropped, the ranks' samples combined per iteration (max, mean, min, rank 0's) and
// wrong elements summed over ranks.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "bench/engine.hpp"
#include "bootstrap/bootstrap.hpp"

namespace {

using namespace cco::bench;
using cco::boot::Group;
using cco::boot::ThreadLauncher;

// Slot 0 "alone" (not verified), slot 1 "overlapped" (verified, 2 outputs). A run's time is
// 100 * iteration + 10 * slot + rank, so every combination has a known answer.
class Fake : public Subject {
 public:
  Fake(int rank, int ranks, std::atomic<int>* befores, std::atomic<int>* early)
      : rank_(rank), ranks_(ranks), befores_(befores), early_(early) {}
  std::size_t slots() const override { return 2; }
  bool verified(std::size_t slot) const override { return slot == 1; }
  void before(std::size_t slot, bool verify) override {
    log.push_back("before " + std::to_string(slot) + (verify ? " v" : ""));
    befores_->fetch_add(1);
  }
  RunTimes run(std::size_t slot, int it, bool last) override {
    log.push_back("run " + std::to_string(slot) + " " + std::to_string(it) + (last ? " last" : ""));
    // The barrier: no rank runs slot k of iteration it before every rank has prepared it.
    const int due = ranks_ * (it * 2 + static_cast<int>(slot) + 1);
    if (befores_->load() < due) early_->fetch_add(1);
    const double t = 100.0 * it + 10.0 * static_cast<double>(slot) + rank_;
    return {t, t / 2, t / 4};
  }
  std::vector<unsigned long long> after(std::size_t slot, bool verify) override {
    log.push_back("after " + std::to_string(slot) + (verify ? " v" : ""));
    if (!verify) return {};
    return {static_cast<unsigned long long>(rank_ + 1), 7};
  }
  std::vector<std::string> log;

 private:
  int rank_, ranks_;
  std::atomic<int>* befores_;
  std::atomic<int>* early_;
};

std::vector<SlotSamples> run_on(int ranks, RoundsOptions o, std::vector<std::vector<std::string>>* logs,
                                int* iterations_seen = nullptr) {
  std::vector<SlotSamples> out;
  std::mutex mu;
  std::atomic<int> befores{0}, early{0};
  std::atomic<int> calls{0};
  o.on_iteration = [&](int, int) { calls.fetch_add(1); };
  if (logs) logs->assign(static_cast<std::size_t>(ranks), {});
  ThreadLauncher l(ranks);
  l.run([&](Group& g) {
    Fake f(g.rank(), g.size(), &befores, &early);
    auto r = run_rounds(f, g, o);
    std::lock_guard<std::mutex> lock(mu);
    if (g.rank() == 0) out = r;
    else EXPECT_EQ(r.size(), out.empty() ? r.size() : out.size());
    if (logs) (*logs)[static_cast<std::size_t>(g.rank())] = f.log;
  });
  if (iterations_seen) *iterations_seen = calls.load();
  EXPECT_EQ(early.load(), 0) << "a rank ran before every rank had prepared the run";
  return out;
}

TEST(Engine, OrderVerificationAndWarmup) {
  RoundsOptions o;
  o.warmup = 1;
  o.iters = 2;
  o.check = true;
  std::vector<std::vector<std::string>> logs;
  int seen = 0;
  const auto r = run_on(1, o, &logs, &seen);
  EXPECT_EQ(seen, 3);
  const std::vector<std::string> want = {
      "before 0", "run 0 0", "after 0", "before 1", "run 1 0", "after 1",
      "before 0", "run 0 1", "after 0", "before 1", "run 1 1", "after 1",
      "before 0", "run 0 2 last", "after 0", "before 1 v", "run 1 2 last", "after 1 v"};
  EXPECT_EQ(logs[0], want);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].total, (std::vector<double>{100, 200})) << "the warm-up is dropped";
  EXPECT_EQ(r[1].comp, (std::vector<double>{55, 105}));
  EXPECT_EQ(r[1].comm, (std::vector<double>{27.5, 52.5}));
  EXPECT_TRUE(r[0].wrong.empty()) << "slot 0 is not verified";
  EXPECT_EQ(r[1].wrong, (std::vector<unsigned long long>{1, 7}));
}

TEST(Engine, NoCheckNoVerification) {
  RoundsOptions o;
  o.iters = 2;
  std::vector<std::vector<std::string>> logs;
  const auto r = run_on(1, o, &logs);
  for (const auto& line : logs[0]) EXPECT_EQ(line.find(" v"), std::string::npos) << line;
  EXPECT_TRUE(r[1].wrong.empty());
}

TEST(Engine, RanksCombinePerIterationAndWrongAddsUp) {
  RoundsOptions o;
  o.iters = 2;
  o.check = true;
  for (auto [c, want] : {std::pair{Combine::Max, std::vector<double>{12, 112}},
                         std::pair{Combine::Min, std::vector<double>{10, 110}},
                         std::pair{Combine::Mean, std::vector<double>{11, 111}},
                         std::pair{Combine::Rank0, std::vector<double>{10, 110}}}) {
    o.combine = c;
    std::vector<std::vector<std::string>> logs;
    const auto r = run_on(3, o, &logs);
    EXPECT_EQ(r[1].total, want) << static_cast<int>(c);
    // Wrong elements: rank + 1 over ranks 0..2 = 6, and 7 from each of 3 ranks = 21.
    EXPECT_EQ(r[1].wrong, (std::vector<unsigned long long>{6, 21}));
    for (const auto& l : logs) EXPECT_EQ(l.size(), 12u) << "every rank ran every slot";
  }
}

TEST(Engine, BadCountsAreRefused) {
  RoundsOptions o;
  o.iters = 0;
  EXPECT_THROW(run_on(1, o, nullptr), std::invalid_argument);
}

}  // namespace
