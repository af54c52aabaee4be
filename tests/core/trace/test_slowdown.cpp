// Compute slowed, by cause (trace/slowdown.hpp; issue 43 item 2): the collective's size from its
// call label, its device-memory traffic, the device's facts, the split of one kernel's slowdown,
// and the diagnosis of steps with a known memory-bound and a known SM-bound slowdown, with the
// bounds that follow from them.
#include <gtest/gtest.h>

#include "diagnosis_test_helpers.hpp"
#include "trace/slowdown.hpp"

namespace {

using namespace cco::test;
using cco::model::Collective;
using cco::trace::Beside;
using cco::trace::collective_call_label;
using cco::trace::collective_size;
using cco::trace::collective_traffic_bytes;
using cco::trace::DeviceFacts;
using cco::trace::device_facts;
using cco::trace::RankInfo;
using cco::trace::split_slowed;

TEST(CollectiveSize, ReadsTheLabelThePreloadLibraryWrites) {
  const std::string l = collective_call_label("AllReduce", "bf16", 6'000'000, 2);
  EXPECT_EQ(l, "nccl AllReduce bf16 count=6000000 ranks=2");
  const auto c = collective_size(l);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, Collective::AllReduce);
  EXPECT_EQ(c->nranks, 2);
  EXPECT_DOUBLE_EQ(c->bytes, 12e6);
  // NCCL's all-gather count is per rank: nccl-tests' size is the whole output.
  const auto g = collective_size(collective_call_label("AllGather", "f32", 1000, 4));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->kind, Collective::AllGather);
  EXPECT_DOUBLE_EQ(g->bytes, 16000);
  const auto s = collective_size("nccl Send f8e4m3 count=10 ranks=8");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->kind, Collective::SendRecv);
  EXPECT_DOUBLE_EQ(s->bytes, 10);
}

TEST(CollectiveSize, AnythingElseIsNoSize) {
  for (const char* bad :
       {"", "cublasLtMatmul bf16 TN m=1 n=2 k=3", "nccl AllReduce bf16 count=10", "nccl AllReduce bf16 count=10 ranks=2 x",
        "nccl AllReduce q7 count=10 ranks=2", "nccl AllReduce bf16 count=1x ranks=2",
        "nccl AllReduce bf16 count=10 ranks=0", "nccl Barrier bf16 count=10 ranks=2",
        "nccl AllReduce bf16 count=-1 ranks=2", "nccl AllReduce bf16 ranks=2 count=10",
        "nccl AllReduce bf16 count=99999999999999999999 ranks=2"})
    EXPECT_FALSE(collective_size(bad)) << bad;
}

TEST(CollectiveTraffic, TheInputAndOutputPlusWhatPeersSend) {
  // A ring all-reduce of S bytes at 2 ranks: S read, S written, and S received (written, read).
  EXPECT_DOUBLE_EQ(collective_traffic_bytes({Collective::AllReduce, 1e6, 2}), 4e6);
  // All-gather of a 1 MB output at 4 ranks: the output written, and 3/4 of it received.
  EXPECT_DOUBLE_EQ(collective_traffic_bytes({Collective::AllGather, 1e6, 4}), 1e6 + 1.5e6);
  EXPECT_DOUBLE_EQ(collective_traffic_bytes({Collective::AllReduce, 0, 2}), 0);
}

TEST(DeviceFacts, FromTheTraceElseFromTheDevicesName) {
  RankInfo r;
  r.device_name = "NVIDIA H200";
  DeviceFacts d = device_facts(r);
  EXPECT_EQ(d.sms, 132);
  EXPECT_DOUBLE_EQ(d.mem_bandwidth, 4.8e12);
  r.sm_count = 100;
  r.mem_bandwidth = 1e12;
  d = device_facts(r);  // the trace's own figures first
  EXPECT_EQ(d.sms, 100);
  EXPECT_DOUBLE_EQ(d.mem_bandwidth, 1e12);
  r = {};
  r.device_name = "NVIDIA H100 PCIe";
  EXPECT_EQ(device_facts(r).sms, 114);
  r.device_name = "Some GPU";
  EXPECT_EQ(device_facts(r).sms, 0);
  EXPECT_EQ(device_facts(r).mem_bandwidth, 0);
}

TEST(LikelyComputeBound, GemmsAttentionAndConvolutionsByName) {
  for (const char* n : {"sm90_xmma_gemm_bf16bf16_bf16f32", "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT",
                        "void cutlass::Kernel2<cutlass_80_tensorop>", "flash_fwd_kernel",
                        "void fmha_cutlassF", "implicit_convolve_sgemm", "triton_tem_fused_mm_0"})
    EXPECT_TRUE(cco::trace::likely_compute_bound(n)) << n;
  for (const char* n : {"void at::native::vectorized_elementwise_kernel<4>", "multi_tensor_apply_kernel",
                        "void at::native::reduce_kernel<512, 1>", "triton_poi_fused_add_0"})
    EXPECT_FALSE(cco::trace::likely_compute_bound(n)) << n;
}

// One kernel beside one collective on an H200-like device (132 SMs, 4,800 bytes per ns).
struct OneKernel : ::testing::Test {
  DeviceFacts dev{132, 4.8e12};
  KernelEvent k, ar;
  void SetUp() override {
    k.name = "void at::native::vectorized_elementwise_kernel<4>";
    k.start_ns = 0;
    k.end_ns = 15'000;
    k.grid = {64, 1, 1};
    ar.name = kAr;
    ar.category = KernelCategory::Communication;
    ar.start_ns = 0;
    ar.end_ns = 30'000;
    ar.grid = {2, 1, 1};
    // 12 MB all-reduced at 2 ranks: 48 MB of traffic in 30 us, 1,600 bytes per ns: a third of
    // the device's bandwidth.
    ar.call = collective_call_label("AllReduce", "bf16", 6'000'000, 2);
  }
};

TEST_F(OneKernel, AMemoryBoundKernelSlowedByTheCollectivesBytes) {
  // A third of the bandwidth taken: 1 / (1 - 1/3) = 1.5x, so 10 us alone become 15 at most.
  auto c = split_slowed(k, 10'000, 5'000, {Beside{&ar, 15'000}}, dev);
  EXPECT_NEAR(c.memory, 5'000, 1);
  EXPECT_NEAR(c.sms, 0, 1e-9);  // its 64 blocks fit beside the collective's 2
  EXPECT_NEAR(c.other, 0, 1);
  // Slowed more than the bytes explain: the rest is other.
  c = split_slowed(k, 10'000, 8'000, {Beside{&ar, 15'000}}, dev);
  EXPECT_NEAR(c.memory, 5'000, 1);
  EXPECT_NEAR(c.other, 3'000, 1);
  // Slowed less: the memory part is what was observed, never more.
  c = split_slowed(k, 10'000, 2'000, {Beside{&ar, 15'000}}, dev);
  EXPECT_NEAR(c.memory, 2'000, 1);
  EXPECT_NEAR(c.other, 0, 1);
  // Beside the collective for a third of its run only: a third of the share.
  k.end_ns = 45'000;
  c = split_slowed(k, 40'000, 10'000, {Beside{&ar, 15'000}}, dev);
  const double share = (1.0 / 3) / 3;
  EXPECT_NEAR(c.memory, 40'000 * share / (1 - share), 1);
}

TEST_F(OneKernel, NoSizeOrNoBandwidthNoMemoryShare) {
  ar.call.clear();
  auto c = split_slowed(k, 10'000, 5'000, {Beside{&ar, 15'000}}, dev);
  EXPECT_EQ(c.memory, 0);
  EXPECT_NEAR(c.other, 5'000, 1e-9);
  ar.call = collective_call_label("AllReduce", "bf16", 6'000'000, 2);
  c = split_slowed(k, 10'000, 5'000, {Beside{&ar, 15'000}}, DeviceFacts{132, 0});
  EXPECT_EQ(c.memory, 0);
}

TEST_F(OneKernel, AGemmWithMoreBlocksThanTheSmsLeftLosesSms) {
  k.name = kGemm;  // compute-bound: no memory share
  k.grid = {264, 1, 1};
  k.blocks_per_sm = 2;
  ar.grid = {24, 1, 1};  // 24 channels: 24 SMs held, 108 left for 216 blocks at once
  auto c = split_slowed(k, 10'000, 5'000, {Beside{&ar, 15'000}}, dev);
  EXPECT_NEAR(c.sms, 10'000.0 * 24 / 108, 1);
  EXPECT_EQ(c.memory, 0);
  EXPECT_NEAR(c.sms + c.other, 5'000, 1e-6);
  // The same GEMM with 200 blocks fits on the SMs left: slowed by something else.
  k.grid = {200, 1, 1};
  c = split_slowed(k, 10'000, 5'000, {Beside{&ar, 15'000}}, dev);
  EXPECT_EQ(c.sms, 0);
  EXPECT_NEAR(c.other, 5'000, 1e-9);
  // Copies on the copy engines take no SMs.
  ar.copy = "DtoD";
  ar.bytes = 1;
  k.grid = {264, 1, 1};
  c = split_slowed(k, 10'000, 5'000, {Beside{&ar, 15'000}}, dev);
  EXPECT_EQ(c.sms, 0);
}

// Steps of a rank whose elementwise kernels run 10 us alone and 15 beside a hidden all-reduce
// that takes a third of the device's bandwidth (as OneKernel), with a GEMM of 264 blocks beside
// it taking 5 us more than its 10 alone; the all-reduce holds 24 SMs. Known answer per step:
// memory 2 x 5 us (the elementwise kernels), SMs 10 x 24/108 us (the GEMM), the rest other.
Trace memory_and_sm_bound(bool sized, int steps = 8) {
  Builder b;
  b.t.ranks.push_back({0, 0, "NVIDIA H200", "sm_90", 132, 4.8e12, "h", 1});
  const char* ew = "void at::native::vectorized_elementwise_kernel<4>";
  for (int s = 0; s < steps; ++s) {
    b.range(0, s);
    b.kernel(0, s, ew, 0, 10);
    b.kernel(0, s, ew, 10, 20);
    b.kernel(0, s, kGemm, 20, 30);  // alone
    b.kernel(0, s, ew, 30, 45);     // beside the all-reduce from here
    b.kernel(0, s, ew, 45, 60);
    b.kernel(0, s, kGemm, 60, 75);
    b.kernel(0, s, kAr, 30, 75);
    for (auto& k : b.t.kernels) {
      if (k.name == ew) k.grid = {64, 1, 1};
      if (k.name == kGemm) {
        k.grid = {264, 1, 1};
        k.blocks_per_sm = 2;
      }
    }
    auto& ar = b.t.kernels.back();
    ar.grid = {24, 1, 1};
    // 45 us at a third of 4,800 bytes per ns: 72 MB of traffic, a 18 MB all-reduce at 2 ranks.
    if (sized) ar.call = collective_call_label("AllReduce", "bf16", 9'000'000, 2);
  }
  return b.done();
}

TEST(SlowedByCause, TheDiagnosisSplitsAKnownStep) {
  const Trace t = memory_and_sm_bound(true);
  const Diagnosis d = cco::trace::diagnose(t);
  expect_adds_up(d);
  const StepParts& p = typical(d);
  EXPECT_EQ(p.compute_slowed_ns, 15 * us);
  EXPECT_NEAR(static_cast<double>(p.compute_slowed_memory_ns), 10.0 * us, 2);
  EXPECT_NEAR(static_cast<double>(p.compute_slowed_sms_ns), 10.0 * us * 24 / 108, 2);
  EXPECT_EQ(p.compute_slowed_memory_ns + p.compute_slowed_sms_ns + p.compute_slowed_other_ns,
            p.compute_slowed_ns);
  EXPECT_EQ(p.comm_unsized_kernels, 0u);
  // The SM levers cannot win the bytes' part; fewer bytes can win only that part.
  const auto lb = cco::trace::lever_bounds(p);
  EXPECT_EQ(lb.memory_traffic_ns, p.compute_slowed_memory_ns);
  EXPECT_EQ(lb.sm_budget_ns, p.compute_slowed_ns - p.compute_slowed_memory_ns);
  EXPECT_NE(d.sentence.find("of it device-memory bandwidth the collectives take"), std::string::npos)
      << d.sentence;
  EXPECT_NE(d.sentence.find("fewer device-memory bytes"), std::string::npos) << d.sentence;
  const auto j = cco::trace::diagnosis_to_json(d);
  const auto& step = j["ranks"][0]["steps"][0];
  EXPECT_EQ(step["compute_slowed_memory_ns"].get<int64_t>(), p.compute_slowed_memory_ns);
  EXPECT_EQ(step["bounds_ns"]["memory_traffic"].get<int64_t>(), p.compute_slowed_memory_ns);
}

TEST(SlowedByCause, WithoutTheCollectivesSizesTheBytesAreOther) {
  const Diagnosis d = cco::trace::diagnose(memory_and_sm_bound(false));
  const StepParts& p = typical(d);
  EXPECT_EQ(p.compute_slowed_memory_ns, 0);
  EXPECT_NEAR(static_cast<double>(p.compute_slowed_sms_ns), 10.0 * us * 24 / 108, 2);
  EXPECT_EQ(p.comm_unsized_kernels, 1u);
  // Then the SM bound is as wide as before: the whole compute slowed.
  EXPECT_EQ(cco::trace::lever_bounds(p).sm_budget_ns, p.compute_slowed_ns);
}

}  // namespace
