// The search both tuners run (tune/search.hpp), driven by a fake subject whose "measurements"
// come from a made-up landscape: which rows each round screens, when the hill climb stops, which
// rows reach the final round and how many samples it takes.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <sstream>

#include "tune/search.hpp"
#include "tune/space.hpp"

using namespace cco;
using bench::Mode;
using bench::RowSpec;

namespace {

/// A landscape over NCCL CTA counts: time falls towards `best_ctas` (on cta_ladder()), then
/// rises; priority rows are 1 us faster; every other row takes 1000 us. Neighbours are
/// common_neighbours on a 132-SM device from NCCL's default of 24 CTAs.
struct Fake {
  int best_ctas = 48;
  std::vector<std::vector<RowSpec>> rounds;  // every screen() call's rows
  double clock_s = 0;                        // elapsed_s(), moved by each call
  double per_round_s = 1;
  std::vector<RowSpec> space = {{Mode::Concurrent}, {Mode::Priority}};

  double time_of(const RowSpec& r) const {
    if (r.mode != Mode::Concurrent && r.mode != Mode::Priority) return 1000;
    const auto& ladder = tune::cta_ladder();
    const int c = r.controls.nccl_ctas && *r.controls.nccl_ctas > 0 ? *r.controls.nccl_ctas : 24;
    const auto at = [&](int v) { return std::find(ladder.begin(), ladder.end(), v) - ladder.begin(); };
    const double steps = std::abs(static_cast<double>(at(c) - at(best_ctas)));
    return 100 + 10 * steps - (r.mode == Mode::Priority ? 1 : 0);
  }
  std::vector<tune::Screened> measure(const std::vector<RowSpec>& rows) {
    clock_s += per_round_s;
    std::vector<tune::Screened> out;
    for (const auto& r : rows)
      if (r.mode != Mode::Seq) out.push_back({r, time_of(r)});
    return out;
  }
  tune::SearchSubject subject() {
    tune::SearchSubject s;
    s.screen_space = [this](RowSpec& pred, std::size_t& n) {
      pred = {Mode::Priority};
      n = space.size();
      std::vector<RowSpec> rows = {{Mode::Seq}};
      rows.insert(rows.end(), space.begin(), space.end());
      return measure(rows);
    };
    s.neighbours = [](const RowSpec& r) {
      std::vector<RowSpec> out;
      tune::common_neighbours(r, 132, 24, out);
      return out;
    };
    s.screen = [this](const std::vector<RowSpec>& rows) {
      rounds.push_back(rows);
      return measure(rows);
    };
    s.iteration_us = [](const std::vector<RowSpec>& rows, const std::vector<tune::Screened>&) {
      return 1e6 * static_cast<double>(rows.size());  // one second per row
    };
    s.elapsed_s = [this] { return clock_s; };
    return s;
  }
};

RowSpec ctas(Mode m, int c) {
  RowSpec r{m};
  r.controls.nccl_ctas = bench::budget_from_number(c);
  return r;
}

bool has(const std::vector<RowSpec>& rows, const RowSpec& r) {
  return std::find(rows.begin(), rows.end(), r) != rows.end();
}

}  // namespace

TEST(Search, ClimbReachesAnOptimumTwoStepsAwayAndStopsWhenTheBestHolds) {
  Fake f;  // optimum at 48 CTAs: 24 -> 32 (round 1) -> 48 (round 2) -> nothing better (round 3)
  tune::SearchOptions o;
  o.refine = 1;
  o.rounds = 5;
  o.budget_s = 1000;
  o.iters = 30;
  std::ostringstream log;
  const auto r = tune::search(f.subject(), o, &log);
  ASSERT_EQ(r.space_size, 2u);
  // Every round screens seq first, then only rows never screened before.
  for (const auto& rows : f.rounds) {
    ASSERT_FALSE(rows.empty());
    EXPECT_EQ(rows.front().mode, Mode::Seq);
  }
  EXPECT_TRUE(has(f.rounds.at(0), ctas(Mode::Priority, 32)));
  EXPECT_TRUE(has(f.rounds.at(1), ctas(Mode::Priority, 48)));
  // The third round finds nothing better than 48 and ends the climb.
  EXPECT_EQ(r.rounds_run, 3);
  EXPECT_EQ(f.rounds.size(), 3u);
  std::vector<RowSpec> all;
  for (const auto& s : r.screened) {
    EXPECT_FALSE(has(all, s.spec)) << s.spec.label() << " screened twice";
    all.push_back(s.spec);
  }
  const auto best = r.screened[tune::fastest_first(r.screened).front()].spec;
  EXPECT_EQ(best, ctas(Mode::Priority, 48));
  EXPECT_TRUE(has(r.finalists, best));
  EXPECT_EQ(r.finalists.front().mode, Mode::Seq);
  EXPECT_NE(log.str().find("best so far priority ctas=48"), std::string::npos) << log.str();
}

TEST(Search, RoundsAndRefineBoundTheClimb) {
  Fake f;
  f.best_ctas = 64;  // three steps away: one round reaches 32 only
  tune::SearchOptions o;
  o.refine = 1;
  o.rounds = 1;
  o.budget_s = 1000;
  auto r = tune::search(f.subject(), o, nullptr);
  EXPECT_EQ(r.rounds_run, 1);
  EXPECT_EQ(r.screened[tune::fastest_first(r.screened).front()].spec, ctas(Mode::Priority, 32));

  Fake g;
  o.refine = 0;
  o.rounds = 3;
  r = tune::search(g.subject(), o, nullptr);
  EXPECT_EQ(r.rounds_run, 0);
  EXPECT_TRUE(g.rounds.empty());
  EXPECT_EQ(r.refined, 0u);
}

TEST(Search, NoClimbOnceHalfTheBudgetIsSpent) {
  Fake f;
  f.per_round_s = 60;  // the first round alone takes more than half of 110 s
  tune::SearchOptions o;
  o.budget_s = 110;
  std::ostringstream log;
  const auto r = tune::search(f.subject(), o, &log);
  EXPECT_EQ(r.rounds_run, 0);
  EXPECT_TRUE(f.rounds.empty());
  EXPECT_NE(log.str().find("no time left for the neighbours"), std::string::npos) << log.str();
}

TEST(Search, SamePathRunsEveryRoundWhateverTheTimesSay) {
  // One process per rank: a rank other than 0 knows no results (its screen returns nothing),
  // and rank 0's clock is over budget; both must still run every round.
  Fake f;
  f.per_round_s = 1000;
  auto s = f.subject();
  s.screen_space = [&](RowSpec&, std::size_t&) { return std::vector<tune::Screened>{}; };
  s.screen = [&](const std::vector<RowSpec>& rows) {
    f.rounds.push_back(rows);
    return std::vector<tune::Screened>{};
  };
  tune::SearchOptions o;
  o.rounds = 4;
  o.budget_s = 10;
  o.iters = 30;
  o.same_path = true;
  const auto r = tune::search(s, o, nullptr);
  EXPECT_EQ(r.rounds_run, 4);
  ASSERT_EQ(f.rounds.size(), 4u);
  for (const auto& rows : f.rounds) EXPECT_EQ(rows.size(), 2u);  // seq and one row to join with
  EXPECT_EQ(r.final_iters, 30);  // no time-based shrinking either
}

TEST(Search, ThreadsModeStopsWhenNoNeighbourIsLeft) {
  Fake f;
  auto s = f.subject();
  s.neighbours = [](const RowSpec&) { return std::vector<RowSpec>{}; };
  tune::SearchOptions o;
  o.budget_s = 1000;
  const auto r = tune::search(s, o, nullptr);
  EXPECT_EQ(r.rounds_run, 0);
  EXPECT_TRUE(f.rounds.empty());
}

TEST(Search, FinalistsHoldReferencesBestShapesDefaultAndTheRunnableBest) {
  std::vector<tune::Screened> s;
  RowSpec shape{Mode::Shape, 2};
  RowSpec shape_window{Mode::ShapePriority, 3};
  shape_window.controls.nccl_reg = model::CommRegister::Window;  // not on the run's own communicator: not "the paper's alone"
  RowSpec shape_prio{Mode::ShapePriority, 1};
  RowSpec green{Mode::Priority};
  green.controls.green_sms = 64;  // not run-applicable
  s.push_back({green, 10});
  s.push_back({shape_window, 20});
  s.push_back({ctas(Mode::Concurrent, 32), 30});
  s.push_back({shape, 90});
  s.push_back({shape_prio, 95});
  RowSpec predicted{Mode::ShapePriority, 2};
  const auto f = tune::choose_finalists(s, predicted, 1);
  ASSERT_GE(f.size(), 3u);
  EXPECT_EQ(f[0].mode, Mode::Seq);
  EXPECT_EQ(f[1].mode, Mode::Concurrent);
  EXPECT_EQ(f[2].mode, Mode::Priority);
  EXPECT_TRUE(has(f, green));                       // the best (top 1)
  EXPECT_FALSE(has(f, shape_window));               // second best, beyond top 1
  EXPECT_TRUE(has(f, shape));                       // best shape on NCCL's own CTAs
  EXPECT_TRUE(has(f, shape_prio));                  // best shape+priority on them
  EXPECT_TRUE(has(f, predicted));                   // the model's default, never screened
  EXPECT_TRUE(has(f, ctas(Mode::Concurrent, 32)));  // the best `cco run` can apply whole
  EXPECT_EQ(f.size(), 8u);
}

TEST(Search, FinalSamplesShrinkToTheBudgetButNotBelowFive) {
  EXPECT_EQ(tune::final_samples(5, 30, 100, 1.0, false), 30);    // 35 s fit in 100
  EXPECT_EQ(tune::final_samples(5, 30, 20, 1.0, false), 15);     // 20 s: 15 after the warm-up
  EXPECT_EQ(tune::final_samples(5, 30, 2, 1.0, false), 5);       // never below 5
  EXPECT_EQ(tune::final_samples(5, 3, 2, 1.0, false), 3);        // nor above -n
  EXPECT_EQ(tune::final_samples(5, 30, 2, 1.0, true), 30);       // same path: as asked
  EXPECT_EQ(tune::final_samples(5, 30, 2, 0.0, false), 30);      // unknown time: as asked
  EXPECT_EQ(tune::final_samples(5, 30, -50, 1.0, false), 5);     // overspent
}

TEST(Search, FinalRoundShrinksFromTheSubjectsEstimate) {
  Fake f;  // 2 finalists' worth of rows and more: the estimate is 1.25 s per row per iteration
  tune::SearchOptions o;
  o.refine = 0;
  o.budget_s = 61;  // 60 s left after the first round
  o.warmup = 0;
  o.iters = 30;
  const auto r = tune::search(f.subject(), o, nullptr);
  const double per_iter = 1.25 * static_cast<double>(r.finalists.size());
  EXPECT_NEAR(r.final_iters, 60 / per_iter, 1.0);  // 16, or 15 after rounding
  EXPECT_LT(r.final_iters, 30);
}

// The subject both tuners make (screening_subject), over a fake runner: round 1 screens seq, the
// space and the model's default, keeping the default and the notes; later rounds screen the rows
// given; an iteration is estimated from what the runner last set.
TEST(Search, ScreeningSubjectScreensTheSpaceAndEstimatesAnIteration) {
  struct Ctx {
    int sms = 132;
  };
  using Provider = std::function<std::vector<RowSpec>(const Ctx&, std::vector<std::string>&)>;
  tune::Screening s;
  std::vector<std::vector<RowSpec>> rounds;
  auto run = [&](const Provider& provider) {
    std::vector<std::string> notes;
    rounds.push_back(provider(Ctx{}, notes));
    s.fixed_us = 200;
    s.row_us = 10;
    std::vector<tune::Screened> out;
    for (const auto& r : rounds.back())
      if (r.mode != Mode::Seq) out.push_back({r, 100});
    return out;
  };
  auto space = [](const Ctx& c, std::vector<std::string>& notes) {
    notes.push_back("on " + std::to_string(c.sms) + " SMs");
    return std::pair{std::vector<RowSpec>{{Mode::Concurrent}, {Mode::Priority}},
                     RowSpec{Mode::Shape, 2, -1}};
  };
  const auto subject = tune::screening_subject(s, run, space, std::chrono::steady_clock::now());
  RowSpec predicted;
  std::size_t space_size = 0;
  const auto screened = subject.screen_space(predicted, space_size);
  EXPECT_EQ(predicted, (RowSpec{Mode::Shape, 2, -1}));
  EXPECT_EQ(s.predicted, predicted);
  EXPECT_EQ(space_size, 3u);  // the space and the default
  ASSERT_EQ(rounds.back().size(), 4u);
  EXPECT_EQ(rounds.back().front().mode, Mode::Seq);
  EXPECT_EQ(screened.size(), 3u);
  EXPECT_EQ(s.notes, std::vector<std::string>{"on 132 SMs"});
  const std::vector<RowSpec> again = {{Mode::Seq}, {Mode::Priority}};
  EXPECT_EQ(subject.screen(again).size(), 1u);
  EXPECT_EQ(rounds.back(), again);
  // The fixed part, then each screened row's median and row_us (an unscreened row adds nothing).
  EXPECT_DOUBLE_EQ(subject.iteration_us({{Mode::Priority}, {Mode::Shape, 5, -1}}, screened), 310);
  EXPECT_GE(subject.elapsed_s(), 0.0);
  EXPECT_FALSE(subject.neighbours);
}
