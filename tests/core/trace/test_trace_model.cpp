// The trace model: kernel classification, interval arithmetic, the overlap analysis on
// synthetic traces with hand-computed answers, NVTX ranges (pairing, their events). The file
// itself, its reader's errors and gzip: test_trace_format.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

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
#include "trace_test_helpers.hpp"

namespace {

using cco::model::Error;
using cco::trace::Interval;
using cco::trace::KernelCategory;
using cco::trace::KernelEvent;
using cco::trace::Trace;

using cco::test::expect_error;
using cco::test::K;
using cco::test::kComm;
using cco::test::kComp;
using cco::test::make;
using cco::test::rich;

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
