// Finding a program's steps for the diagnosis (trace/step_find.cpp): from the period of the
// collectives, NVTX ranges, PyTorch profiler steps, the preload library's marks; warm-up, ranks with
// other step counts, host ranges on an idle GPU, kernels joining the range of their launch call.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "diagnosis_test_helpers.hpp"
#include "model/limits.hpp"
#include "trace/diagnosis.hpp"
#include "trace/format.hpp"

namespace {

using namespace cco::test;  // the builders and checks of diagnosis_test_helpers.hpp
using cco::trace::AloneSource;
using cco::trace::Diagnosis;
using cco::trace::DiagnosisOptions;
using cco::trace::KernelCategory;
using cco::trace::KernelEvent;
using cco::trace::NvtxRange;
using cco::trace::StepParts;
using cco::trace::Trace;

// Steps from the rhythm of the collectives: no range, no mark; each step issues an all-gather
// and two all-reduces, with compute between.
TEST(Diagnosis, StepsFromCollectives) {
  Builder b;
  for (int s = 0; s < 10; ++s) {
    b.kernel(0, s, kGemm, 0, 100, 0);
    b.kernel(0, s, kAg, 0, 20, 1);
    b.kernel(0, s, kAr, 20, 40, 2);
    b.kernel(0, s, kAr, 100, 110, 3);
  }
  const Diagnosis d = cco::trace::diagnose(b.done());
  EXPECT_EQ(d.steps.source, "collectives");
  EXPECT_NE(d.steps.detail.find("(3 per step)"), std::string::npos) << d.steps.detail;
  ASSERT_EQ(d.ranks.size(), 1u);
  ASSERT_FALSE(d.ranks[0].steps.empty());
  expect_adds_up(d);
  // Windows tile the timeline from one step's first kernel to the next's: 1 ms each.
  for (const auto& p : d.ranks[0].steps) EXPECT_EQ(p.time_ns, kStep);
  EXPECT_EQ(typical(d).exposed_tail_ns, 10 * us);
  EXPECT_EQ(typical(d).idle_ns, kStep - 110 * us);
}

TEST(Diagnosis, NoStepsGivesTheWholeWindowWithANote) {
  Builder b;
  b.kernel(0, 0, kGemm, 0, 10);
  b.kernel(0, 0, kAr, 5, 20);
  const Diagnosis d = cco::trace::diagnose(b.done());
  EXPECT_EQ(d.steps.source, "none");
  ASSERT_EQ(d.ranks.size(), 1u);
  EXPECT_EQ(d.ranks[0].steps.size(), 1u);
  EXPECT_EQ(typical(d).time_ns, 20 * us);
  expect_adds_up(d);
  ASSERT_FALSE(d.steps.notes.empty());
  EXPECT_NE(d.steps.notes[0].find("whole window"), std::string::npos);
}

TEST(Diagnosis, RanksWithDifferentStepCountsAreCutToTheFewest) {
  Builder b;
  for (int s = 0; s < 8; ++s)
    for (int r = 0; r < 2; ++r) {
      if (r == 1 && s >= 6) continue;  // rank 1's trace ends early
      b.range(r, s);
      b.kernel(r, s, kGemm, 0, 10);
    }
  const Diagnosis d = cco::trace::diagnose(b.done());
  EXPECT_EQ(d.steps.found, 6u);
  ASSERT_EQ(d.ranks.size(), 2u);
  EXPECT_EQ(d.ranks[0].steps.size(), d.ranks[1].steps.size());
  ASSERT_FALSE(d.steps.notes.empty());
  EXPECT_NE(d.steps.notes[0].find("different numbers of steps"), std::string::npos);
}

TEST(Diagnosis, ExplicitSourcesAndWarmup) {
  const Trace t = slowed_compute();
  cco::trace::StepOptions o;
  o.source = "collectives";  // one all-reduce per step: period 1
  o.warmup = 0;
  const auto s = cco::trace::find_steps(t, o);
  EXPECT_EQ(s.source, "collectives");
  o.source = "nvtx";
  o.name = "no_such_range";
  const auto n = cco::trace::find_steps(t, o);
  EXPECT_EQ(n.source, "none");
  o.source = "bogus";
  EXPECT_THROW(cco::trace::find_steps(t, o), cco::model::Error);
  o.source = "nvtx";
  o.name = "train_*";
  o.warmup = 100;
  const auto w = cco::trace::find_steps(t, o);
  EXPECT_EQ(w.ranks.at(0).size(), 0u);
}

// A PyTorch profiler trace: kernels (cat "kernel") and the GPU-side step annotations. The steps
// keep the profiler's own numbers (ProfilerStep#551...: 551...) beside their index, in the JSON
// and as the step the tables show (issue 45).
TEST(Diagnosis, ProfilerStepsFromAKinetoTrace) {
  nlohmann::json j;
  j["distributedInfo"] = {{"rank", 1}};
  auto& ev = j["traceEvents"];
  for (int s = 0; s < 5; ++s) {
    const double base = 1000.0 * s;
    ev.push_back({{"ph", "X"}, {"cat", "gpu_user_annotation"}, {"name", "ProfilerStep#" + std::to_string(551 + s)},
                  {"pid", 0}, {"tid", 7}, {"ts", base}, {"dur", 50.0}});
    ev.push_back({{"ph", "X"}, {"cat", "kernel"}, {"name", kGemm}, {"pid", 0}, {"tid", 7},
                  {"ts", base}, {"dur", 40.0}, {"args", {{"device", 0}, {"stream", 7}}}});
    ev.push_back({{"ph", "X"}, {"cat", "kernel"}, {"name", kAr}, {"pid", 0}, {"tid", 13},
                  {"ts", base + 30}, {"dur", 20.0}, {"args", {{"device", 0}, {"stream", 13}}}});
  }
  const Trace t = cco::trace::trace_from_json(j, "kineto.json");
  const Diagnosis d = cco::trace::diagnose(t);
  EXPECT_EQ(d.steps.source, "profiler");
  ASSERT_EQ(d.ranks.size(), 1u);
  EXPECT_EQ(d.ranks[0].rank, 1);
  expect_adds_up(d);
  EXPECT_EQ(typical(d, 1).time_ns, 50 * us);
  EXPECT_EQ(typical(d, 1).exposed_tail_ns, 10 * us);
  for (const auto& p : d.ranks[0].steps) {
    EXPECT_EQ(p.program_step, 551 + p.step);
    EXPECT_EQ(p.shown_step(), p.program_step);
  }
  const auto j2 = cco::trace::diagnosis_to_json(d);
  EXPECT_EQ(j2["ranks"][0]["typical"]["program_step"], typical(d, 1).program_step);
  EXPECT_GE(typical(d, 1).program_step, 551);
}

}  // namespace

namespace {

// A step that starts on an idle GPU starts when its range starts, as the program's own event
// recorded there would: the host's 8 us before the first kernel are idle time of the step. A step
// whose range starts while the GPU still runs the previous step's work starts when that ends.
TEST(Diagnosis, HostRangeStartsTheStepOnAnIdleGpu) {
  Builder b;
  for (int s = 0; s < 4; ++s) {
    b.range(0, s);
    b.kernel(0, s, kGemm, 8, 20, 7);  // launched 7 us and started 8 us after the range starts
  }
  b.t.ranges.back().start_ns -= 40 * us;  // the last range starts while the GPU is still busy...
  b.kernel(0, 3, kGemm, -35, -20, -48);   // ...with a kernel launched before it
  cco::trace::StepOptions so;
  so.warmup = 0;
  DiagnosisOptions o;
  o.steps = so;
  const Diagnosis d = cco::trace::diagnose(b.done(), o);
  expect_adds_up(d);
  ASSERT_EQ(d.ranks[0].steps.size(), 4u);
  EXPECT_EQ(d.ranks[0].steps[0].time_ns, 20 * us);
  EXPECT_EQ(d.ranks[0].steps[0].idle_ns, 8 * us);
  // The last step: the range starts at -40 us, the earlier kernel runs [-35, -20) us; the step's
  // own kernel starts at 18 us after its window opens at -20 us.
  EXPECT_EQ(d.ranks[0].steps[3].begin_ns, 3 * kStep + 10 * us - 20 * us);
}

}  // namespace

namespace {

// Kernels belong to the step whose range holds their launch call (CUPTI's queued time), not the
// time the driver pushed them to the GPU (submitted), which lags behind when the launch queue is
// full: here the step's second kernel is queued inside the range and submitted 1 ms later.
TEST(Diagnosis, KernelsJoinTheRangeOfTheirLaunchCall) {
  Builder b;
  for (int s = 0; s < 4; ++s) {
    b.range(0, s);
    b.kernel(0, s, kGemm, 0, 10);
    b.kernel(0, s, kGemm, 10, 30);
    auto& k = b.t.kernels.back();
    k.queued_ns = k.submitted_ns;
    k.submitted_ns += kStep;  // after the range ended
  }
  cco::trace::StepOptions so;
  so.warmup = 0;
  DiagnosisOptions o;
  o.steps = so;
  const Diagnosis d = cco::trace::diagnose(b.done(), o);
  ASSERT_EQ(d.ranks[0].steps.size(), 4u);
  for (const auto& p : d.ranks[0].steps) EXPECT_EQ(p.time_ns, 30 * us);
}

}  // namespace

namespace {

// cco run --compare with --trace: the library's marks name each step's configuration, and the
// diagnosis of one configuration takes only its steps (steps of config 1 are 20 us longer).
TEST(Diagnosis, StepsOfOneConfigurationFromTheLibrarysMarks) {
  Builder b;
  for (int s = 0; s < 13; ++s) {  // the 13th only ends the 12th
    const int config = (s / 2) % 2;  // A A B B A A ...
    b.kernel(0, s, kGemm, 0, config == 1 ? 60 : 40, 1);
    b.t.marks.push_back({s * kStep + 10 * us, 0,
                         "cco step, epoch 1, config " + std::to_string(config) +
                             (s < 2 ? ", warm-up" : "")});  // the rotation's warm-up: left out
  }
  const Trace t = b.done();
  cco::trace::StepOptions so;
  so.config = 1;
  so.warmup = 0;
  const auto st = cco::trace::find_steps(t, so);
  EXPECT_EQ(st.source, "marks");
  ASSERT_EQ(st.ranks.at(0).size(), 6u);
  for (const auto& w : st.ranks.at(0)) EXPECT_EQ(w.config, 1);
  DiagnosisOptions o;
  o.steps = so;
  EXPECT_EQ(typical(cco::trace::diagnose(t, o)).compute_busy_ns, 60 * us);
  o.steps.config = 0;
  EXPECT_EQ(typical(cco::trace::diagnose(t, o)).compute_busy_ns, 40 * us);
  so.config = 0;
  EXPECT_EQ(cco::trace::find_steps(t, so).ranks.at(0).size(), 4u) << "steps 4, 5, 8, 9: not 0, 1";
  // Without the library's marks nothing can say which configuration a step ran under.
  Trace bare = t;
  bare.marks.clear();
  const Diagnosis none = cco::trace::diagnose(bare, o);
  EXPECT_TRUE(none.ranks.empty());
  EXPECT_NE(none.sentence.find("cannot be told apart"), std::string::npos) << none.sentence;
}

}  // namespace
