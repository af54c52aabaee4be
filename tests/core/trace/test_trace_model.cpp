// The trace model: kernel classification, interval arithmetic, the overlap analysis on
// synthetic traces with hand-computed answers, the Chrome/Perfetto JSON round trip, and every
// error path of the reader.
#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>

#include <cmath>
#include <cstdio>
#include <iterator>
#include <string>
#include <typeinfo>

#include "model/limits.hpp"
#include "trace/analysis.hpp"
#include "model/read_file.hpp"
#include "trace/format.hpp"
#include "trace/gzip.hpp"
#include "trace/nvtx.hpp"

namespace {

using cco::model::Error;
using cco::trace::Interval;
using cco::trace::KernelCategory;
using cco::trace::KernelEvent;
using cco::trace::Trace;

constexpr auto kComp = KernelCategory::Compute;
constexpr auto kComm = KernelCategory::Communication;

KernelEvent K(int rank, int64_t stream, KernelCategory cat, int64_t start, int64_t end,
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

Trace make(std::vector<KernelEvent> ks) {
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
  } catch (const Error& e) {
    const std::string w = e.what();
    for (const char* p : parts)
      EXPECT_NE(w.find(p), std::string::npos) << "'" << p << "' not in: " << w;
  }
}

// ------------------------------------------------------------------------------------------
// Classification
// ------------------------------------------------------------------------------------------

TEST(Classify, NcclKernelsInEverySpelling) {
  using cco::trace::is_communication_kernel;
  EXPECT_TRUE(is_communication_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
  EXPECT_TRUE(is_communication_kernel(
      "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"));
  EXPECT_TRUE(
      is_communication_kernel("void ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)"));
  EXPECT_TRUE(is_communication_kernel(
      "_Z38ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE"));
  EXPECT_TRUE(is_communication_kernel("ncclKernel_AllReduce_RING_LL_Sum_float"));
  // NCCL 2.28's symmetric kernels (src/device/symmetric/generate.py: ncclSymkDevKernel_<coll>_
  // <algo>[_<red>_<type>]), which a buffer in a symmetric window gets: still SMs, still NCCL.
  EXPECT_TRUE(is_communication_kernel("ncclSymkDevKernel_ReduceScatter_LD_sum_bf16"));
  EXPECT_TRUE(is_communication_kernel("void ncclSymkDevKernel_AllGather_ST(ncclSymkDevWorkArgs4K)"));
  EXPECT_TRUE(is_communication_kernel("_Z47ncclSymkDevKernel_AllReduce_RSxLD_AGxST_sum_f3221ncclSymkDevWorkArgs4K"));
  // NCCL 2.27 spelled them without the k (its generate.py: ncclSymDevKernel_...).
  EXPECT_TRUE(is_communication_kernel("ncclSymDevKernel_AllReduce_RSxLD_AGxST_sum_bf16"));
  EXPECT_FALSE(is_communication_kernel("gemm_kernel"));
  EXPECT_FALSE(is_communication_kernel("_Z11gemm_kernelv"));
  EXPECT_FALSE(is_communication_kernel("my_ncclDevKernel_lookalike"));
  EXPECT_FALSE(is_communication_kernel(""));
  EXPECT_EQ(cco::trace::classify_kernel("ncclKernel_x"), kComm);
  EXPECT_STREQ(cco::trace::to_string(kComm), "communication");
  EXPECT_STREQ(cco::trace::to_string(kComp), "compute");
}

// ------------------------------------------------------------------------------------------
// Intervals
// ------------------------------------------------------------------------------------------

TEST(Intervals, UnionMergesOverlappingAndTouching) {
  const auto u = cco::trace::interval_union({{5, 10}, {0, 3}, {3, 4}, {8, 12}, {20, 20}, {15, 14}});
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[0], (Interval{0, 4}));
  EXPECT_EQ(u[1], (Interval{5, 12}));
  EXPECT_EQ(cco::trace::total_length(u), 11);
}

TEST(Intervals, Intersection) {
  const auto a = cco::trace::interval_union({{0, 10}, {20, 30}});
  const auto b = cco::trace::interval_union({{5, 25}, {28, 40}});
  const auto i = cco::trace::interval_intersection(a, b);
  ASSERT_EQ(i.size(), 3u);
  EXPECT_EQ(i[0], (Interval{5, 10}));
  EXPECT_EQ(i[1], (Interval{20, 25}));
  EXPECT_EQ(i[2], (Interval{28, 30}));
  EXPECT_TRUE(cco::trace::interval_intersection(a, {}).empty());
}

// A window against a union by binary search gives what the linear walk gives, on every window of
// a small grid over a union with touching ends, gaps and empty windows.
TEST(Intervals, WindowIntersectionEqualsTheWalk) {
  const auto u = cco::trace::interval_union({{0, 10}, {12, 20}, {20, 21}, {30, 31}, {40, 60}});
  for (int64_t b = -5; b <= 65; ++b)
    for (int64_t e = b - 1; e <= 66; e += 3) {
      const Interval w{b, e};
      const auto walk = e > b ? cco::trace::interval_intersection({w}, u) : std::vector<Interval>{};
      EXPECT_EQ(cco::trace::window_intersection(w, u), walk) << b << ".." << e;
    }
  EXPECT_TRUE(cco::trace::window_intersection({5, 50}, {}).empty());
}

// ------------------------------------------------------------------------------------------
// Analysis: known answers
// ------------------------------------------------------------------------------------------

TEST(Analysis, FullOverlap) {
  // compute [0, 100) on stream 1, communication [20, 60) on stream 2: all of comm is hidden.
  const auto a = cco::trace::analyze(make({K(0, 1, kComp, 0, 100), K(0, 2, kComm, 20, 60)}));
  ASSERT_EQ(a.ranks.size(), 1u);
  const auto& r = a.ranks[0];
  EXPECT_EQ(r.compute_busy_ns, 100);
  EXPECT_EQ(r.comm_busy_ns, 40);
  EXPECT_EQ(r.overlapped_ns, 40);
  EXPECT_EQ(r.exposed_comm_ns, 0);
  EXPECT_EQ(r.span_ns, 100);
  EXPECT_EQ(r.busy_ns, 100);
  EXPECT_DOUBLE_EQ(r.efficiency, 1.0);
  EXPECT_EQ(r.compute_kernels, 1u);
  EXPECT_EQ(r.comm_kernels, 1u);
  EXPECT_EQ(r.streams, 2u);
}

TEST(Analysis, NoOverlap) {
  const auto a = cco::trace::analyze(make({K(0, 1, kComp, 0, 100), K(0, 2, kComm, 100, 150)}));
  const auto& r = a.ranks[0];
  EXPECT_EQ(r.overlapped_ns, 0);
  EXPECT_EQ(r.exposed_comm_ns, 50);
  EXPECT_EQ(r.span_ns, 150);
  EXPECT_EQ(r.busy_ns, 150);
  EXPECT_DOUBLE_EQ(r.efficiency, 0.0);
}

TEST(Analysis, PartialOverlap) {
  // compute [0, 100), comm [80, 180): 20 overlapped of the shorter part's 100.
  const auto a = cco::trace::analyze(make({K(0, 1, kComp, 0, 100), K(0, 2, kComm, 80, 180)}));
  const auto& r = a.ranks[0];
  EXPECT_EQ(r.overlapped_ns, 20);
  EXPECT_EQ(r.exposed_comm_ns, 80);
  EXPECT_EQ(r.span_ns, 180);
  EXPECT_DOUBLE_EQ(r.efficiency, 0.2);
}

TEST(Analysis, OverlapRatioIsTheShareOfCommunicationHidden) {
  // compute [0, 100), comm [80, 280): 20 overlapped. eff divides by the shorter part (compute,
  // 100): 0.2; HTA's ratio by communication (200): 0.1.
  const auto a = cco::trace::analyze(make({K(0, 1, kComp, 0, 100), K(0, 2, kComm, 80, 280)}));
  EXPECT_DOUBLE_EQ(a.ranks[0].efficiency, 0.2);
  EXPECT_DOUBLE_EQ(a.ranks[0].overlap_ratio, 0.1);
  EXPECT_TRUE(std::isnan(cco::trace::analyze(make({K(0, 1, kComp, 0, 100)})).ranks[0].overlap_ratio));
  // Merged: sum(overlapped) / sum(comm busy) = (40 + 0) / (40 + 50).
  const auto m = cco::trace::analyze(make({K(0, 1, kComp, 0, 100), K(0, 2, kComm, 20, 60),
                                           K(1, 1, kComp, 10, 110), K(1, 2, kComm, 110, 160)}));
  EXPECT_DOUBLE_EQ(m.all.overlap_ratio, 40.0 / 90.0);
  EXPECT_DOUBLE_EQ(m.ranks[0].overlap_ratio, 1.0);
}

TEST(Analysis, SameCategoryOverlappingAcrossStreamsCountsOnce) {
  // Two compute streams overlap each other in [50, 100): compute busy is the union, 150.
  const auto a = cco::trace::analyze(make({K(0, 1, kComp, 0, 100), K(0, 3, kComp, 50, 150),
                                           K(0, 2, kComm, 140, 200), K(0, 4, kComm, 150, 170)}));
  const auto& r = a.ranks[0];
  EXPECT_EQ(r.compute_busy_ns, 150);
  EXPECT_EQ(r.comm_busy_ns, 60);
  EXPECT_EQ(r.overlapped_ns, 10);
  EXPECT_EQ(r.exposed_comm_ns, 50);
  EXPECT_DOUBLE_EQ(r.efficiency, 10.0 / 60.0);
  EXPECT_EQ(r.streams, 4u);
}

TEST(Analysis, OnlyOneCategoryGivesNaNEfficiency) {
  const auto a = cco::trace::analyze(make({K(0, 1, kComp, 0, 100)}));
  EXPECT_TRUE(std::isnan(a.ranks[0].efficiency));
  EXPECT_EQ(a.ranks[0].exposed_comm_ns, 0);
}

TEST(Analysis, MultipleRanksMerge) {
  // rank 0: full overlap (40 of 40); rank 1: none (0 of 50), later on the common clock.
  const auto a = cco::trace::analyze(make({K(0, 1, kComp, 0, 100), K(0, 2, kComm, 20, 60),
                                           K(1, 1, kComp, 10, 110), K(1, 2, kComm, 110, 160)}));
  ASSERT_EQ(a.ranks.size(), 2u);
  EXPECT_DOUBLE_EQ(a.ranks[0].efficiency, 1.0);
  EXPECT_DOUBLE_EQ(a.ranks[1].efficiency, 0.0);
  EXPECT_EQ(a.all.rank, -1);
  EXPECT_EQ(a.all.compute_busy_ns, 200);
  EXPECT_EQ(a.all.comm_busy_ns, 90);
  EXPECT_EQ(a.all.overlapped_ns, 40);
  EXPECT_EQ(a.all.exposed_comm_ns, 50);
  EXPECT_EQ(a.all.begin_ns, 0);
  EXPECT_EQ(a.all.end_ns, 160);
  EXPECT_EQ(a.all.span_ns, 160);
  EXPECT_DOUBLE_EQ(a.all.efficiency, 40.0 / 90.0);  // sum(overlapped) / sum(min)
  EXPECT_EQ(a.kernels, 4u);
}

TEST(Analysis, WindowClipsKernels) {
  cco::trace::AnalysisOptions w;
  w.from_ns = 50;
  w.to_ns = 90;
  const auto a = cco::trace::analyze(make({K(0, 1, kComp, 0, 100), K(0, 2, kComm, 80, 180)}), w);
  EXPECT_EQ(a.ranks[0].compute_busy_ns, 40);
  EXPECT_EQ(a.ranks[0].comm_busy_ns, 10);
  EXPECT_EQ(a.ranks[0].overlapped_ns, 10);
  EXPECT_EQ(a.ranks[0].span_ns, 40);
  w.to_ns = 50;
  EXPECT_THROW(cco::trace::analyze(make({K(0, 1, kComp, 0, 100)}), w), Error);
}

TEST(Analysis, CommWaitFromLaunchTimestamps) {
  // The collective is launched at 10 while compute holds the SMs until 100: it waits 90.
  // The second one, launched at 110, is ready when its predecessor ends (150) and starts at
  // 160; compute ran [140, 170), so it waited 10 for SMs.
  const auto t = make({K(0, 1, kComp, 0, 100), K(0, 1, kComp, 140, 170),
                       K(0, 2, kComm, 100, 150, 10), K(0, 2, kComm, 160, 200, 110)});
  const auto a = cco::trace::analyze(t);
  const auto& w = a.ranks[0].longest_comm_wait;
  EXPECT_EQ(w.begin_ns, 10);
  EXPECT_EQ(w.end_ns, 100);
  EXPECT_EQ(w.length(), 90);
  EXPECT_EQ(w.stream, 2);
  EXPECT_EQ(w.method, "launch");
  EXPECT_EQ(a.ranks[0].comm_wait_ns, 100);
  const auto all = cco::trace::communication_waits(t, 0);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].begin_ns, 150);
  EXPECT_EQ(all[1].end_ns, 160);
}

TEST(Analysis, CommWaitOnlyCountsWhileComputeRuns) {
  // Launched at 0, starts at 100, but compute ran only in [30, 60): the wait is that part.
  const auto a = cco::trace::analyze(make({K(0, 1, kComp, 30, 60), K(0, 2, kComm, 100, 120, 1)}));
  EXPECT_EQ(a.ranks[0].longest_comm_wait.length(), 30);
}

TEST(Analysis, CommWaitFallsBackToStreamGaps) {
  // No launch times: the gap [10, 50) between the two collectives on stream 2, where compute
  // ran [5, 40), gives 30; the first collective has no lower bound.
  const auto a = cco::trace::analyze(
      make({K(0, 2, kComm, 0, 10), K(0, 2, kComm, 50, 60), K(0, 1, kComp, 5, 40)}));
  const auto& w = a.ranks[0].longest_comm_wait;
  EXPECT_EQ(w.begin_ns, 10);
  EXPECT_EQ(w.end_ns, 40);
  EXPECT_EQ(w.method, "stream-gap");
}

TEST(Analysis, NoWaitWhenCommStartsAtOnce) {
  const auto a = cco::trace::analyze(make({K(0, 1, kComp, 0, 100), K(0, 2, kComm, 5, 50, 5)}));
  EXPECT_EQ(a.ranks[0].longest_comm_wait.length(), 0);
  EXPECT_TRUE(cco::trace::analysis_to_json(a)["ranks"][0]["longest_comm_wait"].is_null());
}

TEST(Analysis, JsonHasEveryFigure) {
  const auto j = cco::trace::analysis_to_json(
      cco::trace::analyze(make({K(0, 1, kComp, 0, 100), K(0, 2, kComm, 80, 180, 1)})));
  EXPECT_EQ(j["schema"], "ccoverlap.trace_analysis");
  for (const char* k : {"compute_busy_ns", "comm_busy_ns", "overlapped_ns", "exposed_comm_ns",
                        "span_ns", "efficiency", "longest_comm_wait", "comm_wait_ns"})
    EXPECT_TRUE(j["ranks"][0].contains(k)) << k;
  EXPECT_EQ(j["all"]["rank"], "all");
  EXPECT_EQ(j["ranks"][0]["longest_comm_wait"]["length_ns"], 79);  // launched at 1, starts at 80
}

// ------------------------------------------------------------------------------------------
// JSON round trip and Perfetto structure
// ------------------------------------------------------------------------------------------

Trace rich() {
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

TEST(TraceJson, RoundTripIsExact) {
  const Trace t = rich();
  const std::string text = cco::trace::trace_to_json(t).dump();
  const Trace u = cco::trace::parse_trace(text, "mem");
  ASSERT_EQ(u.kernels.size(), t.kernels.size());
  for (std::size_t i = 0; i < t.kernels.size(); ++i) {
    const auto& a = t.kernels[i];
    const auto& b = u.kernels[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.category, b.category);
    EXPECT_EQ(a.rank, b.rank);
    EXPECT_EQ(a.device, b.device);
    EXPECT_EQ(a.stream, b.stream);
    EXPECT_EQ(a.priority, b.priority);
    EXPECT_EQ(a.start_ns, b.start_ns);
    EXPECT_EQ(a.end_ns, b.end_ns);
    EXPECT_EQ(a.queued_ns, b.queued_ns);
    EXPECT_EQ(a.submitted_ns, b.submitted_ns);
    EXPECT_EQ(a.grid, b.grid);
    EXPECT_EQ(a.block, b.block);
    EXPECT_EQ(a.registers, b.registers);
    EXPECT_EQ(a.static_smem, b.static_smem);
    EXPECT_EQ(a.dynamic_smem, b.dynamic_smem);
    EXPECT_EQ(a.blocks_per_sm, b.blocks_per_sm);
    EXPECT_EQ(a.correlation_id, b.correlation_id);
  }
  ASSERT_EQ(u.ranks.size(), 2u);
  EXPECT_EQ(u.ranks[0].device_name, "NVIDIA H200");
  EXPECT_EQ(u.ranks[0].arch, "sm_90");
  EXPECT_EQ(u.ranks[0].sm_count, 132);
  EXPECT_EQ(u.ranks[0].pid, 4242);
  ASSERT_NE(u.find_stream(0, 0, 13), nullptr);
  EXPECT_EQ(u.find_stream(0, 0, 13)->priority, -5);
  EXPECT_EQ(u.find_stream(0, 0, 13)->label, "comm");
  EXPECT_EQ(u.find_stream(1, 1, 7)->priority, std::nullopt);
  EXPECT_EQ(u.dropped_records, 3u);
  ASSERT_EQ(u.notes.size(), 1u);
  ASSERT_EQ(u.marks.size(), 2u);
  EXPECT_EQ(u.marks[0].ts_ns, t.marks[0].ts_ns);
  EXPECT_EQ(u.marks[0].rank, -1);
  EXPECT_EQ(u.marks[0].name, "concurrent, iteration 0");
  EXPECT_EQ(u.marks[1].rank, 1);
  // Writing what was read gives the same file.
  EXPECT_EQ(cco::trace::trace_to_json(u).dump(), text);
}

// The streaming reader (issue 46): one pass gives the document without its events and the
// trace; a file whose header (otherData) comes after its events, as another tool may reorder
// ours, is read the same; a JSON file without "traceEvents" is a document and no trace.
TEST(TraceJson, OnePassGivesTheDocumentAndTheTrace) {
  const nlohmann::json j = cco::trace::trace_to_json(rich());
  const std::string text = j.dump();
  const auto r = cco::trace::parse_json_or_trace(text, "mem");
  ASSERT_TRUE(r.trace.has_value());
  EXPECT_EQ(cco::trace::trace_to_json(*r.trace).dump(), text);
  ASSERT_TRUE(r.doc.contains("traceEvents"));
  EXPECT_TRUE(r.doc["traceEvents"].empty());  // read, then left out
  EXPECT_EQ(r.doc["otherData"], j["otherData"]);
  // The header after the events: parsed again whole, the same trace.
  std::string late = "{\"traceEvents\": " + j["traceEvents"].dump() + ", \"otherData\": " +
                     j["otherData"].dump() + "}";
  ASSERT_LT(late.find("traceEvents"), late.find("otherData"));
  EXPECT_EQ(cco::trace::trace_to_json(cco::trace::parse_trace(late, "late")).dump(), text);
  const auto late_r = cco::trace::parse_json_or_trace(late, "late");
  ASSERT_TRUE(late_r.trace.has_value());
  EXPECT_TRUE(late_r.doc["traceEvents"].empty());
  // Not a trace: the whole document, no trace.
  const auto other = cco::trace::parse_json_or_trace(R"({"schema": "ccoverlap.bench", "rows": [1, 2]})", "b");
  EXPECT_FALSE(other.trace.has_value());
  EXPECT_EQ(other.doc["rows"].size(), 2u);
}

// What PyTorch's tools and HTA look for, made from the trace (issue 45): each step between two of
// the library's step marks as "ProfilerStep#N" on the rank's host row (N from 1; HTA's iteration
// windows), each kernel's launch as "cuLaunchKernel" with the kernel's correlation and no stream
// (HTA links launch and kernel by it: queue length, launch delays); reading ours back skips them.
TEST(TraceJson, StepAnnotationsAndLaunchCallsForHta) {
  Trace t;
  t.ranks.push_back({0, 0, "NVIDIA H200", "sm_90", 132, "h", 1});
  for (int i = 0; i < 3; ++i) {
    KernelEvent k;
    k.name = "gemm";
    k.stream = 7;
    k.start_ns = 1'000'000 + i * 100'000;
    k.end_ns = k.start_ns + 50'000;
    k.queued_ns = k.start_ns - 20'000;
    k.submitted_ns = k.start_ns - 15'000;
    k.correlation_id = 40 + static_cast<uint64_t>(i);
    t.kernels.push_back(k);
  }
  t.kernels[2].queued_ns = 0;  // no launch time known: no launch event
  for (int i = 0; i < 3; ++i)
    t.marks.push_back({970'000 + i * 100'000, 0, "cco step, epoch 1, config 0"});
  t.marks.push_back({1'500'000, -1, "process-wide mark"});  // not a step
  const auto j = cco::trace::trace_to_json(t);
  std::vector<nlohmann::json> steps, launches;
  for (const auto& e : j["traceEvents"]) {
    if (e.value("cat", "") == "user_annotation") steps.push_back(e);
    if (e.value("cat", "") == "cuda_driver") launches.push_back(e);
  }
  ASSERT_EQ(steps.size(), 2u);  // three marks: two steps between them
  EXPECT_EQ(steps[0]["name"], "ProfilerStep#1");
  EXPECT_EQ(steps[1]["name"], "ProfilerStep#2");
  EXPECT_EQ(steps[0]["ph"], "X");
  EXPECT_EQ(steps[0]["pid"], 0);
  EXPECT_EQ(steps[0]["tid"], cco::trace::kHostTid);
  EXPECT_DOUBLE_EQ(steps[0]["ts"].get<double>(), -30.0);  // 970 us; the origin is the first kernel
  EXPECT_DOUBLE_EQ(steps[0]["dur"].get<double>(), 100.0);
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0]["name"], "cuLaunchKernel");
  EXPECT_EQ(launches[0]["args"]["correlation"], 40);
  EXPECT_FALSE(launches[0]["args"].contains("stream"));
  EXPECT_DOUBLE_EQ(launches[0]["ts"].get<double>(), -20.0);
  EXPECT_DOUBLE_EQ(launches[0]["dur"].get<double>(), 5.0);
  EXPECT_EQ(launches[1]["args"]["correlation"], 41);
  // Each launch lies inside a step window, as HTA gives kernels their iteration.
  for (const auto& l : launches) {
    const double ts = l["ts"].get<double>();
    bool inside = false;
    for (const auto& s : steps)
      inside = inside || (ts >= s["ts"].get<double>() &&
                          ts < s["ts"].get<double>() + s["dur"].get<double>());
    EXPECT_TRUE(inside) << l.dump();
  }
  // Read back: the same trace (the host events are made again from it, not read).
  const std::string text = j.dump();
  const Trace u = cco::trace::parse_trace(text, "mem");
  EXPECT_EQ(u.kernels.size(), 3u);
  EXPECT_EQ(u.ranges.size(), 0u);
  EXPECT_EQ(cco::trace::trace_to_json(u).dump(), text);
}

// A PyTorch profiler trace read whole (issue 45): its copies and memsets are GPU work with their
// kind and bytes, and each piece of GPU work takes the time of the host call of its correlation
// id as its launch time (whether the call comes before or after it in the file; never a call
// after the work started), so its wait is exact. Written as ours and read back: the same.
TEST(TraceJson, ProfilerCopiesMemsetsAndLaunchCalls) {
  const std::string text = R"js({"distributedInfo": {"rank": 1}, "traceEvents": [
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":900,"tid":900,"ts":5,"dur":3,
     "args":{"correlation":11}},
    {"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":10,"dur":20,
     "args":{"device":0,"stream":7,"correlation":11}},
    {"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pageable -> Device)","pid":0,"tid":7,
     "ts":40,"dur":5,"args":{"device":0,"stream":7,"correlation":12,"bytes":4096}},
    {"ph":"X","cat":"gpu_memset","name":"Memset (Device)","pid":0,"tid":7,"ts":50,"dur":1,
     "args":{"device":0,"stream":7,"correlation":13,"bytes":64}},
    {"ph":"X","cat":"gpu_memcpy","name":"Memcpy DtoD (Device -> Device)","pid":0,"tid":7,
     "ts":60,"dur":2,"args":{"device":0,"stream":7,"correlation":14,"bytes":128}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaMemcpyAsync","pid":900,"tid":900,"ts":30,"dur":2,
     "args":{"correlation":12}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaMemcpyAsync","pid":900,"tid":900,"ts":70,"dur":2,
     "args":{"correlation":14}}]})js";
  const Trace t = cco::trace::parse_trace(text, "prof");
  ASSERT_EQ(t.kernels.size(), 4u);
  const auto& k = t.kernels[0];
  EXPECT_EQ(k.name, "gemm");
  EXPECT_EQ(k.rank, 1);
  EXPECT_FALSE(k.is_copy());
  EXPECT_EQ(k.queued_ns, 5'000);  // its cudaLaunchKernel
  EXPECT_EQ(t.kernels[1].copy, "HtoD");
  EXPECT_EQ(t.kernels[1].bytes, 4096);
  EXPECT_EQ(t.kernels[1].queued_ns, 30'000);  // its call comes later in the file
  EXPECT_EQ(t.kernels[2].copy, "Memset");
  EXPECT_EQ(t.kernels[2].bytes, 64);
  EXPECT_EQ(t.kernels[2].queued_ns, 0);  // no call for it
  EXPECT_EQ(t.kernels[3].copy, "DtoD");
  EXPECT_EQ(t.kernels[3].queued_ns, 0);  // a call after the copy started is not its launch
  for (const auto& x : t.kernels) EXPECT_EQ(x.category, KernelCategory::Compute);
  const nlohmann::json j = cco::trace::trace_to_json(t);
  int memsets = 0;
  for (const auto& e : j["traceEvents"]) memsets += e.value("cat", "") == "gpu_memset";
  EXPECT_EQ(memsets, 1);
  const Trace u = cco::trace::parse_trace(j.dump(), "ours");
  ASSERT_EQ(u.kernels.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(u.kernels[i].copy, t.kernels[i].copy) << i;
    EXPECT_EQ(u.kernels[i].bytes, t.kernels[i].bytes) << i;
    EXPECT_EQ(u.kernels[i].queued_ns, t.kernels[i].queued_ns) << i;
  }
  expect_error([&] {
    auto bad = j;
    for (auto& e : bad["traceEvents"])
      if (e.value("cat", "") == "gpu_memset") e["args"]["copy"] = "Teleport";
    cco::trace::parse_trace(bad.dump(), "bad");
  }, {"\"copy\" is \"Teleport\" (expected PtoP, DtoD"});
}

TEST(TraceJson, TimesFromTsAndDurWhenNsArgsAreAbsent) {
  auto j = cco::trace::trace_to_json(rich());
  for (auto& e : j["traceEvents"])
    if (e["ph"] == "X") {
      e["args"].erase("start_ns");
      e["args"].erase("end_ns");
    }
  const Trace u = cco::trace::trace_from_json(j);
  const Trace t = rich();
  for (std::size_t i = 0; i < t.kernels.size(); ++i) {
    EXPECT_EQ(u.kernels[i].start_ns, t.kernels[i].start_ns);
    EXPECT_EQ(u.kernels[i].end_ns, t.kernels[i].end_ns);
  }
}

TEST(TraceJson, PerfettoRowsAndCategories) {
  const auto j = cco::trace::trace_to_json(rich());
  int procs = 0, threads = 0, kernels = 0;
  bool prio_named = false;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") {
      ++procs;
      EXPECT_NE(e["args"]["name"].get<std::string>().find("rank"), std::string::npos);
    }
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["tid"] != cco::trace::kHostTid) {
      ++threads;
      if (e["args"]["name"] == "stream 13 priority -5 (comm)") prio_named = true;
    }
    if (e["ph"] == "X" && e["tid"] != cco::trace::kHostTid) {
      ++kernels;
      // HTA selects GPU work by category "kernel"; ours is args.kind.
      EXPECT_EQ(e["cat"], "kernel");
      const std::string kind = e["args"]["kind"];
      EXPECT_TRUE(kind == "compute" || kind == "communication") << kind;
      EXPECT_TRUE(e["args"].contains("grid"));
      EXPECT_TRUE(e["args"].contains("block"));
      EXPECT_TRUE(e["args"].contains("registers"));
      EXPECT_TRUE(e["args"].contains("static_smem"));
      EXPECT_TRUE(e["args"].contains("dynamic_smem"));
      EXPECT_GE(e["ts"].get<double>(), 0.0);  // relative to the first kernel
    }
  }
  EXPECT_EQ(procs, 2);
  EXPECT_EQ(threads, 3);
  EXPECT_EQ(kernels, 3);
  EXPECT_TRUE(prio_named);
  int marks = 0;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "i") {
      ++marks;
      EXPECT_EQ(e["cat"], "mark");
    }
  EXPECT_EQ(marks, 2);
  EXPECT_EQ(j["otherData"]["ccoverlap"]["schema"], "ccoverlap.trace");
  EXPECT_EQ(j["displayTimeUnit"], "ns");
}

TEST(TraceJson, ForeignChromeTraceOfKernels) {
  // The shape PyTorch's profiler writes: kernels with cat "kernel", CPU ops to be ignored.
  const char* text = R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 123, "tid": 5, "ts": 0, "dur": 9},
    {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm", "pid": 0, "tid": 7, "ts": 10.5, "dur": 100,
     "args": {"device": 0, "stream": 7, "grid": [132, 1, 1], "block": [384, 1, 1],
              "registers per thread": 168, "shared memory": 200000}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "pid": 0,
     "tid": 20, "ts": 50.5, "dur": 100, "args": {"device": 0, "stream": 20}},
    {"ph": "i", "name": "marker", "pid": 0, "tid": 0, "ts": 1}]})";
  const Trace t = cco::trace::parse_trace(text, "torch.json");
  ASSERT_EQ(t.kernels.size(), 2u);
  EXPECT_EQ(t.kernels[0].category, kComp);
  EXPECT_EQ(t.kernels[0].registers, 168);
  EXPECT_EQ(t.kernels[0].static_smem, 200000);
  EXPECT_EQ(t.kernels[0].start_ns, 10500);
  EXPECT_EQ(t.kernels[1].category, kComm);
  const auto a = cco::trace::analyze(t);
  EXPECT_EQ(a.ranks[0].overlapped_ns, 60000);
}

// Two nodes' profiler traces, each of one rank on its device 0: the rank is distributedInfo's,
// not the pid (which is the device), so the two merge as ranks 0 and 1 instead of being refused
// as "a file given twice".
TEST(TraceJson, ProfilerTraceRankFromDistributedInfo) {
  auto node = [](int rank) {
    return std::string(R"({"distributedInfo": {"backend": "nccl", "rank": )") +
           std::to_string(rank) + R"(, "world_size": 2}, "traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "sm90_gemm", "pid": 0, "tid": 7, "ts": 10, "dur": 100,
     "args": {"stream": 7}}]})";
  };
  const Trace a = cco::trace::parse_trace(node(0), "node0.json");
  const Trace b = cco::trace::parse_trace(node(1), "node1.json");
  ASSERT_EQ(b.kernels.size(), 1u);
  EXPECT_EQ(b.kernels[0].rank, 1);
  EXPECT_EQ(b.kernels[0].device, 0) << "the pid is the device";
  const Trace m = cco::trace::merge_traces({a, b});
  ASSERT_EQ(m.ranks.size(), 2u);
  EXPECT_EQ(m.ranks[1].rank, 1);
  // Without distributedInfo the pid stays the rank, as before: the two collide.
  std::string plain = node(1);
  plain.erase(plain.find("\"distributedInfo\""), plain.find("\"traceEvents\"") - plain.find("\"distributedInfo\""));
  expect_error([&] {
    cco::trace::merge_traces({a, cco::trace::parse_trace(plain, "node1.json")});
  }, {"given twice"});
}

// Files of one run overlap in time; files 9.7 days apart are merged, but with a note saying so.
TEST(TraceJson, MergeNotesClocksFarApart) {
  auto part = [](int rank, int64_t at, const char* source) {
    Trace t;
    cco::trace::KernelEvent k;
    k.name = "gemm";
    k.rank = rank;
    k.start_ns = at;
    k.end_ns = at + 1'000'000;
    t.kernels = {k};
    t.source = source;
    t.normalize();
    return t;
  };
  const auto near = cco::trace::merge_traces({part(0, 0, "a.json"), part(1, 500'000, "b.json")});
  EXPECT_TRUE(near.notes.empty());
  const int64_t days = int64_t{838'080} * 1'000'000'000;  // 9.7 days
  const auto far = cco::trace::merge_traces({part(0, 0, "a.json"), part(1, days, "b.json")});
  ASSERT_EQ(far.notes.size(), 1u);
  EXPECT_NE(far.notes[0].find("'a.json' and 'b.json' are 838080.0 s apart"), std::string::npos)
      << far.notes[0];
}

// A one-rank file of ours says its rank the way PyTorch's profiler does (Holistic Trace Analysis
// reads a folder of them as one job); a file of several ranks (threads) does not.
TEST(TraceJson, OneRankFileWritesDistributedInfo) {
  Trace one;
  cco::trace::KernelEvent k;
  k.name = "gemm";
  k.rank = 3;
  k.stream = 7;
  k.start_ns = 500;
  k.end_ns = 900;
  one.kernels = {k};
  one.normalize();
  const auto j = cco::trace::trace_to_json(one);
  ASSERT_TRUE(j.contains("distributedInfo"));
  EXPECT_EQ(j["distributedInfo"]["rank"], 3);
  EXPECT_FALSE(cco::trace::trace_to_json(rich()).contains("distributedInfo"));
  // In the file's text the rank reads as Holistic Trace Analysis finds it: `"rank": N`, with the
  // space PyTorch's profiler writes (without it every rank file was taken as rank 0).
  const std::string text = cco::trace::trace_text(one);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"("rank": (\d+))"))) << text.substr(0, 200);
  EXPECT_EQ(m[1].str(), "3");
  EXPECT_EQ(cco::trace::parse_trace(text).ranks.at(0).rank, 3);
  const std::string path = ::testing::TempDir() + "cco_trace_hta.json";
  cco::trace::write_trace_file(one, path);
  EXPECT_EQ(cco::model::read_file(path, 1 << 20), text);
}

TEST(TraceJson, WriteAndReadFile) {
  const std::string path = ::testing::TempDir() + "cco_trace_rt.json";
  cco::trace::write_trace_file(rich(), path);
  const Trace u = cco::trace::read_trace_file(path);
  EXPECT_EQ(u.kernels.size(), 3u);
  EXPECT_EQ(u.source, path);
  expect_error([] { cco::trace::read_trace_file("/nonexistent/dir/x.json"); },
               {"cannot be read", "/nonexistent/dir/x.json"});
  expect_error([] { cco::trace::write_trace_file(rich(), "/nonexistent/dir/x.json"); },
               {"cannot write"});
}

// ------------------------------------------------------------------------------------------
// Errors: one clear line naming the file, never a crash
// ------------------------------------------------------------------------------------------

TEST(TraceErrors, MalformedTruncatedEmpty) {
  expect_error([] { cco::trace::parse_trace("{", "a.json"); }, {"a.json", "not valid JSON"});
  expect_error([] { cco::trace::parse_trace("", "e.json"); }, {"e.json", "empty"});
  expect_error([] { cco::trace::parse_trace("  \n", "e.json"); }, {"e.json", "only white space"});
  const std::string full = cco::trace::trace_to_json(rich()).dump();
  for (std::size_t cut : {std::size_t{1}, full.size() / 3, full.size() / 2, full.size() - 2})
    expect_error([&] { cco::trace::parse_trace(full.substr(0, cut), "t.json"); },
                 {"t.json", "not valid JSON"});
}

TEST(TraceErrors, WrongShapeOrSchema) {
  using cco::trace::parse_trace;
  expect_error([] { parse_trace("[1, 2]", "x"); }, {"x: not a trace"});
  expect_error([] { parse_trace("{}", "x"); }, {"no \"traceEvents\""});
  expect_error([] { parse_trace(R"({"traceEvents": 5})", "x"); }, {"not an array"});
  expect_error([] { parse_trace(R"({"schema": "ccoverlap.bench", "results": []})", "b.json"); },
               {"b.json", "ccoverlap.bench"});
  expect_error(
      [] {
        parse_trace(R"({"traceEvents": [], "otherData": {"ccoverlap": {"schema": "other"}}})", "x");
      },
      {"wrong schema"});
  expect_error(
      [] {
        parse_trace(R"({"traceEvents": [], "otherData": {"ccoverlap":
                       {"schema": "ccoverlap.trace", "schema_version": "2.0.0"}}})",
                    "x");
      },
      {"2.0.0", "not supported"});
}

TEST(TraceErrors, BadEvents) {
  using cco::trace::parse_trace;
  auto ev = [](const std::string& e) { return R"({"traceEvents": [)" + e + "]}"; };
  expect_error(
      [&] {
        parse_trace(ev(R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":1,"dur":5})"), "f");
      },
      {"f: traceEvents[0] (k)", "missing \"ts\""});
  expect_error(
      [&] {
        parse_trace(ev(R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":1,"ts":1,"dur":-5})"),
                    "f");
      },
      {"negative duration"});
  expect_error(
      [&] {
        parse_trace(ev(R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":1,"ts":"1","dur":5})"),
                    "f");
      },
      {"\"ts\" is not a number"});
  expect_error(
      [&] {
        parse_trace(
            ev(R"({"ph":"X","cat":"kernel","name":"k","pid":"gpu","tid":1,"ts":1,"dur":5})"), "f");
      },
      {"\"pid\" is not an integer"});
  expect_error(
      [&] {
        parse_trace(ev(R"({"ph":"X","cat":"compute","name":"k","pid":0,"tid":1,"ts":1,"dur":5,
                                       "args":{"start_ns":100,"end_ns":50}})"),
                    "f");
      },
      {"ends before it starts"});
  // Times beyond 2^62 ns: refused, so no difference of two times can overflow (found by fuzzing:
  // an end of -8.7e18 and a start of 1.8e18 overflowed the error message's own subtraction).
  expect_error(
      [&] {
        parse_trace(ev(R"({"ph":"X","cat":"compute","name":"k","pid":0,"tid":1,"ts":1,"dur":5,
                                       "args":{"start_ns":1763780000123457789,"end_ns":-8682964073586092826}})"),
                    "f");
      },
      {"\"end_ns\" is out of range"});
  expect_error(
      [&] {
        parse_trace(ev(R"({"ph":"X","cat":"compute","name":"k","pid":0,"tid":1,"ts":1e300,"dur":5})"),
                    "f");
      },
      {"\"ts\" is out of range"});
  expect_error(
      [&] {
        parse_trace(ev(R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":1,"ts":1,"dur":5,
                                       "args":{"grid":"big"}})"),
                    "f");
      },
      {"\"grid\" is not [x, y, z]"});
  expect_error(
      [&] {
        parse_trace(ev(R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":1,"ts":1,"dur":5,
                                       "args":[1]})"),
                    "f");
      },
      {"\"args\" is not an object"});
  expect_error([&] { parse_trace(ev("7"), "f"); }, {"traceEvents[0]: not an object"});
  expect_error([&] { parse_trace(ev("{},[1]"), "f"); }, {"f: traceEvents[0]: no \"ph\""});
  expect_error([&] { parse_trace(ev(R"({"ph":"M"},[1])"), "f"); }, {"f: traceEvents[1]: not an object"});
  // An empty trace is valid (no kernels), and so is one with only metadata.
  EXPECT_TRUE(parse_trace(ev(""), "f").kernels.empty());
  EXPECT_TRUE(
      parse_trace(ev(R"({"ph":"M","name":"process_name","pid":0,"args":{"name":"x"}})"), "f")
          .kernels.empty());
}

// ------------------------------------------------------------------------------------------
// Merging rank files and blocks per SM
// ------------------------------------------------------------------------------------------

TEST(TraceMerge, RankFilesMergeAndDuplicatesAreRefused) {
  Trace a = make({K(0, 1, kComp, 0, 100), K(0, 2, kComm, 20, 60)});
  a.source = "r0.json";
  a.dropped_records = 1;
  Trace b = make({K(1, 1, kComp, 0, 100), K(1, 2, kComm, 100, 150)});
  b.source = "r1.json";
  b.dropped_records = 2;
  const Trace m = cco::trace::merge_traces({a, b});
  EXPECT_EQ(m.kernels.size(), 4u);
  EXPECT_EQ(m.ranks.size(), 2u);
  EXPECT_EQ(m.dropped_records, 3u);
  EXPECT_EQ(m.source, "r0.json, r1.json");
  EXPECT_EQ(cco::trace::analyze(m).ranks.size(), 2u);
  expect_error([&] { cco::trace::merge_traces({a, a}); }, {"rank 0", "r0.json", "twice"});
  // A process-wide mark appears in each rank file of that process: kept once.
  a.marks = {{5, -1, "step"}};
  b.marks = {{5, -1, "step"}, {7, 1, "mine"}};
  EXPECT_EQ(cco::trace::merge_traces({a, b}).marks.size(), 2u);
}

TEST(TraceOccupancy, BlocksPerSmFromTheModel) {
  // The built-in GEMM of the reference run: 256 threads, 63 registers, 16896 B static shared
  // memory: 4 blocks per SM on sm_90 as launched, 3 with 40449 B padding (docs/results).
  Trace t = make({K(0, 1, kComp, 0, 10), K(0, 1, kComp, 10, 20), K(0, 2, kComm, 0, 5)});
  t.ranks[0].arch = "sm_90";
  t.ranks[0].sm_count = 132;
  for (auto& k : t.kernels) {
    k.block = {256, 1, 1};
    k.registers = 63;
    k.static_smem = 16896;
  }
  t.kernels[1].dynamic_smem = 40449;
  cco::trace::fill_blocks_per_sm(t);
  int found4 = 0, found3 = 0;
  for (const auto& k : t.kernels) {
    found4 += k.blocks_per_sm == 4;
    found3 += k.blocks_per_sm == 3;
  }
  EXPECT_EQ(found4, 2);
  EXPECT_EQ(found3, 1);
  // Unknown architecture: left at 0, no error.
  Trace u = make({K(0, 1, kComp, 0, 10)});
  u.ranks[0].arch = "sm_999";
  cco::trace::fill_blocks_per_sm(u);
  EXPECT_EQ(u.kernels[0].blocks_per_sm, 0);
}

TEST(TraceNormalize, StreamsAndPrioritiesFilledFromKernels) {
  Trace t;
  auto k1 = K(0, 5, kComp, 0, 10);
  auto k2 = K(0, 5, kComp, 20, 30);
  k2.priority = -2;
  t.kernels = {k1, k2};
  t.normalize();
  ASSERT_EQ(t.streams.size(), 1u);
  EXPECT_EQ(t.streams[0].priority, -2);
  EXPECT_EQ(t.kernels[0].priority, -2);
  ASSERT_EQ(t.ranks.size(), 1u);
}

}  // namespace

namespace {

// Mutated files (bytes flipped, cut, fields swapped for other types) never crash the reader and
// never escape as anything but model::Error.
TEST(TraceErrors, MutatedInputsGiveOnlyModelErrors) {
  const std::string good = cco::trace::trace_to_json(rich()).dump();
  uint64_t seed = 12345;
  auto next = [&] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return seed >> 33;
  };
  const char* junk[] = {"-1", "\"x\"", "null", "[]", "{}", "1e400", "true", "[1,2]", "-9e18"};
  int ok = 0, errors = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string s = good;
    const int kind = static_cast<int>(next() % 3);
    if (kind == 0) {
      s[next() % s.size()] = static_cast<char>(next() % 128);
    } else if (kind == 1) {
      s = s.substr(0, next() % s.size());
    } else {
      // Replace one value (after a ':') by junk of another type.
      auto p = s.find(':', next() % s.size());
      if (p == std::string::npos) continue;
      auto e = s.find_first_of(",}", p + 1);
      if (e == std::string::npos) continue;
      s = s.substr(0, p + 1) + junk[next() % std::size(junk)] + s.substr(e);
    }
    try {
      (void)cco::trace::parse_trace(s, "m.json");
      ++ok;
    } catch (const Error& e) {
      ++errors;
      EXPECT_EQ(std::string(e.what()).rfind("m.json: ", 0), 0u) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "escaped as " << typeid(e).name() << ": " << e.what() << "\ninput: " << s;
      return;
    }
  }
  EXPECT_GT(errors, 1000);
  EXPECT_GT(ok, 0);
}

}  // namespace

// ------------------------------------------------------------------------------------------
// NVTX ranges: pairing CUPTI's START/END records, the JSON round trip, reader errors, merging
// ------------------------------------------------------------------------------------------

namespace {

using cco::trace::NvtxPairing;
using cco::trace::NvtxRange;
using cco::trace::NvtxRecord;

NvtxRecord Start(uint64_t id, int64_t ts, uint64_t thread, std::string name,
                 std::string domain = {}) {
  NvtxRecord r;
  r.kind = NvtxRecord::Kind::Start;
  r.id = id;
  r.ts_ns = ts;
  r.thread = thread;
  r.name = std::move(name);
  r.domain = std::move(domain);
  return r;
}

NvtxRecord End(uint64_t id, int64_t ts, uint64_t thread = 0) {
  NvtxRecord r;
  r.kind = NvtxRecord::Kind::End;
  r.id = id;
  r.ts_ns = ts;
  r.thread = thread;
  return r;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

TEST(NvtxPairing, StartAndEndOfOneIdMakeOneRange) {
  NvtxPairing p;
  p.add(Start(7, 1000, 4242, "concurrent, iteration 3", "ccoverlap"));
  EXPECT_TRUE(p.ranges().empty());
  ASSERT_EQ(p.open().size(), 1u);
  p.add(End(7, 2500, 4242));
  ASSERT_EQ(p.ranges().size(), 1u);
  const NvtxRange& r = p.ranges()[0];
  EXPECT_EQ(r.name, "concurrent, iteration 3");
  EXPECT_EQ(r.domain, "ccoverlap");
  EXPECT_EQ(r.start_ns, 1000);
  EXPECT_EQ(r.end_ns, 2500);
  EXPECT_EQ(r.duration_ns(), 1500);
  EXPECT_EQ(r.thread, 4242u);
  EXPECT_EQ(r.rank, -1);  // for the tracer to set
  EXPECT_TRUE(p.open().empty());
  EXPECT_EQ(p.unmatched_ends(), 0u);
  EXPECT_TRUE(p.notes().empty());
}

TEST(NvtxPairing, NestedPushPopPairsByIdNotByOrder) {
  // push A, push B, pop B, pop A on one thread; a start/end range C opened on thread 1 and
  // ended on thread 2 while the others run; records of different ranges interleaved.
  NvtxPairing p;
  p.add(Start(1, 10, 1, "A"));
  p.add(Start(3, 15, 1, "C"));
  p.add(Start(2, 20, 1, "B"));
  p.add(End(2, 30, 1));
  p.add(End(1, 40, 1));
  p.add(End(3, 45, 2));
  ASSERT_EQ(p.ranges().size(), 3u);
  std::map<std::string, NvtxRange> by;
  for (const auto& r : p.ranges()) by[r.name] = r;
  EXPECT_EQ(by["A"].start_ns, 10);
  EXPECT_EQ(by["A"].end_ns, 40);
  EXPECT_EQ(by["B"].start_ns, 20);
  EXPECT_EQ(by["B"].end_ns, 30);
  EXPECT_EQ(by["C"].start_ns, 15);
  EXPECT_EQ(by["C"].end_ns, 45);
  EXPECT_EQ(by["C"].thread, 1u) << "a range belongs to the thread that opened it";
  // B is nested in A.
  EXPECT_GE(by["B"].start_ns, by["A"].start_ns);
  EXPECT_LE(by["B"].end_ns, by["A"].end_ns);
  // Closed in END order: B, A, C.
  EXPECT_EQ(p.ranges()[0].name, "B");
  EXPECT_EQ(p.ranges()[1].name, "A");
  EXPECT_EQ(p.ranges()[2].name, "C");
  EXPECT_TRUE(p.notes().empty());
}

TEST(NvtxPairing, UnmatchedRecordsAreNotesNeverSilentlyLost) {
  NvtxPairing p;
  p.add(End(99, 5));                             // opened before tracing began
  p.add(Start(4, 100, 9, "still open", "dom"));  // never closed
  p.add(Start(5, 200, 9, "closed"));
  p.add(End(5, 300, 9));
  EXPECT_EQ(p.ranges().size(), 1u);
  EXPECT_EQ(p.unmatched_ends(), 1u);
  ASSERT_EQ(p.open().size(), 1u);
  const auto notes = p.notes();
  const std::string all = joined(notes);
  ASSERT_EQ(notes.size(), 2u) << all;
  EXPECT_NE(all.find("'still open' (domain 'dom') opened on thread 9 at 100 ns"), std::string::npos)
      << all;
  EXPECT_NE(all.find("truncated"), std::string::npos) << all;
  EXPECT_NE(all.find("1 NVTX ranges ended without a recorded start"), std::string::npos) << all;
  // The open range closes later (tracing resumed): it pairs, and its note goes away.
  p.add(End(4, 400, 9));
  EXPECT_EQ(p.ranges().size(), 2u);
  EXPECT_EQ(p.ranges()[1].name, "still open");
  EXPECT_EQ(p.ranges()[1].end_ns, 400);
  EXPECT_EQ(joined(p.notes()).find("still open"), std::string::npos);
}

TEST(NvtxPairing, ReplacedStartsEndsBeforeStartsAndClearing) {
  NvtxPairing p;
  p.add(Start(1, 100, 1, "first"));
  p.add(Start(1, 150, 1, "second"));  // the same id again before an END: the first is lost
  EXPECT_EQ(p.replaced_starts(), 1u);
  p.add(End(1, 120, 1));  // an END stamped before its START: a zero-length range, never negative
  ASSERT_EQ(p.ranges().size(), 1u);
  EXPECT_EQ(p.ranges()[0].name, "second");
  EXPECT_EQ(p.ranges()[0].duration_ns(), 0);
  EXPECT_NE(joined(p.notes()).find("1 NVTX range starts were replaced"), std::string::npos);
  // clear_closed forgets closed ranges and counts, keeps what is open.
  p.add(Start(2, 500, 1, "open across clear"));
  p.clear_closed();
  EXPECT_TRUE(p.ranges().empty());
  EXPECT_EQ(p.replaced_starts(), 0u);
  EXPECT_EQ(p.open().size(), 1u);
  p.add(End(2, 600, 1));
  ASSERT_EQ(p.ranges().size(), 1u);
  EXPECT_EQ(p.ranges()[0].name, "open across clear");
}

TEST(NvtxPairing, ManyOpenRangesAreListedUpToALimitThenCounted) {
  NvtxPairing p;
  for (int i = 0; i < 12; ++i) {
    std::string name = "r";
    name += std::to_string(i);  // (not "r" + ...: GCC 12 warns falsely, -Wrestrict)
    p.add(Start(static_cast<uint64_t>(i), 1000 - i, 1, name));
  }
  const auto notes = p.notes(10);
  ASSERT_EQ(notes.size(), 11u);
  EXPECT_NE(notes[0].find("'r11'"), std::string::npos) << "oldest first: " << notes[0];
  EXPECT_NE(notes[10].find("2 more NVTX ranges were not closed"), std::string::npos) << notes[10];
}

TEST(NvtxPairing, RanksFromTheThreadThatOpenedTheRange) {
  std::vector<NvtxRange> v(3);
  v[0].thread = 100;
  v[1].thread = 200;
  v[2].thread = 300;
  cco::trace::assign_nvtx_ranks(v, {{100, 0}, {200, 1}}, 5);
  EXPECT_EQ(v[0].rank, 0);
  EXPECT_EQ(v[1].rank, 1);
  EXPECT_EQ(v[2].rank, 5);  // a thread that is no rank's: the fallback
}

NvtxRange R(int rank, uint64_t thread, int64_t start, int64_t end, std::string name,
            std::string domain = {}) {
  NvtxRange r;
  r.rank = rank;
  r.thread = thread;
  r.start_ns = start;
  r.end_ns = end;
  r.name = std::move(name);
  r.domain = std::move(domain);
  return r;
}

Trace with_ranges() {
  Trace t = rich();
  const int64_t base = 1'763'780'000'123'456'789;
  t.ranges = {R(0, 4242, base - 20'000, base + 1'300'000, "concurrent, iteration 0"),
              R(0, 4242, base + 10, base + 1'200'000, "inner \"q\" <&>", "ccoverlap"),
              R(1, 4243, base - 5, base + 3000, "concurrent, iteration 0"),
              R(0, 77, base + 5, base + 5, "zero length on another thread")};
  t.normalize();
  return t;
}

TEST(NvtxJson, RoundTripIsExactAndRowsSitAboveTheStreams) {
  const Trace t = with_ranges();
  // normalize: by rank, then start, outer before inner.
  ASSERT_EQ(t.ranges.size(), 4u);
  EXPECT_EQ(t.ranges[0].name, "concurrent, iteration 0");
  EXPECT_EQ(t.ranges[1].name, "zero length on another thread");
  EXPECT_EQ(t.ranges[2].name, "inner \"q\" <&>");
  EXPECT_EQ(t.ranges[3].rank, 1);
  const auto j = cco::trace::trace_to_json(t);
  const std::string text = j.dump();
  const Trace u = cco::trace::parse_trace(text, "mem");
  ASSERT_EQ(u.ranges.size(), t.ranges.size());
  for (std::size_t i = 0; i < t.ranges.size(); ++i) {
    EXPECT_EQ(u.ranges[i].name, t.ranges[i].name);
    EXPECT_EQ(u.ranges[i].domain, t.ranges[i].domain);
    EXPECT_EQ(u.ranges[i].start_ns, t.ranges[i].start_ns);  // exact to the ns
    EXPECT_EQ(u.ranges[i].end_ns, t.ranges[i].end_ns);
    EXPECT_EQ(u.ranges[i].rank, t.ranges[i].rank);
    EXPECT_EQ(u.ranges[i].thread, t.ranges[i].thread);
  }
  EXPECT_EQ(u.kernels.size(), t.kernels.size()) << "ranges are not kernels";
  EXPECT_EQ(cco::trace::analyze(u).kernels, cco::trace::analyze(t).kernels);
  EXPECT_EQ(cco::trace::trace_to_json(u).dump(), text);

  // Perfetto: complete events, cat "nvtx", tid = 2^30 + thread (below 2^31: Perfetto keeps
  // 32-bit tids), rows named and sorted first.
  std::map<std::pair<int, int64_t>, std::string> row_name;
  std::map<std::pair<int, int64_t>, int64_t> row_sort;
  int ranges = 0;
  for (const auto& e : j["traceEvents"]) {
    const auto key = std::make_pair(e.value("pid", -1), e.value("tid", int64_t{-1}));
    if (e["ph"] == "M" && e["name"] == "thread_name") row_name[key] = e["args"]["name"];
    if (e["ph"] == "M" && e["name"] == "thread_sort_index") row_sort[key] = e["args"]["sort_index"];
    if (e["ph"] == "X" && e["cat"] == "nvtx") {
      ++ranges;
      EXPECT_GE(e["tid"].get<int64_t>(), cco::trace::kNvtxTidBase);
      EXPECT_LT(e["tid"].get<int64_t>(), int64_t{1} << 31) << "Perfetto would truncate it";
      EXPECT_GE(e["dur"].get<double>(), 0.0);
    }
  }
  EXPECT_EQ(ranges, 4);
  const int64_t nv = cco::trace::kNvtxTidBase;
  auto name = [&](int pid, int64_t tid) { return row_name[std::make_pair(pid, tid)]; };
  auto sort = [&](int pid, int64_t tid) {
    const auto it = row_sort.find(std::make_pair(pid, tid));
    return it == row_sort.end() ? int64_t{-1} : it->second;
  };
  EXPECT_EQ(name(0, nv + 4242), "NVTX (thread 4242)");
  EXPECT_EQ(name(0, nv + 77), "NVTX (thread 77)");
  EXPECT_EQ(name(1, nv + 4243), "NVTX (thread 4243)");
  EXPECT_EQ(row_sort.size(), 6u);  // 3 NVTX rows, 3 streams
  // Within a rank the NVTX rows come before the streams; rank 0's rows before rank 1's.
  EXPECT_EQ(sort(0, nv + 77), 0);
  EXPECT_EQ(sort(0, nv + 4242), 1);
  EXPECT_EQ(sort(0, 13), 2);
  EXPECT_EQ(sort(0, 14), 3);
  EXPECT_EQ(sort(1, nv + 4243), 4);
  EXPECT_EQ(sort(1, 7), 5);
  // A trace without ranges keeps the stream rows' indices it always had.
  int64_t expect = 0;
  const auto plain = cco::trace::trace_to_json(rich());
  for (const auto& e : plain["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_sort_index") {
      EXPECT_EQ(e["args"]["sort_index"], expect);
      ++expect;
    }
  }
  EXPECT_EQ(expect, 3);
}

TEST(NvtxJson, TimesFromTsAndDurAndThreadFromTid) {
  const Trace t = with_ranges();
  auto j = cco::trace::trace_to_json(t);
  for (auto& e : j["traceEvents"])
    if (e["ph"] == "X" && e["cat"] == "nvtx") {
      e["args"].erase("start_ns");
      e["args"].erase("end_ns");
      e["args"].erase("thread");
    }
  const Trace u = cco::trace::trace_from_json(j);
  ASSERT_EQ(u.ranges.size(), t.ranges.size());
  for (std::size_t i = 0; i < t.ranges.size(); ++i) {
    EXPECT_EQ(u.ranges[i].start_ns, t.ranges[i].start_ns);
    EXPECT_EQ(u.ranges[i].end_ns, t.ranges[i].end_ns);
    EXPECT_EQ(u.ranges[i].thread, t.ranges[i].thread);
  }
  // Files written before the rows moved below 2^31 put them at 2^32 + thread: still read.
  for (auto& e : j["traceEvents"])
    if (e["ph"] == "X" && e["cat"] == "nvtx")
      e["tid"] = e["tid"].get<int64_t>() - cco::trace::kNvtxTidBase + cco::trace::kOldNvtxTidBase;
  const Trace old = cco::trace::trace_from_json(j);
  ASSERT_EQ(old.ranges.size(), t.ranges.size());
  for (std::size_t i = 0; i < t.ranges.size(); ++i) EXPECT_EQ(old.ranges[i].thread, t.ranges[i].thread);
  // A trace of ranges alone: the ranks come from the ranges, times from the first range.
  Trace only;
  only.ranges = {R(3, 1, 500, 900, "step")};
  only.normalize();
  ASSERT_EQ(only.ranks.size(), 1u);
  EXPECT_EQ(only.ranks[0].rank, 3);
  const Trace back = cco::trace::parse_trace(cco::trace::trace_to_json(only).dump(), "r");
  ASSERT_EQ(back.ranges.size(), 1u);
  EXPECT_EQ(back.ranges[0].start_ns, 500);
  EXPECT_EQ(back.ranges[0].end_ns, 900);
}

TEST(NvtxJson, BadRangeEventsAreOneClearError) {
  using cco::trace::parse_trace;
  auto ev = [](const std::string& e) { return R"({"traceEvents": [)" + e + "]}"; };
  expect_error(
      [&] {
        parse_trace(ev(R"({"ph":"X","cat":"nvtx","name":"r","pid":0,"tid":1,"dur":5})"), "f");
      },
      {"f: traceEvents[0] (r)", "missing \"ts\""});
  expect_error(
      [&] { parse_trace(ev(R"({"ph":"X","cat":"nvtx","name":"r","tid":1,"ts":1,"dur":5})"), "f"); },
      {"missing \"pid\""});
  expect_error(
      [&] {
        parse_trace(ev(R"({"ph":"X","cat":"nvtx","name":"r","pid":0,"tid":1,"ts":1,"dur":-2})"),
                    "f");
      },
      {"negative duration"});
  expect_error(
      [&] {
        parse_trace(ev(R"({"ph":"X","cat":"nvtx","name":"r","pid":0,"tid":1,"ts":1,"dur":5,
                                     "args":{"start_ns":100,"end_ns":50}})"),
                    "f");
      },
      {"ends before it starts"});
  expect_error(
      [&] {
        parse_trace(ev(R"({"ph":"X","cat":"nvtx","name":"r","pid":0,"tid":1,"ts":1,"dur":5,
                                     "args":{"thread":"main"}})"),
                    "f");
      },
      {"\"thread\" is not an integer"});
  expect_error(
      [&] {
        parse_trace(ev(R"({"ph":"X","cat":"nvtx","name":"r","pid":0,"tid":1,"ts":1,"dur":5,
                                     "args":{"thread":-3}})"),
                    "f");
      },
      {"\"thread\" is negative"});
  expect_error(
      [&] {
        parse_trace(ev(R"({"ph":"X","cat":"nvtx","name":"r","pid":0,"tid":1,"ts":1,"dur":5,
                                     "args":{"domain":7}})"),
                    "f");
      },
      {"\"domain\" is not a string"});
  expect_error(
      [&] {
        parse_trace(ev(R"({"ph":"X","cat":"nvtx","name":"r","pid":0,"tid":1,"ts":1,"dur":5,
                                     "args":"x"})"),
                    "f");
      },
      {"\"args\" is not an object"});
  // Mutated files with ranges: model::Error or a valid trace, nothing else.
  const std::string good = cco::trace::trace_to_json(with_ranges()).dump();
  uint64_t seed = 99;
  int errors = 0;
  for (int i = 0; i < 1500; ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    std::string s = good;
    const std::size_t at = (seed >> 33) % s.size();
    if (i % 2)
      s = s.substr(0, at);
    else
      s[at] = static_cast<char>((seed >> 13) % 128);
    try {
      (void)parse_trace(s, "m.json");
    } catch (const Error& e) {
      ++errors;
      EXPECT_EQ(std::string(e.what()).rfind("m.json: ", 0), 0u) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "escaped as " << typeid(e).name() << ": " << e.what();
      return;
    }
  }
  EXPECT_GT(errors, 500);
}

TEST(NvtxJson, RangesFollowTheirRanksWhenFilesMerge) {
  Trace a = make({K(0, 1, kComp, 0, 100)});
  a.source = "r0.json";
  a.ranges = {R(0, 11, 0, 50, "step 0")};
  Trace b = make({K(1, 1, kComp, 0, 100)});
  b.source = "r1.json";
  b.ranges = {R(1, 12, 0, 60, "step 0")};
  const Trace m = cco::trace::merge_traces({a, b});
  ASSERT_EQ(m.ranges.size(), 2u);
  EXPECT_EQ(m.ranges[0].rank, 0);
  EXPECT_EQ(m.ranges[1].rank, 1);
  // A rank seen only in one file's ranges still belongs to that file.
  Trace c;
  c.source = "c.json";
  c.ranges = {R(0, 13, 0, 10, "stray")};
  expect_error([&] { cco::trace::merge_traces({a, c}); }, {"rank 0", "r0.json", "c.json"});
}

}  // namespace

#ifdef CCO_TRACE_HAS_ZLIB
// zlib counts its input in 32 bits: gzip and gunzip feed it in pieces (1 GiB; here 7 bytes), and
// the bytes come back whole, across pieces and gzip members; data cut short is still refused.
TEST(TraceGzip, InputFedInPiecesComesBackWhole) {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "{\"ts\": " + std::to_string(i * 7919 % 10007) + "},";
  const std::string one = cco::trace::detail::gzip(text, "t", 7);
  EXPECT_EQ(one, cco::trace::gzip(text, "t"));  // the pieces do not change the stream
  EXPECT_EQ(cco::trace::detail::gunzip(one, text.size(), "t", 7), text);
  const std::string two = one + cco::trace::detail::gzip("tail", "t", 3);
  EXPECT_EQ(cco::trace::detail::gunzip(two, text.size() + 4, "t", 5), text + "tail");
  EXPECT_THROW(cco::trace::detail::gunzip(one.substr(0, one.size() / 2), text.size(), "t", 7),
               cco::model::Error);
  EXPECT_THROW(cco::trace::detail::gunzip(one, text.size() - 1, "t", 7), cco::model::Error);
}
#endif

// A trace written under a .gz name is gzip, as it says (HTA stopped with BadGzipFile at plain JSON
// there), and reads back exactly; a plain name stays plain JSON.
TEST(TraceJson, AGzNameIsWrittenAsGzip) {
  cco::trace::Trace t;
  cco::trace::KernelEvent k;
  k.name = "gemm";
  k.start_ns = 1000;
  k.end_ns = 2000;
  t.kernels.push_back(k);
  t.normalize();
  const std::string gz = testing::TempDir() + "cco_trace_gz_" + std::to_string(::getpid()) + ".json.gz";
  const std::string plain = testing::TempDir() + "cco_trace_plain_" + std::to_string(::getpid()) + ".json";
#ifdef CCO_TRACE_HAS_ZLIB
  cco::trace::write_trace_file(t, gz);
  const std::string bytes = cco::model::read_file(gz, 1 << 20);
  ASSERT_GE(bytes.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(bytes[1]), 0x8b);
  const auto back = cco::trace::read_trace_file(gz);
  ASSERT_EQ(back.kernels.size(), 1u);
  EXPECT_EQ(back.kernels[0].name, "gemm");
  EXPECT_EQ(back.kernels[0].end_ns - back.kernels[0].start_ns, 1000);
#else
  EXPECT_THROW(cco::trace::write_trace_file(t, gz), cco::model::Error);
#endif
  cco::trace::write_trace_file(t, plain);
  EXPECT_EQ(cco::model::read_file(plain, 1 << 20).front(), '{');
  std::remove(gz.c_str());
  std::remove(plain.c_str());
}
