// Overlap metrics, collective bandwidth, GEMM FLOPs and statistics against hand-computed values;
// plus the name parsers of model/types.hpp and the collectives.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "model/cta_policy.hpp"
#include "model/limits.hpp"
#include "model/metrics.hpp"
#include "model/types.hpp"

namespace {

using cco::model::Collective;
using cco::model::DType;
using cco::model::Error;
using cco::model::OverlapTimes;
using cco::model::RedOp;

OverlapTimes times(double comp, double comm, double seq, double t) {
  OverlapTimes o;
  o.t_comp = comp;
  o.t_comm = comm;
  o.t_seq = seq;
  o.t = t;
  return o;
}

// ------------------------------------------------------------------------------------------
// Overlap metrics: C = 10, M = 4, sequential 14 unless said otherwise.
// ------------------------------------------------------------------------------------------

TEST(Overlap, FullOverlap) {
  const auto o = times(10, 4, 14, 10);
  EXPECT_DOUBLE_EQ(cco::model::ideal(o), 10.0);                       // max(10, 4)
  EXPECT_DOUBLE_EQ(cco::model::reduction(o), 2.0 / 7.0);              // 1 - 10/14 = 4/14
  EXPECT_DOUBLE_EQ(cco::model::ideal_reduction(o), 2.0 / 7.0);        // 1 - 10/14
  EXPECT_DOUBLE_EQ(cco::model::overlap_efficiency(o), 1.0);           // (14 - 10) / 4
}

// The memory-traffic floor binds only above max(C, M): then it is the ideal, and a row cannot be
// below it. Below max(C, M) it changes nothing.
TEST(Overlap, MemoryTrafficFloor) {
  auto o = times(10, 4, 14, 12);
  o.t_mem = 9;
  EXPECT_DOUBLE_EQ(cco::model::ideal(o), 10.0);
  o.t_mem = 12;
  EXPECT_DOUBLE_EQ(cco::model::ideal(o), 12.0);
  EXPECT_DOUBLE_EQ(cco::model::ideal_reduction(o), 1.0 / 7.0);  // 1 - 12/14
  using cco::model::Collective;
  EXPECT_DOUBLE_EQ(cco::model::collective_min_traffic(Collective::AllReduce, 100), 200);
  EXPECT_DOUBLE_EQ(cco::model::collective_min_traffic(Collective::AllToAll, 100), 200);
  EXPECT_DOUBLE_EQ(cco::model::collective_min_traffic(Collective::AllGather, 100), 100);
  EXPECT_DOUBLE_EQ(cco::model::collective_min_traffic(Collective::ReduceScatter, 100), 100);
  // A part whose one pass fits in L2 counts nothing; a larger one all its passes.
  EXPECT_DOUBLE_EQ(cco::model::dram_floor_bytes(1200, 12, 50), 0);
  EXPECT_DOUBLE_EQ(cco::model::dram_floor_bytes(1200, 600, 50), 1200);
  EXPECT_DOUBLE_EQ(cco::model::dram_floor_bytes(1200, 600, 0), 1200);  // L2 unknown
}

TEST(Overlap, NoOverlap) {
  const auto o = times(10, 4, 14, 14);
  EXPECT_DOUBLE_EQ(cco::model::reduction(o), 0.0);                    // 1 - 14/14
  EXPECT_DOUBLE_EQ(cco::model::overlap_efficiency(o), 0.0);           // (14 - 14) / 4
  EXPECT_DOUBLE_EQ(cco::model::ideal_reduction(o), 2.0 / 7.0);        // independent of T
}

TEST(Overlap, PartialOverlap) {
  const auto o = times(10, 4, 14, 12);
  EXPECT_DOUBLE_EQ(cco::model::reduction(o), 1.0 / 7.0);              // 1 - 12/14 = 2/14
  EXPECT_DOUBLE_EQ(cco::model::overlap_efficiency(o), 0.5);           // (14 - 12) / 4
}

TEST(Overlap, WorseThanSequential) {
  const auto o = times(10, 4, 14, 16);
  EXPECT_DOUBLE_EQ(cco::model::reduction(o), -1.0 / 7.0);             // 1 - 16/14 = -2/14
  EXPECT_DOUBLE_EQ(cco::model::overlap_efficiency(o), -0.5);          // (14 - 16) / 4
}

// E_best: the best parts measured anywhere in the run, C_best = 10, M_best = 3 (a faster
// collective seen under another setting), so S = 13 and S - L = 3.
TEST(Overlap, EfficiencyAgainstTheBestParts) {
  EXPECT_DOUBLE_EQ(cco::model::efficiency_best(10, 3, 10), 1.0);        // (13 - 10) / 3
  EXPECT_DOUBLE_EQ(cco::model::efficiency_best(10, 3, 12), 1.0 / 3.0);  // (13 - 12) / 3
  // The same run judged by E with the default collective (4): (14 - 12) / 4 = 0.5, more than
  // E_best's 1/3, because the faster collective's saving is not overlap.
  EXPECT_DOUBLE_EQ(cco::model::overlap_efficiency(times(10, 4, 14, 12)), 0.5);
  EXPECT_DOUBLE_EQ(cco::model::efficiency_best(3, 10, 14), -1.0 / 3.0);  // slower than S
  EXPECT_TRUE(std::isnan(cco::model::efficiency_best(0, 3, 5)));
  EXPECT_TRUE(std::isnan(cco::model::efficiency_best(10, -1, 5)));
}

TEST(Overlap, CommunicationTheLongerPart) {
  // C = 3, M = 8, seq 11, T = 9: ideal = 8; reduction = 1 - 9/11 = 2/11;
  // ideal_reduction = 1 - 8/11 = 3/11; E = (11 - 9) / 3 = 2/3
  const auto o = times(3, 8, 11, 9);
  EXPECT_DOUBLE_EQ(cco::model::ideal(o), 8.0);
  EXPECT_DOUBLE_EQ(cco::model::reduction(o), 2.0 / 11.0);
  EXPECT_DOUBLE_EQ(cco::model::ideal_reduction(o), 3.0 / 11.0);
  EXPECT_DOUBLE_EQ(cco::model::overlap_efficiency(o), 2.0 / 3.0);
}

TEST(Overlap, EfficiencyUsesMeasuredSequentialTimeUnclamped) {
  // sequential 15 > C + M = 14 (launch gaps): E = (15 - 10) / 4 = 1.25, not clamped to 1
  EXPECT_DOUBLE_EQ(cco::model::overlap_efficiency(times(10, 4, 15, 10)), 1.25);
}

TEST(Overlap, ZeroLengthShorterPartIsNaN) {
  EXPECT_TRUE(std::isnan(cco::model::overlap_efficiency(times(10, 0, 10, 10))));
  EXPECT_TRUE(std::isnan(cco::model::overlap_efficiency(times(0, 5, 5, 5))));
  EXPECT_TRUE(std::isnan(cco::model::overlap_efficiency(times(0, 0, 0, 0))));
  // the reduction is still defined: 1 - 10/10 = 0
  EXPECT_DOUBLE_EQ(cco::model::reduction(times(10, 0, 10, 10)), 0.0);
}

TEST(Overlap, ZeroSequentialTimeIsNaN) {
  EXPECT_TRUE(std::isnan(cco::model::reduction(times(0, 0, 0, 1))));
  EXPECT_TRUE(std::isnan(cco::model::ideal_reduction(times(0, 0, 0, 1))));
}

// ------------------------------------------------------------------------------------------
// Collective bandwidth (nccl-tests)
// ------------------------------------------------------------------------------------------

TEST(BusBw, FactorsForEveryCollective) {
  using cco::model::busbw_factor;
  // all-reduce 2(n-1)/n: n=1 -> 0, n=2 -> 1, n=8 -> 14/8 = 1.75
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::AllReduce, 1), 0.0);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::AllReduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::AllReduce, 8), 1.75);
  // all-gather, reduce-scatter, all-to-all (n-1)/n: 0, 0.5, 7/8 = 0.875
  for (Collective c : {Collective::AllGather, Collective::ReduceScatter, Collective::AllToAll}) {
    SCOPED_TRACE(cco::model::to_string(c));
    EXPECT_DOUBLE_EQ(busbw_factor(c, 1), 0.0);
    EXPECT_DOUBLE_EQ(busbw_factor(c, 2), 0.5);
    EXPECT_DOUBLE_EQ(busbw_factor(c, 8), 0.875);
  }
  // send/recv, broadcast, reduce: 1
  for (Collective c : {Collective::SendRecv, Collective::Broadcast, Collective::Reduce}) {
    SCOPED_TRACE(cco::model::to_string(c));
    EXPECT_DOUBLE_EQ(busbw_factor(c, 1), 1.0);
    EXPECT_DOUBLE_EQ(busbw_factor(c, 2), 1.0);
    EXPECT_DOUBLE_EQ(busbw_factor(c, 8), 1.0);
  }
}

TEST(BusBw, RanksBelowOneThrow) {
  EXPECT_THROW(cco::model::busbw_factor(Collective::AllReduce, 0), Error);
  EXPECT_THROW(cco::model::busbw_factor(Collective::SendRecv, -1), Error);
  EXPECT_THROW(cco::model::busbw_gbps(Collective::AllGather, 0, 1e9, 1.0), Error);
}

TEST(BusBw, AlgbwIsDecimalGigabytesPerSecond) {
  // 1e9 B in 1 s = 1 GB/s (1e9, not 2^30)
  EXPECT_DOUBLE_EQ(cco::model::algbw_gbps(1e9, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(cco::model::algbw_gbps(1073741824.0, 1.0), 1.073741824);
  // 256 MiB = 268435456 B in 1 ms: 268435456 / 1e-3 / 1e9 = 268.435456 GB/s
  EXPECT_DOUBLE_EQ(cco::model::algbw_gbps(268435456.0, 1e-3), 268.435456);
  EXPECT_TRUE(std::isnan(cco::model::algbw_gbps(1e9, 0.0)));
}

TEST(BusBw, BusbwIsAlgbwTimesFactor) {
  // 1e9 B in 0.5 s: algbw 2 GB/s
  EXPECT_DOUBLE_EQ(cco::model::busbw_gbps(Collective::AllReduce, 8, 1e9, 0.5), 3.5);   // 2*1.75
  EXPECT_DOUBLE_EQ(cco::model::busbw_gbps(Collective::AllGather, 8, 1e9, 0.5), 1.75);  // 2*0.875
  EXPECT_DOUBLE_EQ(cco::model::busbw_gbps(Collective::SendRecv, 2, 1e9, 0.5), 2.0);
  EXPECT_DOUBLE_EQ(cco::model::busbw_gbps(Collective::AllReduce, 1, 1e9, 0.5), 0.0);
}

TEST(Gemm, Flops) {
  EXPECT_DOUBLE_EQ(cco::model::gemm_flops(1, 1, 1), 2.0);
  EXPECT_DOUBLE_EQ(cco::model::gemm_flops(2, 3, 4), 48.0);                 // 2*2*3*4
  EXPECT_DOUBLE_EQ(cco::model::gemm_flops(4096, 4096, 4096), 137438953472.0);  // 2*2^36
  EXPECT_DOUBLE_EQ(cco::model::gemm_flops(4096, 4096, 4096, 3), 412316860416.0);
  EXPECT_DOUBLE_EQ(cco::model::gemm_flops(8192, 1024, 512, 1), 8589934592.0);  // 2*2^32
  EXPECT_DOUBLE_EQ(cco::model::gemm_flops(0, 4096, 4096), 0.0);
  EXPECT_DOUBLE_EQ(cco::model::gemm_flops(16, 16, 16, 0), 0.0);
}

// ------------------------------------------------------------------------------------------
// Statistics
// ------------------------------------------------------------------------------------------

TEST(Percentile, NumpyLinearInterpolation) {
  using cco::model::percentile;
  const std::vector<double> s = {1, 2, 3, 4};
  // position = q/100 * (n - 1), interpolate between the two closest ranks
  EXPECT_DOUBLE_EQ(percentile(s, 0), 1.0);
  EXPECT_DOUBLE_EQ(percentile(s, 25), 1.75);   // pos 0.75: 1 + 0.75*(2-1)
  EXPECT_DOUBLE_EQ(percentile(s, 50), 2.5);    // pos 1.5
  EXPECT_DOUBLE_EQ(percentile(s, 75), 3.25);   // pos 2.25
  EXPECT_DOUBLE_EQ(percentile(s, 10), 1.3);    // pos 0.3
  EXPECT_DOUBLE_EQ(percentile(s, 90), 3.7);    // pos 2.7
  EXPECT_DOUBLE_EQ(percentile(s, 100), 4.0);
  // order of the input does not matter
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 25), 1.75);
  // [10, 20, 40]: p75 pos 1.5 -> 20 + 0.5*20 = 30; p40 pos 0.8 -> 10 + 0.8*10 = 18
  EXPECT_DOUBLE_EQ(percentile({40, 10, 20}, 75), 30.0);
  EXPECT_DOUBLE_EQ(percentile({40, 10, 20}, 40), 18.0);
  // one sample: every percentile is it
  EXPECT_DOUBLE_EQ(percentile({7}, 0), 7.0);
  EXPECT_DOUBLE_EQ(percentile({7}, 63), 7.0);
  EXPECT_DOUBLE_EQ(percentile({7}, 100), 7.0);
}

TEST(Percentile, BadInputThrows) {
  using cco::model::percentile;
  EXPECT_THROW(percentile({}, 50), Error);
  EXPECT_THROW(percentile({1, 2}, -0.1), Error);
  EXPECT_THROW(percentile({1, 2}, 100.1), Error);
  EXPECT_THROW(percentile({1, 2}, std::nan("")), Error);
}

TEST(Median, OddAndEven) {
  EXPECT_DOUBLE_EQ(cco::model::median({3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(cco::model::median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(cco::model::median({5}), 5.0);
  EXPECT_DOUBLE_EQ(cco::model::median({1, 100}), 50.5);
  EXPECT_THROW(cco::model::median({}), Error);
}

TEST(Summarize, EvenCount) {
  // [2,4,4,4,5,5,7,9]: n 8, min 2, max 9, mean 40/8 = 5
  // squared deviations 9+1+1+1+0+0+4+16 = 32 -> sample variance 32/7 -> stdev sqrt(32/7)
  // median pos 3.5 -> (4+5)/2 = 4.5
  // p10 pos 0.7 -> 2 + 0.7*2 = 3.4;  p25 pos 1.75 -> 4 + 0.75*0 = 4
  // p75 pos 5.25 -> 5 + 0.25*2 = 5.5; p90 pos 6.3 -> 7 + 0.3*2 = 7.6
  // |x - 4.5| sorted: .5 .5 .5 .5 .5 2.5 2.5 4.5 -> MAD = median = 0.5
  // rel_iqr = (5.5 - 4) / 4.5 = 1/3
  const auto s = cco::model::summarize({5, 2, 9, 4, 7, 4, 5, 4});
  EXPECT_EQ(s.n, 8u);
  EXPECT_DOUBLE_EQ(s.min, 2.0);
  EXPECT_DOUBLE_EQ(s.max, 9.0);
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  EXPECT_DOUBLE_EQ(s.stdev, std::sqrt(32.0 / 7.0));
  EXPECT_DOUBLE_EQ(s.median, 4.5);
  EXPECT_DOUBLE_EQ(s.p10, 3.4);
  EXPECT_DOUBLE_EQ(s.p25, 4.0);
  EXPECT_DOUBLE_EQ(s.p75, 5.5);
  EXPECT_DOUBLE_EQ(s.p90, 7.6);
  EXPECT_DOUBLE_EQ(s.mad, 0.5);
  EXPECT_DOUBLE_EQ(s.rel_iqr(), 1.0 / 3.0);
}

TEST(Summarize, OddCountWithOutlier) {
  // [1,2,3,4,100]: mean 110/5 = 22; deviations -21,-20,-19,-18,78
  // squares 441+400+361+324+6084 = 7610 -> /4 = 1902.5 -> stdev sqrt(1902.5)
  // median 3; p25 pos 1 -> 2; p75 pos 3 -> 4; |x-3| = 2,1,0,1,97 -> sorted 0,1,1,2,97 -> MAD 1
  // rel_iqr = (4 - 2) / 3 = 2/3
  const auto s = cco::model::summarize({1, 2, 3, 4, 100});
  EXPECT_EQ(s.n, 5u);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 100.0);
  EXPECT_DOUBLE_EQ(s.mean, 22.0);
  EXPECT_DOUBLE_EQ(s.stdev, std::sqrt(1902.5));
  EXPECT_DOUBLE_EQ(s.median, 3.0);
  EXPECT_DOUBLE_EQ(s.p25, 2.0);
  EXPECT_DOUBLE_EQ(s.p75, 4.0);
  EXPECT_DOUBLE_EQ(s.mad, 1.0);
  EXPECT_DOUBLE_EQ(s.rel_iqr(), 2.0 / 3.0);
}

TEST(Summarize, OneSample) {
  const auto s = cco::model::summarize({3.5});
  EXPECT_EQ(s.n, 1u);
  EXPECT_DOUBLE_EQ(s.min, 3.5);
  EXPECT_DOUBLE_EQ(s.max, 3.5);
  EXPECT_DOUBLE_EQ(s.mean, 3.5);
  EXPECT_DOUBLE_EQ(s.stdev, 0.0);  // no spread from one sample
  EXPECT_DOUBLE_EQ(s.median, 3.5);
  EXPECT_DOUBLE_EQ(s.mad, 0.0);
  EXPECT_DOUBLE_EQ(s.rel_iqr(), 0.0);
}

TEST(Summarize, EmptyIsNaN) {
  const auto s = cco::model::summarize({});
  EXPECT_EQ(s.n, 0u);
  for (double v : {s.min, s.max, s.mean, s.stdev, s.median, s.p10, s.p25, s.p75, s.p90, s.mad})
    EXPECT_TRUE(std::isnan(v));
  EXPECT_TRUE(std::isnan(s.rel_iqr()));
}

TEST(Summarize, ZeroMedianGivesNaNRelativeSpread) {
  // [-1, 0, 1]: median 0 -> (p75 - p25) / 0 is undefined
  const auto s = cco::model::summarize({-1, 0, 1});
  EXPECT_DOUBLE_EQ(s.median, 0.0);
  EXPECT_DOUBLE_EQ(s.p25, -0.5);
  EXPECT_DOUBLE_EQ(s.p75, 0.5);
  EXPECT_TRUE(std::isnan(s.rel_iqr()));
}

// ------------------------------------------------------------------------------------------
// Names: collectives, data types, reduction operators
// ------------------------------------------------------------------------------------------

TEST(Names, ParseCollective) {
  using cco::model::parse_collective;
  EXPECT_EQ(parse_collective("allreduce"), Collective::AllReduce);
  EXPECT_EQ(parse_collective("all_reduce"), Collective::AllReduce);
  EXPECT_EQ(parse_collective("all_reduce_perf"), Collective::AllReduce);
  EXPECT_EQ(parse_collective("AllReduce"), Collective::AllReduce);
  EXPECT_EQ(parse_collective("allgather"), Collective::AllGather);
  EXPECT_EQ(parse_collective("all_gather_perf"), Collective::AllGather);
  EXPECT_EQ(parse_collective("reducescatter"), Collective::ReduceScatter);
  EXPECT_EQ(parse_collective("reduce_scatter_perf"), Collective::ReduceScatter);
  EXPECT_EQ(parse_collective("alltoall"), Collective::AllToAll);
  EXPECT_EQ(parse_collective("alltoall_perf"), Collective::AllToAll);
  EXPECT_EQ(parse_collective("sendrecv"), Collective::SendRecv);
  EXPECT_EQ(parse_collective("sendrecv_perf"), Collective::SendRecv);
  EXPECT_EQ(parse_collective("broadcast"), Collective::Broadcast);
  EXPECT_EQ(parse_collective("BROADCAST_PERF"), Collective::Broadcast);
  EXPECT_EQ(parse_collective("reduce"), Collective::Reduce);
  EXPECT_EQ(parse_collective("reduce_perf"), Collective::Reduce);
}

TEST(Names, CollectiveRoundTripAndNames) {
  const std::vector<std::string> want = {"allreduce", "allgather", "reducescatter", "alltoall",
                                         "sendrecv",  "broadcast", "reduce",        "gather",
                                         "scatter"};
  EXPECT_EQ(cco::model::collective_names(), want);
  for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter,
                       Collective::AllToAll, Collective::SendRecv, Collective::Broadcast,
                       Collective::Reduce, Collective::Gather, Collective::Scatter})
    EXPECT_EQ(cco::model::parse_collective(cco::model::to_string(c)), c);
}

TEST(Names, UnknownCollectiveThrowsListingNames) {
  for (const char* bad : {"", "scatterv", "allgatherv_perf", "_perf", "all reduce", "allreduce_"}) {
    try {
      cco::model::parse_collective(bad);
      ADD_FAILURE() << "no throw for '" << bad << "'";
    } catch (const Error& e) {
      const std::string msg = e.what();
      for (const char* n : {"allreduce", "allgather", "reducescatter", "alltoall", "sendrecv",
                            "broadcast", "reduce", "gather", "scatter"})
        EXPECT_NE(msg.find(n), std::string::npos) << msg;
    }
  }
}

TEST(Names, ParseDType) {
  using cco::model::parse_dtype;
  for (const char* s : {"float", "fp32", "f32", "float32", "FLOAT", "Fp32"})
    EXPECT_EQ(parse_dtype(s), DType::F32) << s;
  for (const char* s : {"half", "fp16", "f16", "float16", "HALF", "FP16"})
    EXPECT_EQ(parse_dtype(s), DType::F16) << s;
  for (const char* s : {"bfloat16", "bf16", "BF16", "BFloat16"})
    EXPECT_EQ(parse_dtype(s), DType::BF16) << s;
  for (const char* bad : {"", "int8", "double", "fp8", "bf32"}) {
    try {
      parse_dtype(bad);
      ADD_FAILURE() << "no throw for '" << bad << "'";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("float"), std::string::npos) << msg;
      EXPECT_NE(msg.find("half"), std::string::npos) << msg;
      EXPECT_NE(msg.find("bfloat16"), std::string::npos) << msg;
    }
  }
}

TEST(Names, DTypeStringsAndSizes) {
  EXPECT_STREQ(cco::model::to_string(DType::F32), "float");
  EXPECT_STREQ(cco::model::to_string(DType::F16), "half");
  EXPECT_STREQ(cco::model::to_string(DType::BF16), "bfloat16");
  EXPECT_EQ(cco::model::dtype_size(DType::F32), 4u);
  EXPECT_EQ(cco::model::dtype_size(DType::F16), 2u);
  EXPECT_EQ(cco::model::dtype_size(DType::BF16), 2u);
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    EXPECT_EQ(cco::model::parse_dtype(cco::model::to_string(t)), t);
}

TEST(Names, ParseRedOp) {
  using cco::model::parse_redop;
  EXPECT_EQ(parse_redop("sum"), RedOp::Sum);
  EXPECT_EQ(parse_redop("SUM"), RedOp::Sum);
  EXPECT_EQ(parse_redop("prod"), RedOp::Prod);
  EXPECT_EQ(parse_redop("Min"), RedOp::Min);
  EXPECT_EQ(parse_redop("max"), RedOp::Max);
  EXPECT_EQ(parse_redop("avg"), RedOp::Avg);
  for (RedOp op : {RedOp::Sum, RedOp::Prod, RedOp::Min, RedOp::Max, RedOp::Avg})
    EXPECT_EQ(parse_redop(cco::model::to_string(op)), op);
  for (const char* bad : {"", "mean", "product", "all"}) {
    try {
      parse_redop(bad);
      ADD_FAILURE() << "no throw for '" << bad << "'";
    } catch (const Error& e) {
      const std::string msg = e.what();
      for (const char* n : {"sum", "prod", "min", "max", "avg"})
        EXPECT_NE(msg.find(n), std::string::npos) << msg;
    }
  }
}

}  // namespace

TEST(Names, CommRegisterRoundTripsAndListsTheNames) {
  using cco::model::CommRegister;
  for (auto r : {CommRegister::None, CommRegister::Buffer, CommRegister::Window})
    EXPECT_EQ(cco::model::parse_register(cco::model::to_string(r)), r);
  EXPECT_EQ(cco::model::parse_register("Window"), CommRegister::Window);
  for (const char* bad : {"", "win", "symmetric", "none "}) {
    try {
      cco::model::parse_register(bad);
      ADD_FAILURE() << "no throw for '" << bad << "'";
    } catch (const Error& e) {
      const std::string msg = e.what();
      for (const char* n : {"none", "buffer", "window"}) EXPECT_NE(msg.find(n), std::string::npos) << msg;
    }
  }
}

TEST(CtaPolicy, NamesNumbersAndVersions) {
  using cco::model::CtaPolicy;
  EXPECT_EQ(cco::model::parse_cta_policy("zero"), CtaPolicy::Zero);
  EXPECT_EQ(cco::model::parse_cta_policy("1"), CtaPolicy::Efficiency);
  EXPECT_EQ(cco::model::parse_cta_policy("Default"), CtaPolicy::Default);
  EXPECT_THROW(cco::model::parse_cta_policy("3"), Error);
  EXPECT_STREQ(cco::model::to_string(CtaPolicy::Zero), "zero");
  EXPECT_EQ(cco::model::nccl_version_text(22809), "2.28.9");
  EXPECT_EQ(cco::model::nccl_version_text(2708), "2.7.8");
  EXPECT_EQ(cco::model::nccl_version_text(0), "unknown");
}

// The one number encoding of files, JSON and the rows rank 0 sends: NCCL's numbers, -1 for none.
TEST(CtaPolicy, NumbersRoundTripWithMinusOneForNone) {
  using cco::model::CtaPolicy;
  using cco::model::cta_policy_from_number;
  using cco::model::cta_policy_number;
  EXPECT_EQ(cta_policy_number(std::nullopt), -1);
  EXPECT_FALSE(cta_policy_from_number(-1));
  for (const auto p : {CtaPolicy::Default, CtaPolicy::Efficiency, CtaPolicy::Zero})
    EXPECT_EQ(cta_policy_from_number(cta_policy_number(p)), p) << cco::model::to_string(p);
  EXPECT_EQ(cta_policy_number(CtaPolicy::Zero), 2);
  EXPECT_THROW(cta_policy_from_number(3), Error);
  EXPECT_THROW(cta_policy_from_number(-2), Error);
}

TEST(CtaPolicy, RefusalsSayWhyAndAllowWhatNcclCarries) {
  using cco::model::CtaPolicy;
  using cco::model::cta_policy_refusal;
  // Zero: only the collectives NCCL 2.28 runs on the copy engines, on one host, NCCL 2.28+.
  for (auto c : {Collective::AllGather, Collective::AllToAll, Collective::Gather, Collective::Scatter})
    EXPECT_EQ(cta_policy_refusal(CtaPolicy::Zero, c, 22809, true), "") << cco::model::to_string(c);
  for (auto c : {Collective::AllReduce, Collective::ReduceScatter, Collective::Broadcast,
                 Collective::Reduce, Collective::SendRecv}) {
    const auto why = cta_policy_refusal(CtaPolicy::Zero, c, 22809, true);
    EXPECT_NE(why.find(std::string(cco::model::to_string(c)) + " would run on SMs"), std::string::npos) << why;
  }
  EXPECT_EQ(cta_policy_refusal(CtaPolicy::Zero, Collective::AllGather, 22703, true),
            "CTA policy zero needs NCCL 2.28.0 or newer; the ranks load 2.27.3");
  EXPECT_NE(cta_policy_refusal(CtaPolicy::Zero, Collective::AllGather, 22809, false).find("several hosts"),
            std::string::npos);
  // An all-reduce under zero runs split in rows (reduce-scatter on SMs, all-gather on the copy
  // engines); the run's own communicator is refused, with the way to get the rows.
  EXPECT_TRUE(cco::model::zero_splits(CtaPolicy::Zero, Collective::AllReduce));
  EXPECT_FALSE(cco::model::zero_splits(CtaPolicy::Zero, Collective::ReduceScatter));
  EXPECT_EQ(cta_policy_refusal(CtaPolicy::Zero, Collective::AllReduce, 22809, true, true), "");
  EXPECT_NE(cta_policy_refusal(CtaPolicy::Zero, Collective::AllReduce, 22809, true, false)
                .find("(rows split it: --nccl-cta-policy default,zero)"),
            std::string::npos);
  EXPECT_NE(cta_policy_refusal(CtaPolicy::Zero, Collective::ReduceScatter, 22809, true, true)
                .find("reducescatter would run on SMs"),
            std::string::npos) << "only the all-reduce splits";
  EXPECT_NE(cta_policy_refusal(CtaPolicy::Zero, Collective::AllReduce, 22703, true, true).find("2.28.0"),
            std::string::npos);
  // Efficiency applies to every collective from NCCL 2.27, and across hosts.
  EXPECT_EQ(cta_policy_refusal(CtaPolicy::Efficiency, Collective::AllReduce, 22700, false), "");
  EXPECT_NE(cta_policy_refusal(CtaPolicy::Efficiency, Collective::AllReduce, 22605, true).find("2.27.0"),
            std::string::npos);
  // An unknown version (0) is not held against a row.
  EXPECT_EQ(cta_policy_refusal(CtaPolicy::Zero, Collective::AllToAll, 0, true), "");
}

TEST(Busbw, GatherAndScatterMoveNMinusOneOfNParts) {
  EXPECT_DOUBLE_EQ(cco::model::busbw_factor(Collective::Gather, 4), 0.75);
  EXPECT_DOUBLE_EQ(cco::model::busbw_factor(Collective::Scatter, 8), 7.0 / 8);
  EXPECT_EQ(cco::model::parse_collective("gather"), Collective::Gather);
  EXPECT_STREQ(cco::model::to_string(Collective::Scatter), "scatter");
}
