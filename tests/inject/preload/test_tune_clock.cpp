// The step clock's online search (cco tune -- CMD) and the rotation's check (cco run --compare,
// CCO_COMPARE_DIAGNOSE) against the fake driver: stages decided by the deciding rank and followed
// by the others, the period held until it settles, the diagnosis, the end at the decision, and
// the waits of a following rank.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/log.hpp"
#include "model/read_file.hpp"
#include "preload/step_clock.hpp"
#include "step_clock_fixture.hpp"
#include "steps/record.hpp"
#include "steps/schedule.hpp"

using cco::preload::StepClock;
using cco::preload::StepClockOptions;
using cco::test::keep_line;
using cco::test::S;
using cco::test::TuneClockTest;
using cco::test::warned;

TEST_F(TuneClockTest, HalvesToTheFastestAndEveryRankFollowsTheDecider) {
  auto d = make(options(true));
  std::vector<int> dec_active, fol_active;
  std::vector<int> fol_switches;
  auto f = std::make_unique<StepClock>(fake.api(), options(false),
                                       [&](int c) { fol_switches.push_back(c); },
                                       [this] { return now; });
  // 3 candidates -> 2 -> 1: 2 warm-up steps, 3 x 6, 2 x 6, then the winner.
  for (int k = 0; k < 45; ++k) {
    marked(*d, {100.0, 90.0, 120.0}, 2.0, k);
    f->mark(0, S(0x88), false);  // the follower reads the decision the decider just wrote
    dec_active.push_back(d->active());
    fol_active.push_back(f->active());
  }
  EXPECT_EQ(dec_active, fol_active);
  const auto t = d->tune_state();
  ASSERT_EQ(t.decisions.size(), 2u);
  EXPECT_EQ(t.decisions[0].stage, 1);
  EXPECT_EQ(t.decisions[0].at_step, 20u);
  EXPECT_EQ(t.decisions[0].set, (std::vector<int>{0, 1}));  // "slow" dropped
  EXPECT_EQ(t.decisions[0].metric, "gpu");
  EXPECT_TRUE(t.decisions[1].final);
  EXPECT_EQ(t.decisions[1].at_step, 32u);
  EXPECT_EQ(t.decisions[1].set, (std::vector<int>{1}));
  EXPECT_EQ(t.decisions[1].why, "one left");
  EXPECT_EQ(t.decider.device_name, "Fake H100");
  EXPECT_EQ(t.decider.cuda_driver, "13.0");
  EXPECT_EQ(dec_active.back(), 1);
  EXPECT_GE(fake.event_syncs, 2);  // the decider drained each stage
  // The decision file says the same (cco tune reads it).
  const auto file = cco::steps::read_tune_file(dir + "/tune.json");
  ASSERT_NE(file.final_decision(), nullptr);
  EXPECT_EQ(file.final_decision()->set, (std::vector<int>{1}));
  EXPECT_EQ(file.epoch, t.epoch);
  // The step file: each step under the candidate the schedule gave it.
  const auto steps = d->snapshot("exit");
  for (const auto& s : steps.steps)
    EXPECT_EQ(s.config, dec_active[static_cast<std::size_t>(s.step)]) << s.step;
}

TEST_F(TuneClockTest, KeepsTheBaselineWhenNothingIsFasterBeyondNoise) {
  auto o = options(true);
  o.configs = {"off", "same"};
  auto d = make(o);
  for (int k = 0; k < 30; ++k) marked(*d, {100.0, 99.8}, 3.0, k);
  const auto t = d->tune_state();
  ASSERT_EQ(t.decisions.size(), 1u);
  EXPECT_TRUE(t.decisions[0].final);
  EXPECT_EQ(t.decisions[0].set, (std::vector<int>{0}));
  EXPECT_NE(t.decisions[0].why.find("baseline kept"), std::string::npos) << t.decisions[0].why;
  EXPECT_EQ(d->active(), 0);
}

// The decider's diagnosis of the first stage: "nothing to win" ends the search there with the
// baseline, though "fast" is clearly faster (the verdict rules); the follower agrees. A verdict
// that finds something to win leaves the search as it was. Either way it is asked once, and its
// sentence reaches the decision file.
TEST_F(TuneClockTest, NothingToWinFromTheDiagnosisEndsTheSearchWithTheBaseline) {
  for (const bool nothing : {true, false}) {
    SCOPED_TRACE(nothing ? "nothing to win" : "something to win");
    std::remove((dir + "/tune.json").c_str());
    auto o = options(true);
    int asked = 0, done = 0;
    o.tune.diagnose = [&](bool settled) -> std::optional<cco::steps::StageVerdict> {
      ++asked;
      EXPECT_TRUE(settled);  // marked steps
      return cco::steps::StageVerdict{nothing, nothing ? "below the noise" : "10 ms to win"};
    };
    o.tune.search_done = [&] { ++done; };
    std::vector<std::string> marks;
    o.on_boundary = [&](const char* name, int) { marks.push_back(name); };
    auto d = make(o);
    auto f = std::make_unique<StepClock>(fake.api(), options(false), [](int) {},
                                         [this] { return now; });
    std::vector<int> dec_active, fol_active;
    for (int k = 0; k < 45; ++k) {
      marked(*d, {100.0, 90.0, 120.0}, 2.0, k);
      f->mark(0, S(0x88), false);
      dec_active.push_back(d->active());
      fol_active.push_back(f->active());
    }
    EXPECT_EQ(dec_active, fol_active);
    EXPECT_EQ(asked, 1);
    EXPECT_EQ(done, 1);  // tracing for the diagnosis stops at the final decision
    // The search's warm-up steps are marked as such (the diagnosis leaves them out).
    ASSERT_GE(marks.size(), 4u);
    EXPECT_EQ(marks[0], "cco step, epoch 1, config 0, warm-up");
    EXPECT_EQ(marks[1], "cco step, epoch 1, config 0, warm-up");
    EXPECT_EQ(marks[2], "cco step, epoch 1, config " + std::to_string(dec_active[2]));
    const auto t = d->tune_state();
    const auto file = cco::steps::read_tune_file(dir + "/tune.json");
    EXPECT_EQ(file.diagnosis, nothing ? "below the noise" : "10 ms to win");
    ASSERT_FALSE(t.decisions.empty());
    if (nothing) {
      ASSERT_EQ(t.decisions.size(), 1u);
      EXPECT_TRUE(t.decisions[0].final);
      EXPECT_EQ(t.decisions[0].at_step, 20u);
      EXPECT_EQ(t.decisions[0].set, (std::vector<int>{0}));
      EXPECT_EQ(t.decisions[0].why.rfind("nothing to win here", 0), 0u) << t.decisions[0].why;
      EXPECT_EQ(t.decisions[0].scores.size(), 3u);  // stage 0's, for the record
      EXPECT_EQ(dec_active.back(), 0);
    } else {
      ASSERT_EQ(t.decisions.size(), 2u);
      EXPECT_EQ(t.decisions[1].set, (std::vector<int>{1}));
      EXPECT_EQ(dec_active.back(), 1);
    }
  }
}

// A period from collectives that may not be the step yet -- one collective (DDP's equally sized
// buckets), or two buckets by turns with once the collective that ends a real step (an irregular
// step after the warm-up) -- is not settled: the diagnosis is asked (tracing stops) but its
// verdict, even "nothing to win", is not used. A clean period of eight collectives is settled.
// (Steps from collectives are diagnosed when the search starts, after kSettleCollectives regular
// collectives: the held steps since the warm-up. A clean period of eight collectives whose
// process has launched more than kDiagnosisLaunchBudget kernels meanwhile: tracing stops there,
// undiagnosed.)
TEST_F(TuneClockTest, AnUnsettledPeriodIsNotDiagnosed) {
  for (const int pattern : {1, 2, 3, 4}) {
    SCOPED_TRACE("pattern " + std::to_string(pattern));
    std::remove((dir + "/tune.json").c_str());
    auto o = options(true);
    std::vector<bool> asked;
    o.tune.diagnose = [&](bool settled) {
      asked.push_back(settled);
      return std::optional<cco::steps::StageVerdict>(cco::steps::StageVerdict{true, "nothing"});
    };
    uint64_t launches = 0;
    if (pattern == 4) o.tune.launches = [&] { return launches; };
    auto d = make(o);
    for (int k = 0; k < 520; ++k) {
      launches += cco::preload::kDiagnosisLaunchBudget / 200;  // past the budget at collective
                                                                // 200, before the search (280)
      if (pattern == 1) {
        d->collective(11u, 0, S(0x77), false);
      } else if (pattern == 2) {
        d->collective(k % 2 ? 22u : 11u, 0, S(0x77), false);
        if (k == 20) d->collective(99u, 0, S(0x77), false);  // ends a "real" step, after the warm-up
      } else {
        d->collective(11u + static_cast<uint64_t>(k % 8), 0, S(0x77), false);
      }
      now += 1'000'000;
      fake.gpu_ms += 1.0;
    }
    const auto t = d->tune_state();
    ASSERT_FALSE(t.decisions.empty());
    ASSERT_EQ(asked.size(), 1u);  // once: when the search starts, or past the launch budget
    EXPECT_EQ(asked[0], pattern == 3);
    // The verdict of settled steps counts at the first stage's end: "nothing" stops the search.
    EXPECT_EQ(t.decisions[0].final, pattern == 3) << t.decisions[0].why;
    EXPECT_EQ(t.decisions[0].at_step, t.stages[0].end());
    EXPECT_EQ(t.diagnosis.empty(), pattern != 3) << t.diagnosis;
  }
}

// FSDP2's step as its collectives show it: an all-gather per block in forward (equal blocks: one
// signature, so a period of one collective locks at once and repeats through the forward pass),
// an all-gather and a reduce-scatter per block in backward, one all-reduce. The search must not
// run on the blocks (issue 43: tune compared 3.6 ms slices of a 168 ms step): nothing switches
// before the whole step's period is locked, the search then starts after kSettleCollectives
// regular collectives, and its decisions are made on whole steps (the diagnosis finds the period
// settled). A program whose step really is one collective starts after that many steps.
TEST_F(TuneClockTest, TheSearchRunsOnTheWholeStepNotOnBlocks) {
  using cco::preload::kSettleCollectives;
  std::vector<uint64_t> fsdp;
  for (int b = 0; b < 8; ++b) fsdp.push_back(11u);  // forward all-gathers
  for (int b = 0; b < 8; ++b) {
    fsdp.push_back(11u);  // backward: all-gather, then reduce-scatter
    fsdp.push_back(22u);
  }
  fsdp.push_back(33u);  // the loss's all-reduce
  for (const bool one : {false, true}) {
    SCOPED_TRACE(one ? "one collective per step" : "FSDP2-like step of 25 collectives");
    std::remove((dir + "/tune.json").c_str());
    auto o = options(true);
    std::vector<bool> asked;
    uint64_t locks = 0, fed = 0, whole_at = 0, first_switch = 0, asked_at = 0;
    o.tune.diagnose = [&](bool settled) {
      asked.push_back(settled);
      asked_at = fed;
      return std::optional<cco::steps::StageVerdict>(cco::steps::StageVerdict{false, "10 ms"});
    };
    auto d = make(o);
    const std::vector<uint64_t> unit = one ? std::vector<uint64_t>{11u} : fsdp;
    for (int k = 0; k < 2000 && d->tune_state().decisions.size() < 2; ++k) {
      for (const uint64_t sig : unit) {
        d->collective(sig, 0, S(0x77), false);
        ++fed;
        const auto f = d->snapshot("running");
        if (f.locks != locks) {
          locks = f.locks;
          whole_at = fed;
        }
        if (d->active() != 0 && first_switch == 0) {
          first_switch = fed;
          EXPECT_EQ(f.period, static_cast<int>(unit.size())) << "the search started on blocks";
        }
        now += 1'000'000;
        fake.gpu_ms += 1.0;
      }
    }
    ASSERT_GT(first_switch, 0u) << "the search never started";
    // FSDP2-like: blocks first (a period of 1, then of 2 in backward), then the whole step.
    if (one)
      EXPECT_EQ(locks, 1u);
    else
      EXPECT_GE(locks, 2u);
    EXPECT_GE(first_switch - whole_at, kSettleCollectives);
    EXPECT_LE(first_switch - whole_at, kSettleCollectives + 5 * unit.size());  // not later
    const auto t = d->tune_state();
    ASSERT_EQ(t.decisions.size(), 2u);
    ASSERT_EQ(asked.size(), 1u);
    EXPECT_EQ(asked[0], !one);  // a period of one collective is never called settled
    // Diagnosed (tracing stopped) on the held steps, before the search's first switch.
    EXPECT_GT(asked_at, whole_at);
    EXPECT_LE(asked_at, first_switch);
    EXPECT_EQ(t.diagnosis, one ? "" : "10 ms");
    EXPECT_GT(t.warmup, o.warmup);  // the warm-up held the search back, and says so
    EXPECT_EQ(t.stages[0].start, t.warmup);
  }
}

// cco tune -- CMD without --online: at the final decision every rank (the decider and a
// follower) writes its step file, ended "exit", then ends itself, at the same step.
TEST_F(TuneClockTest, EveryRankEndsItselfAtTheFinalDecisionsStep) {
  const std::string p0 = dir + "/steps-rank0.json", p1 = dir + "/steps-rank1.json";
  std::vector<std::pair<int, uint64_t>> ended;  // (rank, steps in its file when it ended)
  auto with_end = [&](bool decider, const std::string& path) {
    auto o = options(decider);
    o.path = path;
    o.tune.end_process = [&, path, decider] {
      ended.emplace_back(decider ? 0 : 1, cco::steps::read_step_file(path).steps.size());
      EXPECT_EQ(cco::steps::read_step_file(path).ended, "exit");
    };
    return o;
  };
  auto d = make(with_end(true, p0));
  auto f = std::make_unique<StepClock>(fake.api(), with_end(false, p1), [](int) {},
                                       [this] { return now; });
  for (int k = 0; k < 45; ++k) {
    marked(*d, {100.0, 90.0, 120.0}, 2.0, k);
    f->mark(0, S(0x88), false);
  }
  ASSERT_EQ(ended.size(), 2u);
  EXPECT_EQ(ended[0].first, 0);
  EXPECT_EQ(ended[1].first, 1);
  const auto t = d->tune_state();
  ASSERT_NE(t.final_decision(), nullptr);
  EXPECT_EQ(ended[0].second, t.final_decision()->at_step);  // every step before the decision's
  EXPECT_EQ(ended[1].second, t.final_decision()->at_step);
  d.reset();
  f.reset();
  std::remove(p0.c_str());
  std::remove(p1.c_str());
}

TEST_F(TuneClockTest, TheTimeBudgetEndsTheSearchAtTheNextStage) {
  auto o = options(true);
  o.tune.time_ns = 1;  // spent at once
  auto d = make(o);
  for (int k = 0; k < 40; ++k) marked(*d, {100.0, 80.0, 120.0}, 0.5, k);
  const auto t = d->tune_state();
  ASSERT_EQ(t.decisions.size(), 1u);
  EXPECT_TRUE(t.decisions[0].final);
  EXPECT_EQ(t.decisions[0].at_step, 20u);  // after stage 0, not stage 1
  EXPECT_EQ(t.decisions[0].why, "time budget");
  EXPECT_EQ(t.decisions[0].set, (std::vector<int>{1}));
}

TEST_F(TuneClockTest, AFollowerWithoutADeciderGivesUpAndKeepsTheBaseline) {
  auto o = options(false);
  o.tune.wait_ns = 30'000'000;  // 30 ms
  auto f = make(o);
  const std::vector<int> active = actives_over_marks(*f, 30);
  // Stage 0 needs no decision; at its end (step 20) the wait times out: candidate 0 from then on.
  EXPECT_EQ(active[2], 0);
  EXPECT_EQ(active[3], 1);
  for (std::size_t k = 20; k < active.size(); ++k) EXPECT_EQ(active[k], 0) << k;
  EXPECT_TRUE(f->tune_state().decisions.empty());
}


// Candidates that cap NCCL channels must agree on every rank: a follower whose decision is late
// waits on (saying so) instead of going on alone under the baseline, then follows the decider.
TEST_F(TuneClockTest, AFollowerWaitsOnWhenTheCandidatesMustAgree) {
  // The decider's whole run first, its decision file put aside.
  std::vector<int> dec_active;
  {
    auto d = make(options(true));
    for (int k = 0; k < 45; ++k) {
      marked(*d, {100.0, 90.0, 120.0}, 2.0, k);
      dec_active.push_back(d->active());
    }
    ASSERT_EQ(d->tune_state().decisions.size(), 2u);
  }
  const std::string file = dir + "/tune.json", aside = dir + "/ready.json";
  ASSERT_EQ(std::rename(file.c_str(), aside.c_str()), 0);
  auto o = options(false);
  o.tune.wait_ns = 30'000'000;  // 30 ms: the decision comes later than that
  o.tune.must_agree = true;
  auto f = make(o);
  warned().clear();
  cco::preload::reset_warnings();
  cco::preload::set_log_sink(keep_line);
  std::thread late([&] {  // only the file system is shared with the follower
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    std::rename(aside.c_str(), file.c_str());
  });
  std::vector<int> active;
  for (int k = 0; k < 45; ++k) {
    f->mark(0, S(0x88), false);
    active.push_back(f->active());
  }
  late.join();
  cco::preload::set_log_sink(nullptr);
  std::remove(aside.c_str());
  const auto t = f->tune_state();
  ASSERT_EQ(t.decisions.size(), 2u) << "the follower gave up instead of waiting";
  EXPECT_EQ(active, dec_active) << "every step under the decider's candidate";
  EXPECT_EQ(active.back(), 1);
  bool said = false;
  for (const auto& l : warned())
    said = said || l.find("still no decision for step 20") != std::string::npos;
  EXPECT_TRUE(said) << "no line said that the follower waits on";
}

// The deciding rank died before its decision (issue 46: a channel comparison waited for ever): a
// follower that must agree stops waiting once the process the decider file names is gone from
// this host, keeps the baseline and says why; while that process lives, it waits on. The decider
// writes the file at its first boundary.
TEST_F(TuneClockTest, AFollowerStopsWaitingWhenTheDeciderHasEnded) {
  {
    auto d = make(options(true));
    d->mark(0, S(0x77), false);
    const std::string text = cco::model::read_file(cco::preload::decider_file(dir + "/tune.json"), 4096);
    EXPECT_EQ(text.rfind(std::to_string(::getpid()) + " ", 0), 0u) << text;
  }
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);  // reaped: no process has that pid now
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  cco::model::write_file(cco::preload::decider_file(dir + "/tune.json"),
                         std::to_string(child) + " " + host + "\n");
  auto o = options(false);
  o.tune.wait_ns = 30'000'000;
  o.tune.must_agree = true;
  auto f = make(o);
  warned().clear();
  cco::preload::reset_warnings();
  cco::preload::set_log_sink(keep_line);
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<int> active = actives_over_marks(*f, 30);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  cco::preload::set_log_sink(nullptr);
  EXPECT_LT(s, 5.0) << "the follower waited on for a decider that had ended";
  for (std::size_t k = 20; k < active.size(); ++k) EXPECT_EQ(active[k], 0) << k;
  bool said = false;
  for (const auto& l : warned())
    said = said || l.find("the deciding rank has ended without a decision for step 20") != std::string::npos;
  EXPECT_TRUE(said) << "no line said why the follower stopped waiting";
}

// ---- the rotation's check (cco run --compare, CCO_COMPARE_DIAGNOSE) -----------------------------

namespace {

class CheckClockTest : public TuneClockTest {
 protected:
  void TearDown() override {
    std::remove((dir + "/check.json").c_str());
    TuneClockTest::TearDown();
  }
  StepClockOptions rotation(bool decider) {
    StepClockOptions o;
    o.configs = {"off", "fast"};
    o.warmup = 2;
    o.flush_ns = 0;
    o.rank = decider ? 0 : 1;
    o.check_rounds = 6;
    o.tune.decider = decider;
    o.tune.path = dir + "/check.json";
    o.tune.wait_ns = 2'000'000'000;
    return o;
  }
  // A decider whose diagnosis records whether the steps were settled and finds nothing to win.
  std::unique_ptr<StepClock> asking_decider(std::vector<bool>* asked) {
    std::remove((dir + "/check.json").c_str());
    auto o = rotation(true);
    o.tune.diagnose = [asked](bool settled) {
      asked->push_back(settled);
      return std::optional<cco::steps::StageVerdict>(cco::steps::StageVerdict{true, "nothing"});
    };
    return make(o);
  }
  std::unique_ptr<StepClock> follower() {
    return std::make_unique<StepClock>(fake.api(), rotation(false), [](int) {}, [this] { return now; });
  }
};

}  // namespace

// After the warm-up (2 steps) and 6 rounds of 2 (12 steps), the decider's diagnosis decides at
// step 14: "nothing to win" stops the rotation there on every rank (the baseline from then on,
// though "fast" is faster: the verdict rules); a verdict with something to win lets it go on.
// Either way every rank records the same check in its step file, with the diagnosis.
TEST_F(CheckClockTest, NothingToWinStopsTheRotationOnEveryRank) {
  for (const bool nothing : {true, false}) {
    SCOPED_TRACE(nothing ? "nothing to win" : "something to win");
    std::remove((dir + "/check.json").c_str());
    auto o = rotation(true);
    int asked = 0;
    o.tune.diagnose = [&](bool settled) -> std::optional<cco::steps::StageVerdict> {
      ++asked;
      EXPECT_TRUE(settled);  // marked steps
      return cco::steps::StageVerdict{nothing, nothing ? "below the noise" : "10 ms to win"};
    };
    auto d = make(o);
    auto f = std::make_unique<StepClock>(fake.api(), rotation(false), [](int) {},
                                         [this] { return now; });
    std::vector<int> dec_active, fol_active;
    for (int k = 0; k < 40; ++k) {
      marked(*d, {100.0, 90.0}, 2.0, k);
      f->mark(0, S(0x88), false);  // the follower reads the decision the decider just wrote
      dec_active.push_back(d->active());
      fol_active.push_back(f->active());
    }
    EXPECT_EQ(dec_active, fol_active);
    EXPECT_EQ(asked, 1);
    EXPECT_GE(fake.event_syncs, 1);  // the decider drained the GPU before the diagnosis
    // Before the check: the rotation's schedule; from step 14 on: 'off' alone, or the schedule.
    for (std::size_t k = 0; k < dec_active.size(); ++k) {
      const int planned = cco::steps::config_of_step(k, 2, 2);
      EXPECT_EQ(dec_active[k], nothing && k >= 14 ? 0 : planned) << k;
    }
    for (StepClock* c : {d.get(), f.get()}) {
      const auto file = c->snapshot("exit");
      ASSERT_TRUE(file.check.has_value());
      EXPECT_EQ(file.check->at_step, 14u);
      EXPECT_EQ(file.check->stopped, nothing);
      EXPECT_EQ(file.check->diagnosis, nothing ? "below the noise" : "10 ms to win");
      EXPECT_EQ(file.check->why.rfind(nothing ? "nothing to win here" : "the controls may win", 0), 0u)
          << file.check->why;
      // The step file says the same when read back (cco run reads it).
      const auto back = cco::steps::parse_step_file(cco::steps::to_json(file));
      ASSERT_TRUE(back.check.has_value());
      EXPECT_EQ(back.check->at_step, 14u);
      EXPECT_EQ(back.check->stopped, nothing);
      EXPECT_EQ(back.check->why, file.check->why);
    }
  }
}

// No diagnosis (the decider traced nothing: --trace, CUPTI missing): the rotation goes on, and
// says why. A period from collectives that may not be the step yet is not checked until it
// settles (DDP: the relock to the whole step). Without the check the rotation never waits for
// anyone (the files of a check are not written).
TEST_F(CheckClockTest, WithoutAVerdictTheRotationGoesOn) {
  {
    auto d = make(rotation(true));  // no diagnose function
    for (int k = 0; k < 30; ++k) marked(*d, {100.0, 90.0}, 2.0, k);
    const auto file = d->snapshot("exit");
    ASSERT_TRUE(file.check.has_value());
    EXPECT_FALSE(file.check->stopped);
    EXPECT_NE(file.check->why.find("no diagnosis"), std::string::npos) << file.check->why;
    EXPECT_EQ(d->active(), cco::steps::config_of_step(29, 2, 2));
  }
  {
    std::vector<bool> asked;
    auto d = asking_decider(&asked);
    auto f = follower();
    std::vector<int> dec_active, fol_active;
    for (int k = 0; k < 120; ++k) {  // one collective per step: DDP's equal buckets, unsettled
      for (StepClock* c : {d.get(), f.get()}) c->collective(11u, 0, S(0x77), false);
      dec_active.push_back(d->active());
      fol_active.push_back(f->active());
      now += 1'000'000;
      fake.gpu_ms += 1.0;
    }
    EXPECT_TRUE(asked.empty());  // not yet: its tracing goes on until the period settles
    EXPECT_FALSE(d->snapshot("exit").check.has_value());
    EXPECT_FALSE(f->snapshot("exit").check.has_value());
    EXPECT_EQ(dec_active, fol_active);  // the follower met the decider at the check point
    EXPECT_EQ(cco::steps::read_tune_file(dir + "/check.json").decisions.at(0).why.rfind("not settled yet", 0), 0u);
    EXPECT_EQ(d->active(), cco::steps::config_of_step(d->snapshot("exit").steps.size(), 2, 2));
  }
  {
    // No check point ever (one collective per step, never settled): the decider's tracing for
    // the diagnosis still stops, after kDiagnosisBoundaryBudget boundaries.
    std::remove((dir + "/check.json").c_str());
    auto o = rotation(true);
    o.check_rounds = 1000;  // a check point beyond the run
    std::vector<bool> asked;
    o.tune.diagnose = [&](bool settled) {
      asked.push_back(settled);
      return std::optional<cco::steps::StageVerdict>();
    };
    auto d = make(o);
    for (uint64_t k = 0; k < cco::preload::kDiagnosisBoundaryBudget + 50; ++k) {
      d->collective(11u, 0, S(0x77), false);
      now += 1000;
    }
    ASSERT_EQ(asked.size(), 1u);
    EXPECT_FALSE(asked[0]);
  }
  {
    // DDP-like: one bucket per "step" at first, then the whole step of three collectives, seen
    // three times, relocks: the check comes 2 + 12 steps into the new epoch, on every rank.
    std::vector<bool> asked;
    auto d = asking_decider(&asked);
    auto f = follower();
    for (int k = 0; k < 40; ++k)  // 40 steps of buckets 11, 11, 11, then 44 closing the step
      for (uint64_t sig : {11u, 11u, 11u, 44u})
        for (StepClock* c : {d.get(), f.get()}) {
          c->collective(sig, 0, S(0x77), false);
          now += 1'000'000;
          fake.gpu_ms += 1.0;
        }
    ASSERT_EQ(asked.size(), 1u);
    EXPECT_TRUE(asked[0]);
    for (StepClock* c : {d.get(), f.get()}) {
      const auto file = c->snapshot("exit");
      EXPECT_EQ(file.period, 4);
      ASSERT_TRUE(file.check.has_value());
      EXPECT_EQ(file.check->at_step, 14u);
      EXPECT_TRUE(file.check->stopped);
      EXPECT_EQ(c->active(), 0);
    }
  }
  {
    auto o = rotation(true);
    o.check_rounds = 0;
    o.tune.path = dir + "/never.json";
    const int syncs = fake.event_syncs;
    auto d = make(o);
    for (int k = 0; k < 30; ++k) marked(*d, {100.0, 90.0}, 2.0, k);
    EXPECT_FALSE(d->snapshot("exit").check.has_value());
    EXPECT_EQ(::access((dir + "/never.json").c_str(), F_OK), -1);
    EXPECT_EQ(fake.event_syncs, syncs);  // never drained
  }
}

// A follower whose decider never decides gives up after its wait and keeps the baseline (the
// comparison then finds the ranks disagree, if the decider went on, and refuses it).
TEST_F(CheckClockTest, AFollowerWithoutADeciderKeepsTheBaseline) {
  auto o = rotation(false);
  o.tune.wait_ns = 30'000'000;  // 30 ms
  auto f = make(o);
  const std::vector<int> active = actives_over_marks(*f, 24);
  for (std::size_t k = 0; k < 14; ++k) EXPECT_EQ(active[k], cco::steps::config_of_step(k, 2, 2)) << k;
  for (std::size_t k = 14; k < active.size(); ++k) EXPECT_EQ(active[k], 0) << k;
  const auto file = f->snapshot("exit");
  ASSERT_TRUE(file.check.has_value());
  EXPECT_TRUE(file.check->stopped);
  EXPECT_NE(file.check->why.find("no decision from the deciding rank"), std::string::npos);
}
