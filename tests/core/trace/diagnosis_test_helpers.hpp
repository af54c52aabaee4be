// Helpers of the diagnosis tests (test_diagnosis.cpp: the split of a step and its bounds;
// test_step_find.cpp: finding the steps): a trace built step by step with known causes, and the
// checks every diagnosis must pass.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "trace/diagnosis.hpp"
#include "trace/format.hpp"

namespace cco::test {

using cco::trace::AloneSource;
using cco::trace::Diagnosis;
using cco::trace::DiagnosisOptions;
using cco::trace::KernelCategory;
using cco::trace::KernelEvent;
using cco::trace::NvtxRange;
using cco::trace::StepParts;
using cco::trace::Trace;

inline constexpr int64_t us = 1000;
inline constexpr int64_t kStep = 1000 * us;  // steps start 1 ms apart

inline constexpr int64_t kAtStart = std::numeric_limits<int64_t>::min();  // launched when the step starts

inline const char* kGemm = "void gemm_kernel<__nv_bfloat16, 128>(int, int)";
inline const char* kAr = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
inline const char* kAg = "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)";

// Builds a trace step by step: kernels at times relative to the step's start (us), launched (by
// default) when the step starts, inside an NVTX range "train_step" that starts with the step.
struct Builder {
  Trace t;
  void kernel(int rank, int step, const char* name, int64_t a_us, int64_t b_us,
              int64_t launch_us = kAtStart) {
    KernelEvent k;
    k.name = name;
    k.category = cco::trace::classify_kernel(name);
    k.rank = rank;
    k.device = rank;
    k.stream = k.category == KernelCategory::Compute ? 7 : 13;
    const int64_t base = step * kStep + 10 * us;
    k.start_ns = base + a_us * us;
    k.end_ns = base + b_us * us;
    k.submitted_ns = base + (launch_us == kAtStart ? 0 : launch_us * us);
    k.grid = {132, 1, 1};
    k.block = {256, 1, 1};
    t.kernels.push_back(k);
  }
  // A copy on the copy engines (an NCCL collective under CTA policy zero) on stream 13; CUPTI's
  // copy records carry no launch times, unless `launch_time` keeps the step's start as one.
  void copy(int rank, int step, const char* kind, int64_t bytes, int64_t a_us, int64_t b_us,
            bool launch_time) {
    kernel(rank, step, kGemm, a_us, b_us);
    auto& c = t.kernels.back();
    c.name = std::string("memcpy ") + kind + " " + std::to_string(bytes) + " B (copy engine)";
    c.category = KernelCategory::Communication;
    c.copy = kind;
    c.bytes = bytes;
    c.stream = 13;
    c.grid = c.block = {1, 1, 1};
    if (!launch_time) c.queued_ns = c.submitted_ns = 0;
  }
  void range(int rank, int step) {
    NvtxRange r;
    r.name = "train_step";
    r.rank = rank;
    r.start_ns = step * kStep + 10 * us;  // the step's first kernel starts at once
    r.end_ns = step * kStep + 900 * us;   // every launch of the step happens in here
    t.ranges.push_back(r);
  }
  Trace done() {
    t.normalize();
    return t;
  }
};

inline void expect_adds_up(const Diagnosis& d) {
  ASSERT_FALSE(d.ranks.empty());
  for (const auto& r : d.ranks)
    for (const auto& p : r.steps) {
      EXPECT_EQ(p.parts_ns(), p.time_ns) << "rank " << p.rank << " step " << p.step;
      EXPECT_EQ(p.compute_alone_ns + p.compute_slowed_ns, p.compute_busy_ns);
      EXPECT_EQ(p.exposed_parts_ns(), p.exposed_ns);
      EXPECT_EQ(p.compute_busy_ns + p.exposed_ns + p.idle_ns, p.time_ns);
    }
}

// One rank's steps against its alone steps (VersusAlone), every figure as expected, and the parts
// adding up to the difference.
struct VersusExpected {
  std::size_t steps, alone_steps;
  double time_ms, alone_time_ms, compute_slowed_ms, compute_only_here_ms, exposed_ms, idle_ms;
};
inline void expect_versus(const cco::trace::VersusAlone& v, const VersusExpected& e) {
  EXPECT_EQ(v.steps, e.steps);
  EXPECT_EQ(v.alone_steps, e.alone_steps);
  EXPECT_NEAR(v.time_ms, e.time_ms, 1e-9);
  EXPECT_NEAR(v.alone_time_ms, e.alone_time_ms, 1e-9);
  EXPECT_NEAR(v.compute_slowed_ms, e.compute_slowed_ms, 1e-9);
  EXPECT_NEAR(v.compute_only_here_ms, e.compute_only_here_ms, 1e-9);
  EXPECT_NEAR(v.exposed_ms, e.exposed_ms, 1e-9);
  EXPECT_NEAR(v.idle_ms, e.idle_ms, 1e-9);
  EXPECT_NEAR(v.parts_ms(), v.difference_ms(), 1e-9);
}

inline const StepParts& typical(const Diagnosis& d, int rank = 0) {
  for (const auto& r : d.ranks)
    if (r.rank == rank) return r.steps[r.typical];
  throw std::runtime_error("no rank");
}

// The case: the same GEMM at 10 us alone and 15 us beside an all-reduce that is fully
// hidden. Per step: G G (alone, 10 each) then G G beside the all-reduce (15 each): 50 us, of
// which compute alone 40 and compute slowed 10; nothing exposed. The whole-trace analysis calls
// this perfect overlap (eff 1.00).
inline Trace slowed_compute(int steps = 8) {
  Builder b;
  for (int s = 0; s < steps; ++s) {
    b.range(0, s);
    b.kernel(0, s, kGemm, 0, 10);
    b.kernel(0, s, kGemm, 10, 20);
    b.kernel(0, s, kGemm, 20, 35);
    b.kernel(0, s, kGemm, 35, 50);
    b.kernel(0, s, kAr, 20, 50);
  }
  return b.done();
}

}  // namespace cco::test
