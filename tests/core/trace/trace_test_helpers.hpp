// Helpers of the trace model's tests (test_trace_model.cpp: classification, intervals, the
// analysis, NVTX; test_trace_format.cpp: the file, its reader's errors, gzip): kernels built by
// hand and the check of a reader's one-line error.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "model/types.hpp"
#include "trace/format.hpp"

namespace cco::test {

using cco::trace::KernelCategory;
using cco::trace::KernelEvent;
using cco::trace::Trace;

constexpr auto kComp = KernelCategory::Compute;
constexpr auto kComm = KernelCategory::Communication;

inline KernelEvent K(int rank, int64_t stream, KernelCategory cat, int64_t start, int64_t end,
              int64_t launch = 0) {
  KernelEvent k;
  k.name = cat == kComm
               ? "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
               : "void gemm_kernel<__nv_bfloat16, 128>(int, int)";
  k.category = cat;
  k.rank = rank;
  k.device = rank;
  k.stream = stream;
  k.start_ns = start;
  k.end_ns = end;
  k.submitted_ns = launch;
  return k;
}

inline Trace make(std::vector<KernelEvent> ks) {
  Trace t;
  t.kernels = std::move(ks);
  t.normalize();
  return t;
}

// Expects `f` to throw model::Error whose message contains every part.
template <class F>
void expect_error(F f, std::initializer_list<const char*> parts) {
  try {
    f();
    ADD_FAILURE() << "no error thrown";
  } catch (const cco::model::Error& e) {
    const std::string w = e.what();
    for (const char* p : parts)
      EXPECT_NE(w.find(p), std::string::npos) << "'" << p << "' not in: " << w;
  }
}

// A trace with every field set: two ranks, streams with and without priority, marks, notes.
inline Trace rich() {
  Trace t;
  cco::trace::RankInfo r0;
  r0.rank = 0;
  r0.device = 0;
  r0.device_name = "NVIDIA H200";
  r0.arch = "sm_90";
  r0.sm_count = 132;
  r0.host = "vm";
  r0.pid = 4242;
  auto r1 = r0;
  r1.rank = 1;
  r1.device = 1;
  t.ranks = {r0, r1};
  t.streams = {{0, 0, 13, -5, "comm"}, {0, 0, 14, 0, "compute"}};
  const int64_t base = 1'763'780'000'123'456'789;  // CUPTI-like absolute ns
  auto k = K(0, 14, kComp, base, base + 1'173'201, base - 5000);
  k.grid = {16, 16, 1};
  k.block = {256, 1, 1};
  k.registers = 63;
  k.static_smem = 16896;
  k.dynamic_smem = 40449;
  k.blocks_per_sm = 3;
  k.queued_ns = base - 9000;
  k.correlation_id = 77;
  k.name = "void gemm<\"q\" & 'x'>(int)";  // characters JSON and XML must escape
  auto c = K(0, 13, kComm, base + 300'000, base + 1'209'503, base - 4000);
  c.grid = {24, 1, 1};
  c.block = {640, 1, 1};
  c.registers = 96;
  auto c1 = K(1, 7, kComm, base + 1000, base + 2001);
  t.kernels = {k, c, c1};
  t.marks = {{base - 100, -1, "concurrent, iteration 0"}, {base + 50, 1, "rank 1 <mark>"}};
  t.dropped_records = 3;
  t.notes = {"launch timestamps on"};
  t.normalize();
  return t;
}

}  // namespace cco::test
