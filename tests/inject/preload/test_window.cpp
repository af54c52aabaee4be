// The communication window (window.hpp) against the fake driver, alone and inside the hook:
// shaping under "when": "overlap" acts only while NCCL work is pending on the launch's device.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "fake_driver.hpp"
#include "model/occupancy.hpp"
#include "plan/plan.hpp"
#include "preload/hook.hpp"
#include "preload/window.hpp"

namespace {

using namespace cco;
using cco::preload::CommWindow;
using cco::preload::Hook;
using cco::preload::Reason;
using cco::test::F;
using cco::test::FakeDriver;
using cco::test::H;

using cco::test::S;

class WindowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake.install();
    cco::test::start_capture();
  }
  void TearDown() override { preload::set_log_sink(nullptr); }
  size_t warnings() {
    size_t n = 0;
    for (const auto& l : cco::test::captured_log()) n += l.find("warning:") != std::string::npos;
    return n;
  }
  FakeDriver fake;
};

// recheck 1000 ns; the tests pass their own clock.
TEST_F(WindowTest, ClosedUntilNcclWorkIsRecordedAndOpenUntilItCompletes) {
  preload::Stats st;
  CommWindow w(fake.api(), &st, 1000);
  EXPECT_FALSE(w.maybe_open(0));
  EXPECT_FALSE(w.pending(0, 10));
  EXPECT_EQ(fake.event_queries, 0);  // nothing recorded: no driver call at all

  w.on_nccl_launch(0, S(0x500));
  EXPECT_TRUE(w.maybe_open(0));
  EXPECT_TRUE(w.pending(0, 100000));  // queried: not ready
  EXPECT_EQ(fake.event_queries, 1);
  EXPECT_TRUE(w.pending(0, 100500));  // within the recheck interval: no query
  EXPECT_EQ(fake.event_queries, 1);

  fake.complete_events();
  EXPECT_TRUE(w.pending(0, 100900));  // still the cached answer
  EXPECT_FALSE(w.pending(0, 101200));  // re-checked: complete
  EXPECT_EQ(fake.event_queries, 2);
  EXPECT_FALSE(w.maybe_open(0));
  EXPECT_FALSE(w.pending(0, 999999));
  EXPECT_EQ(fake.event_queries, 2);  // closed again: no query

  EXPECT_EQ(st.window_recorded.load(), 1u);
  EXPECT_EQ(st.window_opened.load(), 1u);
  EXPECT_EQ(st.window_queries.load(), 2u);
}

TEST_F(WindowTest, OneEventPerStreamReRecorded) {
  CommWindow w(fake.api(), nullptr, 0);
  for (int i = 0; i < 5; ++i) w.on_nccl_launch(0, S(0x500));
  EXPECT_EQ(fake.event_creates, 1);
  EXPECT_EQ(w.counts().recorded, 5u);
  EXPECT_EQ(w.counts().opened, 1u);
  fake.complete_events();
  EXPECT_FALSE(w.pending(0, 1));
  w.on_nccl_launch(0, S(0x500));  // a new collective re-opens it
  EXPECT_TRUE(w.pending(0, 2));
  EXPECT_EQ(w.counts().opened, 2u);
}

TEST_F(WindowTest, SeveralStreamsAndDevices) {
  CommWindow w(fake.api(), nullptr, 0);
  w.on_nccl_launch(0, S(0x500));
  w.on_nccl_launch(0, S(0x600));
  w.on_nccl_launch(1, S(0x700));
  EXPECT_FALSE(w.maybe_open(2));
  EXPECT_FALSE(w.pending(2, 1));
  // Complete only the first stream's event: device 0 still has the second pending.
  const CUevent first = fake.event_done.begin()->first;
  fake.event_done[first] = true;
  EXPECT_TRUE(w.pending(0, 10));
  EXPECT_TRUE(w.pending(1, 10));
  fake.complete_events();
  EXPECT_FALSE(w.pending(0, 20));
  EXPECT_FALSE(w.pending(1, 20));
  // Out-of-range devices are never open.
  w.on_nccl_launch(-1, S(0x500));
  w.on_nccl_launch(CommWindow::kMaxDevices, S(0x500));
  EXPECT_FALSE(w.pending(-1, 30));
  EXPECT_FALSE(w.pending(CommWindow::kMaxDevices, 30));
}

TEST_F(WindowTest, CapturedCollectivesOpenNoWindow) {
  CommWindow w(fake.api(), nullptr, 0);
  fake.capture = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  w.on_nccl_launch(0, S(0x500));
  EXPECT_FALSE(w.maybe_open(0));
  EXPECT_EQ(w.counts().captured, 1u);
  EXPECT_EQ(fake.event_creates, 0);
}

TEST_F(WindowTest, FailuresCloseTheWindowAndWarnOnce) {
  {
    CommWindow w(fake.api(), nullptr, 0);
    fake.event_record_result = CUDA_ERROR_INVALID_HANDLE;
    w.on_nccl_launch(0, S(0x500));
    w.on_nccl_launch(0, S(0x500));
    EXPECT_FALSE(w.maybe_open(0));
    EXPECT_EQ(w.counts().failed, 2u);
    EXPECT_EQ(warnings(), 1u);
    fake.event_record_result = CUDA_SUCCESS;
  }
  {
    CommWindow w(fake.api(), nullptr, 0);
    w.on_nccl_launch(0, S(0x500));
    fake.event_query_result = CUDA_ERROR_ILLEGAL_ADDRESS;  // a sticky error, say
    EXPECT_FALSE(w.pending(0, 5));  // taken as closed
    EXPECT_EQ(warnings(), 2u);
  }
}

TEST_F(WindowTest, TooManyBusyStreamsWarnOnceAndFinishedOnesAreRecycled) {
  CommWindow w(fake.api(), nullptr, 0);
  for (std::size_t i = 0; i < CommWindow::kMaxStreams; ++i) w.on_nccl_launch(0, S(0x10000 + i));
  w.on_nccl_launch(0, S(0x90000));  // none finished: no room
  EXPECT_EQ(w.counts().failed, 1u);
  EXPECT_EQ(warnings(), 1u);
  fake.complete_events();
  EXPECT_FALSE(w.pending(0, 1));
  w.on_nccl_launch(0, S(0x90000));  // a finished slot makes room
  EXPECT_EQ(w.counts().failed, 1u);
  EXPECT_TRUE(w.pending(0, 2));
}

// ---- the hook under "when": "overlap" --------------------------------------------------------

constexpr uintptr_t kGemm = 0x10, kNccl = 0x20;

class OverlapHookTest : public WindowTest {
 protected:
  void SetUp() override {
    WindowTest::SetUp();
    fake.add(H(kGemm), "_Z9my_gemm_kPfS_i", 32, 0);  // 8 blocks per SM at 256 threads
    fake.add(H(kNccl), "_Z38ncclDevKernel_AllReduce_Sum_f32_RING_LL17ncclDevKernelArgs4K", 96, 0);
  }
  CUresult gemm(Hook& h, CUstream s = nullptr) {
    return h.launch(test::fake::launch, F(kGemm), 10000, 1, 1, 256, 1, 1, 0, s, nullptr, nullptr);
  }
  CUresult nccl(Hook& h, CUstream s) {
    CUlaunchConfig c{};
    c.gridDimX = 24;
    c.gridDimY = c.gridDimZ = 1;
    c.blockDimX = 640;
    c.blockDimY = c.blockDimZ = 1;
    c.hStream = s;
    return h.launch_ex(test::fake::launch_ex, &c, F(kNccl), nullptr, nullptr);
  }
  int64_t padding_for(int k) {
    model::Footprint fp;
    fp.threads = 256;
    fp.regs = 32;
    return model::plan_padding(fake.dev, fp, k).dynamic_smem;
  }
  static void past_recheck() { std::this_thread::sleep_for(std::chrono::microseconds(50)); }
};

TEST_F(OverlapHookTest, ShapesOnlyWhileCommunicationIsPending) {
  Hook h(fake.api(), plan::from_policy("shape+priority:1@overlap"));
  ASSERT_NE(h.window(), nullptr);
  // No communication: exactly as asked, and no decision work at all.
  EXPECT_EQ(gemm(h), CUDA_SUCCESS);
  EXPECT_EQ(fake.launches.back().shmem, 0u);
  EXPECT_EQ(fake.occupancy_calls.load(), 0);
  EXPECT_EQ(h.stats().get(Reason::NoComm), 1u);

  // An all-reduce is launched: it keeps its priority, and opens the window.
  EXPECT_EQ(nccl(h, S(0x500)), CUDA_SUCCESS);
  EXPECT_EQ(fake.launches.back().attrs.size(), 1u);
  EXPECT_EQ(gemm(h), CUDA_SUCCESS);
  EXPECT_EQ(fake.launches.back().shmem, padding_for(1));
  EXPECT_EQ(h.stats().get(Reason::Shaped), 1u);

  // It finishes: the next launch after the recheck interval goes as asked again.
  fake.complete_events();
  past_recheck();
  EXPECT_EQ(gemm(h), CUDA_SUCCESS);
  EXPECT_EQ(fake.launches.back().shmem, 0u);
  EXPECT_EQ(h.stats().get(Reason::NoComm), 2u);
  EXPECT_EQ(h.stats().window_recorded.load(), 1u);
  EXPECT_NE(h.stats().summary("p", "m", 1).find("skip.no-comm=2"), std::string::npos);
}

TEST_F(OverlapHookTest, TheStaticFormShapesWithoutCommunication) {
  Hook h(fake.api(), plan::from_policy("shape+priority:1"));
  EXPECT_EQ(h.window(), nullptr);
  gemm(h);
  EXPECT_EQ(fake.launches.back().shmem, padding_for(1));
  // Without a window, NCCL launches record nothing.
  nccl(h, S(0x500));
  EXPECT_EQ(fake.event_creates, 0);
}

TEST_F(OverlapHookTest, CapturedComputeInsideTheWindowIsLeftAsAsked) {
  Hook h(fake.api(), plan::from_policy("shape:1@overlap"));
  nccl(h, S(0x500));
  fake.capture = CU_STREAM_CAPTURE_STATUS_ACTIVE;  // the compute stream is being captured
  gemm(h, S(0x900));
  EXPECT_EQ(fake.launches.back().shmem, 0u);
  EXPECT_EQ(h.stats().get(Reason::Captured), 1u);
  fake.capture = CU_STREAM_CAPTURE_STATUS_NONE;
  gemm(h, S(0x900));
  EXPECT_EQ(fake.launches.back().shmem, padding_for(1));
}

TEST_F(OverlapHookTest, CommunicationOnAnotherDeviceDoesNotOpenThisOne) {
  Hook h(fake.api(), plan::from_policy("shape:1@overlap"));
  fake.current_device = 1;
  nccl(h, S(0x500));
  fake.current_device = 0;
  gemm(h);
  EXPECT_EQ(fake.launches.back().shmem, 0u);
  fake.current_device = 1;
  gemm(h);
  EXPECT_EQ(fake.launches.back().shmem, padding_for(1));
}

TEST_F(OverlapHookTest, TheShapingPolicyOfTheCompareExamplesIsCommunicationAware) {
  const plan::Plan p = plan::from_policy("shape+priority:model@overlap");
  EXPECT_EQ(p.shaping.when, plan::When::Overlap);
  Hook h(fake.api(), p);
  gemm(h);
  EXPECT_EQ(fake.launches.back().shmem, 0u);
  EXPECT_EQ(h.stats().get(Reason::NoComm), 1u);
}

// The default policy (priority) changes no compute launch, with communication pending or not,
// and still gives NCCL's launch its priority.
TEST_F(OverlapHookTest, TheDefaultPolicyLeavesComputeAsAsked) {
  Hook h(fake.api(), plan::from_policy(plan::kDefaultPolicy));
  EXPECT_EQ(h.window(), nullptr);
  gemm(h);
  EXPECT_EQ(fake.launches.back().shmem, 0u);
  EXPECT_EQ(nccl(h, S(0x500)), CUDA_SUCCESS);
  EXPECT_EQ(fake.launches.back().attrs.size(), 1u);
  gemm(h);
  EXPECT_EQ(fake.launches.back().shmem, 0u);
  EXPECT_EQ(h.stats().get(Reason::Shaped), 0u);
}

// ---- the hook's steady state: no driver query and no lock per launch ------------------------

TEST_F(OverlapHookTest, SteadyStateShapedLaunchQueriesNothing) {
  Hook h(fake.api(), plan::from_policy("shape:1"));  // pads past 48 KB: needs the opt-in
  gemm(h);
  const int attrs = fake.attr_calls.load(), names = fake.name_calls.load();
  for (int i = 0; i < 100; ++i) gemm(h);
  EXPECT_EQ(fake.attr_calls.load(), attrs);  // no MAX_DYNAMIC_SHARED_SIZE_BYTES query per launch
  EXPECT_EQ(fake.name_calls.load(), names);
  EXPECT_EQ(fake.launches.back().shmem, padding_for(1));
  EXPECT_EQ(h.stats().get(Reason::Shaped), 101u);
}

TEST_F(OverlapHookTest, LoweredAttributeIsRaisedAgainAndTheLaunchStaysShaped) {
  Hook h(fake.api(), plan::from_policy("shape:1"));
  gemm(h);
  fake.kernels[H(kGemm)].max_dynamic = 0;  // the program lowers it between launches
  EXPECT_EQ(gemm(h), CUDA_SUCCESS);
  EXPECT_EQ(fake.launches.back().shmem, padding_for(1));
  EXPECT_EQ(fake.sets.size(), 2u);
  EXPECT_EQ(h.stats().get(Reason::LaunchRetried), 0u);
  EXPECT_EQ(h.stats().get(Reason::Shaped), 2u);
}

TEST_F(OverlapHookTest, InvalidateForgetsAReusedHandle) {
  Hook h(fake.api(), plan::from_policy("shape:1"));
  gemm(h);
  EXPECT_EQ(fake.launches.back().shmem, padding_for(1));
  // The module is unloaded and the same handle now names an NCCL kernel: never padded.
  fake.kernels[H(kGemm)].name = "ncclDevKernel_Generic";
  h.invalidate();
  gemm(h);
  EXPECT_EQ(fake.launches.back().shmem, 0u);
  EXPECT_EQ(h.stats().get(Reason::Nccl), 1u);
}

TEST_F(OverlapHookTest, ThreadsShareTheWindow) {
  Hook h(fake.api(), plan::from_policy("shape:1@overlap"));
  nccl(h, S(0x500));
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 200; ++i) gemm(h);
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(h.stats().get(Reason::Shaped), 1600u);  // the event never completed
}

}  // namespace

namespace {

TEST_F(OverlapHookTest, StatisticsTellFirstTimeLaunchesApart) {
  Hook h(fake.api(), plan::from_policy("shape:1"), preload::HookOptions{1, false});
  for (int i = 0; i < 10; ++i) gemm(h);
  EXPECT_EQ(h.stats().cold_launches.load(), 1u);  // the entry and the decision, once
  h.launch(test::fake::launch, F(kGemm), 10000, 1, 1, 128, 1, 1, 0, nullptr, nullptr, nullptr);
  EXPECT_EQ(h.stats().cold_launches.load(), 2u);  // another block size: another decision
  for (int i = 0; i < 5; ++i) gemm(h);
  EXPECT_EQ(h.stats().cold_launches.load(), 2u);
  const std::string s = h.stats().summary("p", "m", 1);
  EXPECT_NE(s.find(" hook_ns_steady="), std::string::npos) << s;
  EXPECT_NE(s.find(" cold_launches=2"), std::string::npos) << s;
}

}  // namespace
