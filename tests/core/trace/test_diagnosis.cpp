// The per-step diagnosis (trace/diagnosis.hpp) on hand-built traces where every cause is known by
// construction: compute slowed beside a collective, a tail, a dependency, a skewed rank, a wait
// for SMs, a slowed collective. The expected split of each step is worked out in the comments;
// every step's parts must add up to its time exactly, so a cause dropped from the sum fails.
#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "trace/analysis.hpp"
#include "trace/diagnosis.hpp"
#include "model/limits.hpp"
#include "trace/format.hpp"
#include "diagnosis_test_helpers.hpp"

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


TEST(Diagnosis, ComputeSlowedBesideACollective) {
  const Trace t = slowed_compute();
  const auto whole = cco::trace::analyze(t);
  EXPECT_DOUBLE_EQ(whole.ranks[0].efficiency, 1.0) << "the whole-trace figure says: perfect";
  const Diagnosis d = cco::trace::diagnose(t);
  EXPECT_EQ(d.steps.source, "nvtx");
  EXPECT_EQ(d.steps.found, 8u);
  EXPECT_EQ(d.steps.warmup, 3);
  ASSERT_EQ(d.ranks.size(), 1u);
  EXPECT_EQ(d.ranks[0].steps.size(), 5u);
  expect_adds_up(d);
  const auto& p = typical(d);
  EXPECT_EQ(p.time_ns, 50 * us);
  EXPECT_EQ(p.compute_slowed_ns, 10 * us);
  EXPECT_EQ(p.compute_alone_ns, 40 * us);
  EXPECT_EQ(p.exposed_ns, 0);
  EXPECT_EQ(p.idle_ns, 0);
  // The slowed GEMMs never ran alone at their position: the same kernel elsewhere tells.
  EXPECT_EQ(p.compute_alone_sources.at(AloneSource::SameKernel), 30 * us);
  EXPECT_DOUBLE_EQ(p.compute_estimated, 1.0);
  const auto lb = cco::trace::lever_bounds(p);
  EXPECT_EQ(lb.sm_budget_ns, 10 * us);
  EXPECT_EQ(lb.priority_shaping_ns, 0);
  EXPECT_EQ(lb.ideal_ns, 40 * us);
  EXPECT_NE(d.sentence.find("100% hidden"), std::string::npos) << d.sentence;
  EXPECT_NE(d.sentence.find("mostly because compute runs slower beside communication (0.0 ms)"),
            std::string::npos)
      << d.sentence;  // 10 us prints as 0.0 ms; the cause is named
}

// A persistent GEMM runs one kernel and grid for every shape: per step three small GEMMs (10 us,
// call S) and one large one (30 us, call L) run alone, then a second large one beside a hidden
// all-reduce, at its time alone (30 us). Told apart by their call, nothing is slowed: 90 us of
// compute alone. Mixed (no calls), "alone" is the median of 10, 10, 10, 30 and the large GEMM
// looks 20 us slowed -- the fault the call labels remove.
Trace gemm_shapes(bool with_calls) {
  Builder b;
  const std::string small = "cublasLtMatmul bf16 NN m=1024 n=1024 k=1024";
  const std::string large = "cublasLtMatmul bf16 NN m=4096 n=1024 k=3072";
  for (int s = 0; s < 8; ++s) {
    b.range(0, s);
    for (int i = 0; i < 3; ++i) {
      b.kernel(0, s, kGemm, 10 * i, 10 * i + 10);
      if (with_calls) b.t.kernels.back().call = small;
    }
    b.kernel(0, s, kGemm, 30, 60);
    if (with_calls) b.t.kernels.back().call = large;
    b.kernel(0, s, kGemm, 60, 90);
    if (with_calls) b.t.kernels.back().call = large;
    b.kernel(0, s, kAr, 60, 90);
  }
  return b.done();
}

TEST(Diagnosis, GemmShapesAreToldApartByTheirCall) {
  const Diagnosis d = cco::trace::diagnose(gemm_shapes(true));
  expect_adds_up(d);
  const auto& p = typical(d);
  EXPECT_EQ(p.time_ns, 90 * us);
  EXPECT_EQ(p.compute_slowed_ns, 0);
  EXPECT_EQ(p.compute_alone_ns, 90 * us);
  EXPECT_EQ(p.exposed_ns, 0);
  // Without the calls the shapes mix: the check above can fail.
  const Diagnosis mixed = cco::trace::diagnose(gemm_shapes(false));
  EXPECT_EQ(typical(mixed).compute_slowed_ns, 20 * us);
}

// The step against the program without communication: per step here G G (10 each) alone, G G
// beside an all-reduce (15 each: 10 slowed in all), a kernel only this program runs (5), and the
// all-reduce's tail (5 exposed after the last compute): 60 us. Alone: G G G G, 40 us. The 20 us
// difference = compute slowed 10 + compute only here 5 + exposed 5 + idle 0, exactly.
TEST(Diagnosis, DifferenceToTheAloneTraceAddsUp) {
  Builder b, a;
  for (int s = 0; s < 8; ++s) {
    b.range(0, s);
    b.kernel(0, s, kGemm, 0, 10);
    b.kernel(0, s, kGemm, 10, 20);
    b.kernel(0, s, kGemm, 20, 35);
    b.kernel(0, s, kGemm, 35, 50);
    b.kernel(0, s, "void bucket_copy_kernel(float*)", 50, 55);
    b.kernel(0, s, kAr, 20, 60);
    a.range(0, s);
    for (int i = 0; i < 4; ++i) a.kernel(0, s, kGemm, 10 * i, 10 * i + 10);
  }
  const Trace t = b.done(), alone = a.done();
  DiagnosisOptions o;
  o.alone = {&alone};
  const Diagnosis d = cco::trace::diagnose(t, o);
  expect_adds_up(d);
  ASSERT_EQ(d.versus_alone.size(), 1u);
  const auto& v = d.versus_alone[0];
  expect_versus(v, {5, 5, 0.060, 0.040, 0.010, 0.005, 0.005, 0.0});
  const auto j = cco::trace::diagnosis_to_json(d);
  EXPECT_NEAR(j["versus_alone"][0]["difference_ms"].get<double>(), 0.020, 1e-9);
  // No alone trace: nothing to set against.
  EXPECT_TRUE(cco::trace::diagnose(t).versus_alone.empty());
  // An alone trace without steps (its whole window would be one "step"): not set against, said.
  Trace no_steps = alone;
  no_steps.ranges.clear();
  no_steps.source = "nosteps.json";
  DiagnosisOptions o2;
  o2.alone = {&no_steps};
  const Diagnosis d2 = cco::trace::diagnose(t, o2);
  EXPECT_TRUE(d2.versus_alone.empty());
  bool said = false;
  for (const auto& n : d2.notes) said = said || n.find("nosteps.json has no steps") != std::string::npos;
  EXPECT_TRUE(said) << ::testing::PrintToString(d2.notes);
}

// The steps of one configuration (cco run --compare with --trace) against an alone trace: the
// alone run has no configurations, so its own steps (ranges) are found and used, for the table of
// times alone and for the difference. The same program as above, its steps marked by the library.
TEST(Diagnosis, OneConfigurationAgainstTheAloneTracesOwnSteps) {
  Builder b, a;
  for (int s = 0; s < 11; ++s) {
    b.kernel(0, s, kGemm, 0, 10);
    b.kernel(0, s, kGemm, 10, 20);
    b.kernel(0, s, kGemm, 20, 35);
    b.kernel(0, s, kGemm, 35, 50);
    b.kernel(0, s, kAr, 20, 60);
    b.t.marks.push_back({s * kStep, 0, "cco step, epoch 1, config " + std::to_string(s % 2)});
    a.range(0, s);
    for (int i = 0; i < 4; ++i) a.kernel(0, s, kGemm, 10 * i, 10 * i + 10);
  }
  const Trace t = b.done(), alone = a.done();
  DiagnosisOptions o;
  o.steps.config = 0;
  o.steps.warmup = 0;
  o.alone = {&alone};
  const Diagnosis d = cco::trace::diagnose(t, o);
  for (const auto& n : d.notes) EXPECT_EQ(n.find("has no steps"), std::string::npos) << n;
  ASSERT_EQ(d.versus_alone.size(), 1u);
  EXPECT_NEAR(d.versus_alone[0].alone_time_ms, 0.040, 1e-9);
  EXPECT_NEAR(d.versus_alone[0].compute_slowed_ms, 0.010, 1e-9);
  EXPECT_NEAR(d.versus_alone[0].parts_ms(), d.versus_alone[0].difference_ms(), 1e-9);
}

// The twin (issue 43): `cco run --compare off,nocomm --trace` alternates the program's steps
// (config 0) with steps whose collectives move no data (config 1), both traced. Steps run back to
// back: config 0, 60 us: G G alone (10 each), G G beside the all-reduce (15 each), the all-reduce's
// tail 10 us exposed. Config 1, 40 us: G G G G at 10, the all-reduce reduced to one element (1 us,
// hidden under a GEMM). Set against the same trace's config-1 steps, the 20 us difference is
// compute slowed 10 + exposed 10, nothing only here, no idle.
TEST(Diagnosis, TheTwinIsAnotherConfigurationOfTheSameTrace) {
  Builder b;
  int64_t at = 0;  // us from the trace's first step
  for (int s = 0; s < 12; ++s) {
    const bool twin = s % 2 == 1;
    b.t.marks.push_back({(10 + at) * us, 0, "cco step, epoch 1, config " + std::to_string(s % 2)});
    if (twin) {
      for (int i = 0; i < 4; ++i) b.kernel(0, 0, kGemm, at + 10 * i, at + 10 * i + 10, at);
      b.kernel(0, 0, kAr, at + 20, at + 21, at);
      at += 40;
    } else {
      b.kernel(0, 0, kGemm, at, at + 10, at);
      b.kernel(0, 0, kGemm, at + 10, at + 20, at);
      b.kernel(0, 0, kGemm, at + 20, at + 35, at);
      b.kernel(0, 0, kGemm, at + 35, at + 50, at);
      b.kernel(0, 0, kAr, at + 20, at + 60, at);
      at += 60;
    }
  }
  b.t.marks.push_back({(10 + at) * us, 0, "cco step, epoch 1, config 0"});
  b.kernel(0, 0, kGemm, at, at + 10, at);
  const Trace t = b.done();
  DiagnosisOptions o;
  o.steps.config = 0;
  o.steps.warmup = 0;
  cco::trace::StepOptions twin;
  twin.source = "marks";
  twin.config = 1;
  twin.warmup = 0;
  o.alone = {&t};
  o.alone_steps = twin;
  const Diagnosis d = cco::trace::diagnose(t, o);
  ASSERT_EQ(d.versus_alone.size(), 1u) << ::testing::PrintToString(d.notes);
  const auto& v = d.versus_alone[0];
  expect_versus(v, {6, 6, 0.060, 0.040, 0.010, 0.0, 0.010, 0.0});
  EXPECT_NEAR(v.time_median_ms, 0.060, 1e-9);
  EXPECT_NEAR(v.alone_time_median_ms, 0.040, 1e-9);
  EXPECT_NEAR(v.compute_slowed_memory_ms + v.compute_slowed_sms_ms + v.compute_slowed_other_ms,
              v.compute_slowed_ms, 1e-9);
  // Without the configuration the alone side is the trace's own steps of every configuration:
  // config 1's kernels are then steps here too, and the difference is not the price.
  DiagnosisOptions all = o;
  all.alone_steps.reset();
  const Diagnosis d2 = cco::trace::diagnose(t, all);
  ASSERT_EQ(d2.versus_alone.size(), 1u);
  EXPECT_GT(d2.versus_alone[0].alone_steps, 6u);
}

// Calls in the trace but not in its alone trace (traced with CCO_TRACE_CALLS=0, or by a
// profiler): matching by call would find no GEMM alone, so calls are left out, with a note.
TEST(Diagnosis, CallsOnOneSideOnlyAreLeftOutAndSaid) {
  const Trace with = gemm_shapes(true), without = gemm_shapes(false);
  DiagnosisOptions o;
  o.alone = {&without};
  const Diagnosis d = cco::trace::diagnose(with, o);
  bool said = false;
  for (const auto& n : d.notes) said = said || n.find("names no library calls") != std::string::npos;
  EXPECT_TRUE(said) << ::testing::PrintToString(d.notes);
  // Every GEMM found its time alone in the alone trace (by position), none went unestimated.
  EXPECT_DOUBLE_EQ(typical(d).compute_estimated, 1.0);
}

TEST(TraceBreakdown, OneGroupPerKernelAndCall) {
  const auto with = cco::trace::kernel_breakdown(gemm_shapes(true));
  ASSERT_EQ(with.size(), 3u);  // the large GEMM, the all-reduce, the small GEMM
  EXPECT_EQ(with[0].name, kGemm);
  EXPECT_EQ(with[0].call, "cublasLtMatmul bf16 NN m=4096 n=1024 k=3072");
  EXPECT_EQ(with[0].count, 16u);
  EXPECT_EQ(cco::trace::breakdown_to_json(with)[0]["call"], with[0].call);
  const auto without = cco::trace::kernel_breakdown(gemm_shapes(false));
  ASSERT_EQ(without.size(), 2u);
  EXPECT_EQ(without[0].call, "");
  EXPECT_FALSE(cco::trace::breakdown_to_json(without)[0].contains("call"));
}

TEST(TraceFormat, CallLabelRoundTrips) {
  Trace t = gemm_shapes(true);
  const Trace back = cco::trace::trace_from_json(cco::trace::trace_to_json(t), "t.json");
  ASSERT_EQ(back.kernels.size(), t.kernels.size());
  std::size_t labelled = 0;
  for (std::size_t i = 0; i < t.kernels.size(); ++i) {
    EXPECT_EQ(back.kernels[i].call, t.kernels[i].call) << i;
    labelled += !back.kernels[i].call.empty();
  }
  EXPECT_EQ(labelled, 8u * 5u);
}

// Tail, dependency and an SM wait in one step (rank 0), every part by hand:
//   compute  [0, 20)  [30, 40)
//   comm A   launched at 5, waits for SMs until 20, runs [20, 30): exposed 10, between compute
//            kernels -> dependent; SM wait 5..20 = 15
//   comm B   [35, 60): overlapped 35..40, exposed 40..60 = 20 after the last compute -> tail
// time 60 = compute 30 + exposed 30 + idle 0.
TEST(Diagnosis, TailDependencyAndSmWait) {
  Builder b;
  for (int s = 0; s < 4; ++s) {
    b.range(0, s);
    b.kernel(0, s, kGemm, 0, 20);
    b.kernel(0, s, kGemm, 30, 40);
    b.kernel(0, s, kAr, 20, 30, 5);
    b.kernel(0, s, kAg, 35, 60, 35);
  }
  // A second comm stream for B, so A's stream order does not make B wait.
  for (auto& k : b.t.kernels)
    if (k.name == kAg) k.stream = 14;
  const Diagnosis d = cco::trace::diagnose(b.done());
  EXPECT_EQ(d.steps.warmup, 1);
  expect_adds_up(d);
  const auto& p = typical(d);
  EXPECT_EQ(p.time_ns, 60 * us);
  EXPECT_EQ(p.compute_busy_ns, 30 * us);
  EXPECT_EQ(p.exposed_ns, 30 * us);
  EXPECT_EQ(p.exposed_dependent_ns, 10 * us);
  EXPECT_EQ(p.exposed_tail_ns, 20 * us);
  EXPECT_EQ(p.exposed_rank_wait_ns, 0);
  EXPECT_EQ(p.exposed_slowed_ns, 0);
  EXPECT_EQ(p.sm_wait_ns, 15 * us);
  const auto lb = cco::trace::lever_bounds(p);
  EXPECT_EQ(lb.priority_shaping_ns, 15 * us);  // min(15, 30 - 0)
  EXPECT_EQ(lb.sm_budget_ns, 15 * us);  // nothing slowed; a collective off the SMs waits for none
  EXPECT_EQ(lb.scheduling_ns, 30 * us);
  EXPECT_EQ(lb.all_hidden_ns, 30 * us);
}

// Two ranks; rank 1 starts the collective 5 us after rank 0:
//   both: compute [0, 20) and [30, 50); the all-reduce ends at 30 on both
//   rank 0: all-reduce [20, 30): 5 waiting for rank 1 (rank wait), 5 dependent
//   rank 1: idle [20, 25), all-reduce [25, 30): 5 dependent
TEST(Diagnosis, RankSkew) {
  Builder b;
  for (int s = 0; s < 4; ++s)
    for (int r = 0; r < 2; ++r) {
      b.range(r, s);
      b.kernel(r, s, kGemm, 0, 20);
      b.kernel(r, s, kGemm, 30, 50);
      b.kernel(r, s, kAr, r == 0 ? 20 : 25, 30);
    }
  const Diagnosis d = cco::trace::diagnose(b.done());
  expect_adds_up(d);
  const auto& p0 = typical(d, 0);
  EXPECT_EQ(p0.exposed_rank_wait_ns, 5 * us);
  EXPECT_EQ(p0.exposed_dependent_ns, 5 * us);
  EXPECT_EQ(p0.slowest_peer, 1);
  EXPECT_EQ(p0.slowest_peer_lag_ns, 5 * us);
  EXPECT_EQ(cco::trace::lever_bounds(p0).rank_skew_ns, 5 * us);
  const auto& p1 = typical(d, 1);
  EXPECT_EQ(p1.exposed_rank_wait_ns, 0);
  EXPECT_EQ(p1.idle_ns, 5 * us);
  EXPECT_EQ(p1.exposed_dependent_ns, 5 * us);
}

// A collective slowed beside compute: alone (a trace given as --alone) it takes 10 us; beside a
// 10 us GEMM it takes 16: overlapped 10, exposed 6 after the GEMM. Of those 6, all are time
// beyond alone (16 - 10 = 6 <= 10 overlapped): exposed slowed 6, tail 0.
TEST(Diagnosis, SlowedCollectiveFromAnAloneTrace) {
  Builder b;
  for (int s = 0; s < 4; ++s) {
    b.range(0, s);
    b.kernel(0, s, kGemm, 0, 10);
    b.kernel(0, s, kAr, 0, 16);
  }
  Builder alone;
  for (int s = 0; s < 4; ++s) {
    alone.range(0, s);
    alone.kernel(0, s, kAr, 0, 10);
  }
  const Trace a = alone.done();
  DiagnosisOptions o;
  o.alone = {&a};
  const Diagnosis d = cco::trace::diagnose(b.done(), o);
  expect_adds_up(d);
  const auto& p = typical(d);
  EXPECT_EQ(p.exposed_ns, 6 * us);
  EXPECT_EQ(p.exposed_slowed_ns, 6 * us);
  EXPECT_EQ(p.exposed_tail_ns, 0);
  EXPECT_EQ(p.comm_slowed_ns, 6 * us);
  EXPECT_EQ(cco::trace::lever_bounds(p).sm_budget_ns, 6 * us);
  // Without the alone trace the collective never ran alone: no estimate, the 6 us are tail.
  const Diagnosis d2 = cco::trace::diagnose(b.done());
  const auto& q = typical(d2);
  EXPECT_EQ(q.exposed_slowed_ns, 0);
  EXPECT_EQ(q.exposed_tail_ns, 6 * us);
}

// The alone trace gives each op its own time: the GEMM at position 2 of the step takes 12 us
// alone (another shape under the same kernel), the others 10. Beside the all-reduce it takes 15:
// slowed 3, not the 5 that the same kernel's median (10) would say.
TEST(Diagnosis, AloneTraceMatchesOpsByPosition) {
  Builder alone;
  for (int s = 0; s < 6; ++s) {
    alone.range(0, s);
    alone.kernel(0, s, kGemm, 0, 10);
    alone.kernel(0, s, kGemm, 10, 20);
    alone.kernel(0, s, kGemm, 20, 32);
  }
  Builder b;
  for (int s = 0; s < 6; ++s) {
    b.range(0, s);
    b.kernel(0, s, kGemm, 0, 10);
    b.kernel(0, s, kGemm, 10, 20);
    b.kernel(0, s, kGemm, 20, 35);
    b.kernel(0, s, kAr, 20, 35);
  }
  const Trace a = alone.done();
  DiagnosisOptions o;
  o.alone = {&a};
  const Diagnosis d = cco::trace::diagnose(b.done(), o);
  expect_adds_up(d);
  EXPECT_EQ(typical(d).compute_slowed_ns, 3 * us);
  EXPECT_EQ(typical(d).compute_alone_sources.at(AloneSource::Baseline), 15 * us);
  const Diagnosis own = cco::trace::diagnose(b.done());
  EXPECT_EQ(typical(own).compute_slowed_ns, 5 * us);
}

TEST(Diagnosis, DroppedRecordsMakeItPartial) {
  Trace t = slowed_compute();
  t.dropped_records = 12;
  const Diagnosis d = cco::trace::diagnose(t);
  EXPECT_TRUE(d.partial);
  bool said = false;
  for (const auto& n : d.notes) said |= n.find("12 records were dropped") != std::string::npos;
  EXPECT_TRUE(said);
  const auto j = cco::trace::diagnosis_to_json(d);
  EXPECT_TRUE(j["partial"].get<bool>());
}

TEST(Diagnosis, JsonHasEveryPartAndBound) {
  const Diagnosis d = cco::trace::diagnose(slowed_compute());
  const auto j = cco::trace::diagnosis_to_json(d);
  EXPECT_EQ(j["schema"], "ccoverlap.step_diagnosis");
  const auto& p = j["ranks"][0]["typical"];
  int64_t sum = 0;
  for (const char* k : {"compute_alone_ns", "compute_slowed_ns", "exposed_rank_wait_ns",
                        "exposed_slowed_ns", "exposed_tail_ns", "exposed_dependent_ns", "idle_ns"})
    sum += p.at(k).get<int64_t>();
  EXPECT_EQ(sum, p.at("time_ns").get<int64_t>());
  EXPECT_EQ(p["bounds_ns"]["sm_budget_channels_copy_engines"].get<int64_t>(), 10 * us);
  EXPECT_EQ(j["ranks"][0]["steps"].size(), 5u);
}

// About the size of a real DDP trace (25,000 kernels per rank, 2 ranks): well under a second.
TEST(Diagnosis, LargeTraceIsFast) {
  Builder b;
  for (int s = 0; s < 30; ++s)
    for (int r = 0; r < 2; ++r) {
      b.range(r, s);
      for (int i = 0; i < 800; ++i) b.kernel(r, s, kGemm, i, i + 1);
      for (int i = 0; i < 40; ++i) b.kernel(r, s, kAr, 20 * i, 20 * i + 15);
    }
  const Trace t = b.done();
  const auto t0 = std::chrono::steady_clock::now();
  const Diagnosis d = cco::trace::diagnose(t);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  expect_adds_up(d);
  EXPECT_EQ(d.ranks.size(), 2u);
  RecordProperty("seconds", std::to_string(s));
}

}  // namespace


namespace {

// Collectives on the copy engines (NCCL's CTA policy zero) are copies, not kernels: they count as
// communication (busy, exposed, on the copy engines), never wait for SMs, and survive the file.
TEST(Diagnosis, CopyEngineCollectivesCountAsCommunication) {
  Builder b;
  for (int s = 0; s < 4; ++s) {
    b.range(0, s);
    b.kernel(0, s, kGemm, 0, 30);
    // A copy launched at the step's start while the GEMM runs: a kernel would wait for SMs.
    b.copy(0, s, "DtoD", 16777216, 10, 40, true);
  }
  const Trace t = b.done();
  // The file keeps it.
  const Trace back = cco::trace::trace_from_json(cco::trace::trace_to_json(t), "back");
  std::size_t copies = 0;
  for (const auto& k : back.kernels)
    if (k.is_copy()) {
      ++copies;
      EXPECT_EQ(k.copy, "DtoD");
      EXPECT_EQ(k.bytes, 16777216);
      EXPECT_EQ(k.category, KernelCategory::Communication);
    }
  EXPECT_EQ(copies, 4u);
  // No wait for SMs, though compute ran from its launch to its start.
  EXPECT_TRUE(cco::trace::communication_waits(t, 0).empty());
  const Diagnosis d = cco::trace::diagnose(back);
  expect_adds_up(d);
  const auto& p = typical(d);
  EXPECT_EQ(p.copy_engine_ns, 30 * us);
  EXPECT_EQ(p.comm_busy_ns, 30 * us);
  EXPECT_EQ(p.exposed_tail_ns, 10 * us);  // 30..40, after the GEMM
  EXPECT_EQ(p.sm_wait_ns, 0);
  // A copy kind the format does not know is refused with one line.
  auto j = cco::trace::trace_to_json(t);
  for (auto& e : j["traceEvents"])
    if (e.contains("args") && e["args"].contains("copy")) e["args"]["copy"] = "Teleport";
  EXPECT_THROW(cco::trace::trace_from_json(j, "bad"), cco::model::Error);
}

}  // namespace

namespace {

// The program's own device copies (DDP's bucket copies) run on its compute stream: they are
// compute, not NCCL's copy-engine communication, also in a trace written before that rule; the
// diagnosis names them (compute_copies) and bounds the bucket view by them. A copy on NCCL's own
// stream stays communication.
TEST(Diagnosis, CopiesOnTheComputeStreamAreTheProgramsOwn) {
  Builder b;
  for (int s = 0; s < 4; ++s) {
    b.range(0, s);
    b.kernel(0, s, kGemm, 0, 100);
    b.kernel(0, s, kAr, 20, 60);
    b.copy(0, s, "DtoD", 8192, 100, 130, true);  // after the GEMM, on the compute stream
    b.t.kernels.back().stream = 7;
    b.copy(0, s, "DtoD", 8192, 130, 135, true);  // NCCL's, on its stream
    b.kernel(0, s, kGemm, 135, 145);               // the optimizer, say
  }
  const Trace t = b.done();
  std::size_t own = 0, nccl = 0;
  for (const auto& k : t.kernels) {
    if (!k.is_copy()) continue;
    if (k.stream == 7) {
      EXPECT_EQ(k.category, KernelCategory::Compute);
      ++own;
    } else {
      EXPECT_EQ(k.category, KernelCategory::Communication);
      ++nccl;
    }
  }
  EXPECT_EQ(own, 4u);
  EXPECT_EQ(nccl, 4u);
  // A file written with the copy as communication reads back as compute.
  auto j = cco::trace::trace_to_json(t);
  for (auto& e : j["traceEvents"])
    if (e.contains("args") && e["args"].contains("copy")) e["args"]["kind"] = "communication";
  const Trace back = cco::trace::trace_from_json(j, "old");
  for (const auto& k : back.kernels) {
    if (k.is_copy()) {
      EXPECT_EQ(k.category, k.stream == 7 ? KernelCategory::Compute : KernelCategory::Communication);
    }
  }
  const Diagnosis d = cco::trace::diagnose(back);
  expect_adds_up(d);
  const auto& p = typical(d);
  EXPECT_EQ(p.compute_copies_ns, 30 * us);
  EXPECT_EQ(p.copy_engine_ns, 5 * us);
  EXPECT_EQ(p.compute_busy_ns, 140 * us);
  EXPECT_EQ(cco::trace::lever_bounds(p).framework_copies_ns, 30 * us);
  EXPECT_NE(d.sentence.find("the program's own device copies take"), std::string::npos) << d.sentence;
  EXPECT_EQ(cco::trace::diagnosis_to_json(d)["ranks"][0]["typical"]["bounds_ns"]["framework_copies"],
            30 * us);
  // A profiler's host-to-device copy and memset on that stream are compute work, but not copies
  // the bucket view drops: not in compute_copies.
  Trace h = back;
  for (auto& k : h.kernels)
    if (k.is_copy() && k.stream == 7) k.copy = (k.start_ns / us) % 2 ? "HtoD" : "Memset";
  const Diagnosis dh = cco::trace::diagnose(h);
  const auto& q = typical(dh);
  EXPECT_EQ(q.compute_busy_ns, 140 * us);
  EXPECT_EQ(q.compute_copies_ns, 0);
}

// Copies carry no launch times (CUPTI's copy records have none): they must not turn off the
// kernels' launch times for step windows (steps then spread to the next range), and a copy that
// starts inside a step's window extends it to its end.
TEST(Diagnosis, CopiesKeepLaunchTimeWindows) {
  Builder b;
  for (int s = 0; s < 4; ++s) {
    b.range(0, s);
    b.kernel(0, s, kGemm, 0, 30);
    b.copy(0, s, "PtoP", 4194304, 20, 50, false);
  }
  cco::trace::StepOptions so;
  so.warmup = 0;
  DiagnosisOptions o;
  o.steps = so;
  const Diagnosis d = cco::trace::diagnose(b.done(), o);
  ASSERT_EQ(d.ranks.size(), 1u);
  ASSERT_EQ(d.ranks[0].steps.size(), 4u);
  for (const auto& p : d.ranks[0].steps) {
    EXPECT_EQ(p.time_ns, 50 * us);  // to the copy's end, not to the next range
    EXPECT_EQ(p.exposed_tail_ns, 20 * us);
  }
  EXPECT_TRUE(d.steps.notes.empty()) << d.steps.notes.front();
}

}  // namespace

namespace {

// cco tune -- CMD's early stop (control_verdict): the steps of configuration 0 by the library's
// marks, the controls' bound against the step noise. Each step of configuration 0 lasts 40 + j
// us (j per step): a GEMM [0, 20 + j), an all-reduce launched at 5 us that starts when the GEMM
// ends and runs 10 us, then 10 us with no kernel. The all-reduce waited 15 + j us for SMs while
// compute ran and is exposed for 10 us (the tail), so priority and shaping can win
// min(SM wait, exposed) = 10 us. Configuration 1's steps are the same with j = 0.
Trace verdict_trace(const std::vector<int64_t>& jitter_us, bool comm) {
  Builder b;
  const int n = static_cast<int>(jitter_us.size());
  int64_t at = 0;  // the step's start, us after the first
  for (int s = 0; s <= 2 * n + 2; ++s) {  // warm-up 0, 1; then configs 0 and 1 by turns
    const bool warm = s < 2;
    const int config = warm ? 0 : (s - 2) % 2;
    b.t.marks.push_back({10 * us + at * us, 0,
                         "cco step, epoch 1, config " + std::to_string(config) +
                             (warm ? ", warm-up" : "")});
    if (s == 2 * n + 2) break;  // the last mark only ends the step before it
    const int64_t j = warm || config == 1 ? 0 : jitter_us[static_cast<std::size_t>((s - 2) / 2)];
    b.kernel(0, 0, kGemm, at, at + 20 + j, at + 1);
    if (comm) b.kernel(0, 0, kAr, at + 20 + j, at + 30 + j, at + 5);
    at += 40 + j;
  }
  return b.done();
}

TEST(Diagnosis, ControlVerdictStopsOnlyBelowTheNoise) {
  // Steady steps (spread 1-2 us): the 10 us bound is above the noise, the search goes on.
  const auto steady = cco::trace::control_verdict(verdict_trace({0, 1, 2, 3, 4, 5}, true), 0);
  EXPECT_EQ(steady.steps, 6u);
  EXPECT_NEAR(steady.bound_ms, 0.010, 1e-9);
  EXPECT_LT(steady.noise_ms, 0.005);
  EXPECT_FALSE(steady.nothing_to_win) << steady.sentence;
  EXPECT_EQ(steady.sentence.find("nothing to win"), std::string::npos) << steady.sentence;
  // Noisy steps (30 to 280 us): the same 10 us bound is far below half their interquartile range.
  const auto noisy =
      cco::trace::control_verdict(verdict_trace({0, 50, 100, 150, 200, 250}, true), 0);
  EXPECT_NEAR(noisy.bound_ms, 0.010, 1e-9);
  EXPECT_GT(noisy.noise_ms, 0.05);
  EXPECT_TRUE(noisy.nothing_to_win) << noisy.sentence;
  EXPECT_NE(noisy.sentence.find("nothing to win here"), std::string::npos) << noisy.sentence;
  // No communication at all: nothing for a control to act on, whatever the noise.
  const auto none = cco::trace::control_verdict(verdict_trace({0, 1, 2, 3, 4, 5}, false), 0);
  EXPECT_EQ(none.bound_ms, 0);
  EXPECT_TRUE(none.nothing_to_win) << none.sentence;
  // Too few steps, or dropped records: never a stop.
  EXPECT_FALSE(cco::trace::control_verdict(verdict_trace({0, 1, 2}, false), 0).nothing_to_win);
  Trace dropped = verdict_trace({0, 50, 100, 150, 200, 250}, true);
  dropped.dropped_records = 3;
  EXPECT_FALSE(cco::trace::control_verdict(dropped, 0).nothing_to_win);
  // Configuration 1's steps (steady, 30 us, no jitter) are not configuration 0's.
  EXPECT_FALSE(cco::trace::control_verdict(verdict_trace({0, 50, 100, 150, 200, 250}, true), 1)
                   .nothing_to_win);
  // No marks: no steps of any configuration, no stop.
  Trace bare = verdict_trace({0, 50, 100, 150, 200, 250}, false);
  bare.marks.clear();
  EXPECT_FALSE(cco::trace::control_verdict(bare, 0).nothing_to_win);
}

}  // namespace

// An alone trace whose steps are another unit (the program without gradient sync, stepped by the
// period of the few collectives it still runs: a slice of a step): set against it, the split would
// mean nothing. Refused in one note, no versus_alone; the same alone trace stepped like this one
// still matches (above).
TEST(Diagnosis, AnAloneTraceOfOtherStepsIsRefused) {
  Builder b, a;
  for (int s = 0; s < 8; ++s) {
    b.range(0, s);
    for (int i = 0; i < 4; ++i) b.kernel(0, s, kGemm, 10 * i, 10 * i + 10);
    b.kernel(0, s, kAr, 20, 60);
    // The alone trace's "steps": one GEMM each (its ranges cut every real step in four).
    for (int i = 0; i < 4; ++i) {
      a.t.ranges.push_back({});
      auto& r = a.t.ranges.back();
      r.name = "train_step";
      r.rank = 0;
      r.start_ns = s * kStep + (10 + 10 * i) * us;
      r.end_ns = s * kStep + (20 + 10 * i) * us;
      a.kernel(0, s, kGemm, 10 * i, 10 * i + 10, 10 * i);
    }
  }
  const Trace t = b.done();
  Trace alone = a.done();
  alone.source = "slices.json";
  DiagnosisOptions o;
  o.alone = {&alone};
  const Diagnosis d = cco::trace::diagnose(t, o);
  EXPECT_TRUE(d.versus_alone.empty());
  int said = 0;
  for (const auto& n : d.notes)
    if (n.find("the alone trace slices.json has other steps than this trace (rank 0: 4 compute "
               "kernels per step here, 1 there; 25% of this trace's step runs in its step and "
               "100% of its step here)") != std::string::npos)
      ++said;
  EXPECT_EQ(said, 1) << ::testing::PrintToString(d.notes);
  expect_adds_up(d);
}
