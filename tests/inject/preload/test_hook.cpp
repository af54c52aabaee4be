// The launch hook against a fake driver: shaping decisions, pass-through cases, NCCL priority,
// launch-configuration copies, caching, threads, and fail-open on every driver call that can
// fail.
#include <gtest/gtest.h>

#include <thread>

#include "fake_driver.hpp"
#include "model/occupancy.hpp"
#include "plan/plan.hpp"
#include "preload/hook.hpp"

namespace {

using namespace cco;
using cco::preload::Hook;
using cco::preload::Reason;
using cco::test::F;
using cco::test::FakeDriver;
using cco::test::H;

constexpr uintptr_t kGemm = 0x10, kNccl = 0x20, kBig = 0x30, kTiny = 0x40, kKernel = 0x50,
                    kCluster = 0x60, kSoftmax = 0x70, kPersist = 0x80;

class HookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake.install();
    cco::test::start_capture();
    // 256 threads x 32 registers: 8 blocks per SM on sm_90 (registers and warps).
    fake.add(H(kGemm), "_Z9my_gemm_kPfS_i", 32, 0);
    fake.add(H(kNccl), "_Z38ncclDevKernel_AllReduce_Sum_f32_RING_LL17ncclDevKernelArgs4K", 96, 0);
    fake.add(H(kBig), "big_kernel", 64, 0);  // 1024 threads x 64 regs: 1 block per SM
    fake.add(H(kTiny), "tiny", 16, 0);
    fake.add(H(kKernel), "ctxless_kernel", 32, 0).kernel_handle = true;
    fake.add(H(kCluster), "cluster_kernel", 32, 0).cluster_width = 2;
    fake.add(H(kSoftmax), "_Z7softmaxPf", 32, 0);
    fake.add(H(kPersist), "gemm_persistent", 32, 0);
  }
  void TearDown() override { preload::set_log_sink(nullptr); }

  Hook make(const char* policy) { return Hook(fake.api(), plan::from_policy(policy)); }
  Hook make_plan(const std::string& body) {
    return Hook(
        fake.api(),
        plan::parse(R"({"schema": "ccoverlap.plan", "schema_version": "1.0.0", )" + body + "}"));
  }

  // cuLaunchKernel with a grid of `blocks` and `threads` per block.
  CUresult launch(Hook& h, uintptr_t f, unsigned blocks = 10000, unsigned threads = 256,
                  unsigned shmem = 0) {
    return h.launch(test::fake::launch, F(f), blocks, 1, 1, threads, 1, 1, shmem, nullptr, nullptr,
                    nullptr);
  }

  int64_t padding_for(int k, int threads = 256, int regs = 32, int64_t dyn = 0) {
    model::Footprint fp;
    fp.threads = threads;
    fp.regs = regs;
    fp.dynamic_smem = dyn;
    return model::plan_padding(fake.dev, fp, k).dynamic_smem;
  }

  const test::Launch& last() { return fake.launches.back(); }
  size_t warnings() {
    size_t n = 0;
    for (const auto& l : cco::test::captured_log()) n += l.find("warning:") != std::string::npos;
    return n;
  }

  FakeDriver fake;
};

TEST_F(HookTest, StatisticsSayWhetherThePlanSetsAGemmTarget) {
  EXPECT_TRUE(make("sm-target:100").stats().gemm_active.load());
  EXPECT_TRUE(make("shape:1+sm-target:-16@overlap").stats().gemm_active.load());
  EXPECT_FALSE(make("shape:1").stats().gemm_active.load());
  EXPECT_FALSE(make("off").stats().gemm_active.load());
}

TEST_F(HookTest, ShapesToFixedTarget) {
  Hook h = make("shape:1");
  EXPECT_EQ(launch(h, kGemm), CUDA_SUCCESS);
  ASSERT_EQ(fake.launches.size(), 1u);
  const int64_t want = padding_for(1);
  EXPECT_EQ(want, 115713);  // the model's boundary for 8 -> 1 block per SM on sm_90
  EXPECT_EQ(last().shmem, want);
  EXPECT_EQ(last().grid[0], 10000u);  // never a different grid or block
  EXPECT_EQ(last().block[0], 256u);
  // Over 48 KB: MAX_DYNAMIC_SHARED_SIZE_BYTES raised first, once.
  ASSERT_EQ(fake.sets.size(), 1u);
  EXPECT_EQ(fake.sets[0].second, want);
  EXPECT_EQ(h.stats().get(Reason::Shaped), 1u);
  EXPECT_EQ(h.stats().seen.load(), 1u);
  EXPECT_EQ(warnings(), 0u);
}

TEST_F(HookTest, ShapesToEveryK) {
  for (int k = 1; k < 8; ++k) {
    Hook h = make(("shape:" + std::to_string(k)).c_str());
    launch(h, kGemm);
    EXPECT_EQ(last().shmem, padding_for(k)) << k;
  }
  Hook h = make("shape:8");
  launch(h, kGemm);
  EXPECT_EQ(last().shmem, 0u);
  EXPECT_EQ(h.stats().get(Reason::Already), 1u);
}

TEST_F(HookTest, ModelTargetHalvesResidency) {
  Hook h = make("shape:model");
  launch(h, kGemm);
  EXPECT_EQ(last().shmem, padding_for(4));  // 8 blocks per SM -> ceil(0.5 * 8) = 4
  launch(h, kBig, 10000, 1024);             // 1 block per SM: nothing to do
  EXPECT_EQ(last().shmem, 0u);
  EXPECT_EQ(h.stats().get(Reason::Already), 1u);
}

TEST_F(HookTest, KeepsTheLaunchsOwnDynamicSharedMemoryAsAFloor) {
  Hook h = make("shape:2");
  launch(h, kGemm, 10000, 256, 4096);
  EXPECT_EQ(last().shmem, padding_for(2, 256, 32, 4096));
  EXPECT_GE(last().shmem, 4096u);
}

TEST_F(HookTest, SmallGridsAreLeftAlone) {
  Hook h = make("shape:1");
  launch(h, kGemm, 132);  // one block per SM at most anyway
  EXPECT_EQ(last().shmem, 0u);
  EXPECT_EQ(h.stats().get(Reason::SmallGrid), 1u);
  Hook h2 = make("shape:2");
  launch(h2, kGemm, 264);
  EXPECT_EQ(h2.stats().get(Reason::SmallGrid), 1u);
  launch(h2, kGemm, 265);
  EXPECT_EQ(h2.stats().get(Reason::Shaped), 1u);
}

TEST_F(HookTest, PolicyOffTouchesNothingAndQueriesNoAttributes) {
  Hook h = make("off");
  launch(h, kGemm);
  EXPECT_EQ(last().shmem, 0u);
  EXPECT_EQ(h.stats().get(Reason::PolicyOff), 1u);
  EXPECT_EQ(fake.attr_calls.load(), 0);
  EXPECT_EQ(fake.occupancy_calls.load(), 0);
  Hook p = make("priority");
  launch(p, kGemm);
  EXPECT_EQ(last().shmem, 0u);
  EXPECT_EQ(p.stats().get(Reason::PolicyOff), 1u);
}

TEST_F(HookTest, NcclIsNeverPaddedAndGetsTheGreatestPriority) {
  Hook h = make("shape+priority:1");
  CUlaunchAttribute attrs[2] = {};
  attrs[0].id = CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN;
  attrs[0].value.memSyncDomain = CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE;
  attrs[1].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attrs[1].value.clusterDim.x = 1;
  attrs[1].value.clusterDim.y = 1;
  attrs[1].value.clusterDim.z = 1;
  CUlaunchConfig c = {};
  c.gridDimX = 24;
  c.gridDimY = c.gridDimZ = 1;
  c.blockDimX = 640;
  c.blockDimY = c.blockDimZ = 1;
  c.sharedMemBytes = 1234;
  c.hStream = reinterpret_cast<CUstream>(0x77);
  c.attrs = attrs;
  c.numAttrs = 2;
  const CUlaunchConfig before = c;
  EXPECT_EQ(h.launch_ex(test::fake::launch_ex, &c, F(kNccl), nullptr, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(fake.launches.size(), 1u);
  EXPECT_NE(last().config, &c);  // a copy
  EXPECT_EQ(last().shmem, 1234u);
  ASSERT_EQ(last().attrs.size(), 3u);
  EXPECT_EQ(last().attrs[0].id, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN);
  EXPECT_EQ(last().attrs[1].id, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
  EXPECT_EQ(last().attrs[2].id, CU_LAUNCH_ATTRIBUTE_PRIORITY);
  EXPECT_EQ(last().attrs[2].value.priority, -5);
  EXPECT_EQ(last().stream, c.hStream);
  // The caller's configuration and attribute list are untouched.
  EXPECT_EQ(c.numAttrs, before.numAttrs);
  EXPECT_EQ(c.attrs, attrs);
  EXPECT_EQ(attrs[0].id, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN);
  EXPECT_EQ(h.stats().get(Reason::Nccl), 1u);
  EXPECT_EQ(h.stats().nccl_prioritised.load(), 1u);
  EXPECT_EQ(fake.attr_calls.load(), 0);  // NCCL's footprint is never needed

  // An existing priority attribute is replaced, not duplicated.
  attrs[1].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
  attrs[1].value.priority = 0;
  h.launch_ex(test::fake::launch_ex, &c, F(kNccl), nullptr, nullptr);
  ASSERT_EQ(last().attrs.size(), 2u);
  EXPECT_EQ(last().attrs[1].value.priority, -5);
  EXPECT_EQ(attrs[1].value.priority, 0);

  // cuLaunchKernel has no attribute list: launched as asked, counted.
  launch(h, kNccl, 24, 640);
  EXPECT_EQ(last().shmem, 0u);
  EXPECT_EQ(h.stats().nccl_not_prioritised.load(), 1u);
  EXPECT_EQ(h.stats().get(Reason::Nccl), 3u);
}

TEST_F(HookTest, NcclWithoutPriorityIsUntouched) {
  Hook h = make("shape:1");
  CUlaunchConfig c = {};
  c.gridDimX = 24;
  c.gridDimY = c.gridDimZ = c.blockDimY = c.blockDimZ = 1;
  c.blockDimX = 640;
  h.launch_ex(test::fake::launch_ex, &c, F(kNccl), nullptr, nullptr);
  EXPECT_EQ(last().config, &c);  // the caller's own configuration, unchanged
  EXPECT_EQ(h.stats().nccl_prioritised.load(), 0u);
}

TEST_F(HookTest, ManyAttributesStillCopied) {
  Hook h = make("priority");
  std::vector<CUlaunchAttribute> attrs(20);
  for (auto& a : attrs) a.id = CU_LAUNCH_ATTRIBUTE_IGNORE;
  CUlaunchConfig c = {};
  c.gridDimX = c.gridDimY = c.gridDimZ = c.blockDimX = c.blockDimY = c.blockDimZ = 1;
  c.attrs = attrs.data();
  c.numAttrs = 20;
  h.launch_ex(test::fake::launch_ex, &c, F(kNccl), nullptr, nullptr);
  ASSERT_EQ(last().attrs.size(), 21u);
  EXPECT_EQ(last().attrs[20].id, CU_LAUNCH_ATTRIBUTE_PRIORITY);
}

CUlaunchConfig config(unsigned blocks, unsigned threads, CUlaunchAttribute* a = nullptr,
                      unsigned n = 0) {
  CUlaunchConfig c = {};
  c.gridDimX = blocks;
  c.gridDimY = c.gridDimZ = c.blockDimY = c.blockDimZ = 1;
  c.blockDimX = threads;
  c.attrs = a;
  c.numAttrs = n;
  return c;
}

TEST_F(HookTest, LaunchExShapesACopy) {
  Hook h = make("shape:1");
  CUlaunchAttribute a = {};
  a.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  a.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig c = config(10000, 256, &a, 1);
  h.launch_ex(test::fake::launch_ex, &c, F(kGemm), nullptr, nullptr);
  EXPECT_NE(last().config, &c);
  EXPECT_EQ(last().shmem, padding_for(1));
  EXPECT_EQ(c.sharedMemBytes, 0u);  // the caller's copy keeps its size
  ASSERT_EQ(last().attrs.size(), 1u);
  EXPECT_EQ(last().attrs[0].id, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
}

TEST_F(HookTest, CooperativeAndClusterLaunchesPassUntouched) {
  Hook h = make("shape:1");
  CUlaunchAttribute coop = {};
  coop.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  coop.value.cooperative = 1;
  CUlaunchConfig c = config(10000, 256, &coop, 1);
  h.launch_ex(test::fake::launch_ex, &c, F(kGemm), nullptr, nullptr);
  EXPECT_EQ(last().config, &c);
  EXPECT_EQ(h.stats().get(Reason::Cooperative), 1u);

  CUlaunchAttribute cl = {};
  cl.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  cl.value.clusterDim.x = 2;
  cl.value.clusterDim.y = cl.value.clusterDim.z = 1;
  c = config(10000, 256, &cl, 1);
  h.launch_ex(test::fake::launch_ex, &c, F(kGemm), nullptr, nullptr);
  EXPECT_EQ(last().config, &c);
  EXPECT_EQ(h.stats().get(Reason::Cluster), 1u);

  // A 1x1x1 cluster is an ordinary launch.
  cl.value.clusterDim.x = 1;
  h.launch_ex(test::fake::launch_ex, &c, F(kGemm), nullptr, nullptr);
  EXPECT_EQ(last().shmem, padding_for(1));

  // A kernel compiled with a cluster size is never shaped, whichever call launches it.
  launch(h, kCluster);
  EXPECT_EQ(last().shmem, 0u);
  EXPECT_EQ(h.stats().get(Reason::Cluster), 2u);
}

TEST_F(HookTest, RulesAndDenylist) {
  Hook h = make_plan(R"("shaping": {"default": 2,
      "rules": [{"kernel": "*softmax*", "skip": true}, {"kernel": "tiny", "pad": "20K"},
                {"kernel": "*gemm_k*", "blocks_per_sm": 1}],
      "denylist": ["*persistent*"]})");
  launch(h, kSoftmax);
  EXPECT_EQ(last().shmem, 0u);
  EXPECT_EQ(h.stats().get(Reason::RuleSkip), 1u);
  launch(h, kPersist);
  EXPECT_EQ(last().shmem, 0u);
  EXPECT_EQ(h.stats().get(Reason::Denylist), 1u);
  launch(h, kTiny, 10000, 128, 100);
  EXPECT_EQ(last().shmem, 100u + 20 * 1024);
  launch(h, kGemm);  // the rule's k=1 wins over the default 2
  EXPECT_EQ(last().shmem, padding_for(1));
  launch(h, kBig, 10000, 1024);  // default k=2, already at 1
  EXPECT_EQ(h.stats().get(Reason::Already), 1u);
  // Matched by the demangled name too.
  Hook d = make_plan(R"("shaping": {"default": 1, "denylist": ["my_gemm_k(*"]})");
  launch(d, kGemm);
  EXPECT_EQ(d.stats().get(Reason::Denylist), 1u);
}

TEST_F(HookTest, UnreachablePadding) {
  Hook h = make_plan(R"("shaping": {"default": 1, "rules": [{"kernel": "tiny", "pad": "300K"}]})");
  launch(h, kTiny);
  EXPECT_EQ(last().shmem, 0u);
  EXPECT_EQ(h.stats().get(Reason::Unreachable), 1u);
}

TEST_F(HookTest, ContextlessKernelHandles) {
  fake.current_device = 3;
  Hook h = make("shape:1");
  launch(h, kKernel);
  EXPECT_EQ(last().shmem, padding_for(1));
  ASSERT_EQ(fake.set_devices.size(), 1u);
  EXPECT_EQ(fake.set_devices[0], 3);  // cuKernelSetAttribute on the launch's device
  EXPECT_EQ(h.stats().get(Reason::Shaped), 1u);
}

TEST_F(HookTest, CachesPerFunctionAndShape) {
  Hook h = make("shape:1");
  for (int i = 0; i < 100; ++i) launch(h, kGemm);
  const int names = fake.name_calls.load();
  const int occ = fake.occupancy_calls.load();
  EXPECT_EQ(names, 1);
  EXPECT_EQ(occ, 1);             // verified once per shape
  launch(h, kGemm, 10000, 128);  // another block size: another decision
  EXPECT_EQ(fake.occupancy_calls.load(), 2);
  EXPECT_EQ(fake.name_calls.load(), 1);
  EXPECT_EQ(last().shmem, padding_for(1, 128));
  EXPECT_EQ(fake.device_attr_calls.load(), 13);  // the device, once
  EXPECT_EQ(fake.sets.size(), 1u);               // raised once; later launches find it high enough
  EXPECT_EQ(h.stats().get(Reason::Shaped), 101u);
}

TEST_F(HookTest, AttributeAlreadyHighEnoughIsNotSet) {
  fake.kernels[H(kGemm)].max_dynamic = 200 * 1024;  // the program opted in itself
  Hook h = make("shape:1");
  launch(h, kGemm);
  EXPECT_EQ(last().shmem, padding_for(1));
  EXPECT_TRUE(fake.sets.empty());
}

TEST_F(HookTest, ProgramLoweringTheAttributeIsRaisedAgain) {
  Hook h = make("shape:1");
  launch(h, kGemm);
  fake.kernels[H(kGemm)].max_dynamic = 0;  // e.g. cudaFuncSetAttribute before its next launch
  launch(h, kGemm);
  EXPECT_EQ(last().shmem, padding_for(1));
  EXPECT_EQ(fake.sets.size(), 2u);
}

// ---- fail-open: every failing driver call leaves the launch as asked, warns once ----------------

TEST_F(HookTest, FailOpenNameLookup) {
  fake.func_name_result = CUDA_ERROR_INVALID_VALUE;
  fake.kernel_name_result = CUDA_ERROR_INVALID_VALUE;
  Hook h = make("shape+priority:1");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(launch(h, kGemm), CUDA_SUCCESS);
  EXPECT_EQ(last().shmem, 0u);
  EXPECT_EQ(h.stats().get(Reason::NameFailed), 3u);
  EXPECT_EQ(warnings(), 1u);
  EXPECT_EQ(fake.name_calls.load(), 2);  // the failure is cached too
}

TEST_F(HookTest, FailOpenAttributeQuery) {
  fake.attr_result = CUDA_ERROR_INVALID_HANDLE;
  Hook h = make("shape:1");
  launch(h, kGemm);
  launch(h, kGemm);
  EXPECT_EQ(last().shmem, 0u);
  EXPECT_EQ(h.stats().get(Reason::AttrQueryFailed), 2u);
  EXPECT_EQ(warnings(), 1u);
}

TEST_F(HookTest, FailOpenMaxDynamicQuery) {
  fake.maxdyn_query_result = CUDA_ERROR_INVALID_VALUE;
  Hook h = make("shape:1");
  launch(h, kGemm);
  EXPECT_EQ(last().shmem, 0u);
  EXPECT_EQ(h.stats().get(Reason::AttrQueryFailed), 1u);
  EXPECT_EQ(warnings(), 1u);
}

TEST_F(HookTest, FailOpenAttributeSet) {
  fake.set_result = CUDA_ERROR_NOT_PERMITTED;
  Hook h = make("shape:1");
  launch(h, kGemm);
  launch(h, kGemm);
  EXPECT_EQ(last().shmem, 0u);
  EXPECT_EQ(h.stats().get(Reason::AttrSetFailed), 2u);
  EXPECT_EQ(warnings(), 1u);
  // Shaping that needs no opt-in (k=7: a little padding) does not need the set.
  Hook h7 = make("shape:7");
  launch(h7, kGemm);
  EXPECT_EQ(last().shmem, padding_for(7));
}

TEST_F(HookTest, FailOpenOccupancy) {
  fake.occupancy_result = CUDA_ERROR_INVALID_CONTEXT;
  Hook h = make("shape:1");
  launch(h, kGemm);
  EXPECT_EQ(last().shmem, 0u);
  EXPECT_EQ(h.stats().get(Reason::OccupancyFailed), 1u);
  EXPECT_EQ(warnings(), 1u);
}

TEST_F(HookTest, ModelDisagreeingWithTheDriverLeavesTheKernelAlone) {
  fake.occupancy_override = 3;  // the driver says 3 blocks per SM where the model planned 1
  Hook h = make("shape:1");
  launch(h, kGemm);
  launch(h, kGemm);
  EXPECT_EQ(last().shmem, 0u);
  EXPECT_EQ(h.stats().get(Reason::ModelMismatch), 2u);
  EXPECT_EQ(warnings(), 1u);
}

TEST_F(HookTest, FailOpenContextDeviceAndDeviceAttributes) {
  fake.ctx_device_result = CUDA_ERROR_INVALID_CONTEXT;
  Hook h = make("shape:1");
  launch(h, kGemm);
  EXPECT_EQ(last().shmem, 0u);
  EXPECT_EQ(h.stats().get(Reason::AttrQueryFailed), 1u);
  fake.ctx_device_result = CUDA_SUCCESS;
  fake.device_attr_result = CUDA_ERROR_INVALID_DEVICE;
  Hook h2 = make("shape:1");
  launch(h2, kGemm);
  launch(h2, kGemm);
  EXPECT_EQ(last().shmem, 0u);
  EXPECT_EQ(h2.stats().get(Reason::AttrQueryFailed), 2u);
  EXPECT_EQ(fake.device_attr_calls.load(), 1);  // not asked again
}

TEST_F(HookTest, FailOpenShapedLaunchRejectedIsRetriedUnchanged) {
  fake.launch_results = {CUDA_ERROR_INVALID_VALUE};
  Hook h = make("shape:1");
  EXPECT_EQ(launch(h, kGemm), CUDA_SUCCESS);
  ASSERT_EQ(fake.launches.size(), 2u);
  EXPECT_EQ(fake.launches[0].shmem, padding_for(1));
  EXPECT_EQ(fake.launches[1].shmem, 0u);
  EXPECT_EQ(h.stats().get(Reason::LaunchRetried), 1u);
  EXPECT_EQ(warnings(), 1u);
  // The program sees the answer of its own launch.
  fake.launch_results = {CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES};
  EXPECT_EQ(launch(h, kGemm), CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
}

TEST_F(HookTest, FailOpenPriorityAttributeRejected) {
  fake.launch_results = {CUDA_ERROR_INVALID_VALUE};
  Hook h = make("priority");
  CUlaunchConfig c = config(24, 640);
  EXPECT_EQ(h.launch_ex(test::fake::launch_ex, &c, F(kNccl), nullptr, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(fake.launches.size(), 2u);
  EXPECT_EQ(fake.launches[1].config, &c);
  EXPECT_EQ(h.stats().nccl_not_prioritised.load(), 1u);
}

TEST_F(HookTest, FailOpenWithoutAnyDriverCall) {
  Hook h(preload::DriverApi{}, plan::from_policy("shape+priority:1"));
  EXPECT_EQ(launch(h, kGemm), CUDA_SUCCESS);
  EXPECT_EQ(last().shmem, 0u);
  CUlaunchConfig c = config(10000, 256);
  h.launch_ex(test::fake::launch_ex, &c, F(kGemm), nullptr, nullptr);
  EXPECT_EQ(last().config, &c);
  EXPECT_EQ(h.stats().seen.load(), 2u);
  EXPECT_EQ(h.stats().get(Reason::Shaped), 0u);
}

TEST_F(HookTest, BadFootprintsPassThrough) {
  fake.kernels[H(kGemm)].max_threads = 128;
  Hook h = make("shape:1");
  launch(h, kGemm, 10000, 256);  // more threads than the kernel allows: the driver will refuse
  EXPECT_EQ(last().shmem, 0u);
  EXPECT_EQ(h.stats().get(Reason::ModelError), 1u);
  launch(h, kTiny, 10000, 4096);  // more than any block
  EXPECT_EQ(h.stats().get(Reason::ModelError), 2u);
}

TEST_F(HookTest, ManyThreads) {
  Hook h = make("shape:2");
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) launch(h, (t % 2) ? kGemm : kTiny, 10000, (i % 2) ? 256 : 128);
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(h.stats().seen.load(), 4000u);
  EXPECT_EQ(fake.launches.size(), 4000u);
  uint64_t total = 0;
  for (int r = 0; r < preload::kReasonCount; ++r) total += h.stats().by_reason[r].load();
  EXPECT_EQ(total, 4000u);
  for (const auto& l : fake.launches) {
    const bool gemm = l.f == F(kGemm);
    model::Footprint fp;
    fp.threads = static_cast<int>(l.block[0]);
    fp.regs = gemm ? 32 : 16;
    const auto p = model::plan_padding(fake.dev, fp, 2);
    ASSERT_EQ(l.shmem, p.dynamic_smem);
  }
}

TEST_F(HookTest, StatsAndKernelReport) {
  Hook h = make("shape+priority:1");
  launch(h, kGemm);
  launch(h, kSoftmax, 100);
  CUlaunchConfig c = config(24, 640);
  h.launch_ex(test::fake::launch_ex, &c, F(kNccl), nullptr, nullptr);
  const std::string s = h.stats().summary("shape+priority:1", "launch-attr", 42);
  EXPECT_NE(s.find("stats pid=42 policy=shape+priority:1 method=launch-attr seen=3 shaped=1 "
                   "passed=2 nccl=1 nccl_prioritised=1"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("skip.nccl=1"), std::string::npos) << s;
  EXPECT_NE(s.find("skip.small-grid=1"), std::string::npos) << s;
  EXPECT_NE(s.find("nccl_launch_priority=-5"), std::string::npos) << s;
  EXPECT_NE(s.find("hook_ns_per_launch="), std::string::npos) << s;
  const auto rows = h.kernel_report();
  ASSERT_EQ(rows.size(), 3u);
  bool found = false;
  for (const auto& r : rows)
    found = found ||
            r.find("decision=256t:shaped(8->1/SM,+115713B) name=my_gemm_k(float*, float*, int)") !=
                std::string::npos;
  EXPECT_TRUE(found) << rows[0] << "\n" << rows[1] << "\n" << rows[2];
}

}  // namespace
