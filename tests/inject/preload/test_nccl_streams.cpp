// Priority method "stream": the fork/join around each collective, inside and outside NCCL
// groups, companions per (context, stream), capture, failures and non-blocking communicators.
#include <gtest/gtest.h>

#include "fake_driver.hpp"
#include "preload/nccl_streams.hpp"

namespace {

using namespace cco;
using cco::test::FakeDriver;
using preload::NcclReal;
using preload::NcclStreams;

using cco::test::S;
std::string hex(uintptr_t v) {
  return test::fake::hex(reinterpret_cast<void*>(v));
}

int g_polls = 0;
ncclResult_t fake_async(ncclComm_t, ncclResult_t* st) {
  *st = ++g_polls < 3 ? ncclInProgress : ncclSuccess;
  return ncclSuccess;
}

class NcclStreamsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake.install();
    test::start_capture();
    real.commGetAsyncError = fake_async;
    g_polls = 0;
  }
  void TearDown() override { preload::set_log_sink(nullptr); }
  FakeDriver fake;
  preload::Stats stats;
  NcclReal real;
  NcclStreams make() {
    return NcclStreams(fake.api(), stats, [] { return -5; });
  }
};

TEST_F(NcclStreamsTest, ForkAndJoinAroundOneCollective) {
  NcclStreams s = make();
  const CUstream user = S(0x77);
  const CUstream used = s.fork(user);
  ASSERT_NE(used, user);
  // Companion made in the stream's context at the greatest priority, then fork.
  ASSERT_EQ(fake.log.size(), 5u);
  EXPECT_EQ(fake.log[0], "push 100");
  EXPECT_EQ(fake.log[1], "create " + test::fake::hex(used) + " prio -5");
  EXPECT_EQ(fake.log[2], "pop");
  EXPECT_EQ(fake.log[3].substr(0, 7), "record ");
  EXPECT_NE(fake.log[3].find(" on " + hex(0x77)), std::string::npos);
  EXPECT_EQ(fake.log[4].substr(0, 5 + 4), "wait " + test::fake::hex(used).substr(0, 4));
  fake.log.clear();
  EXPECT_EQ(s.after(user, used, nullptr, ncclSuccess, real), ncclSuccess);
  ASSERT_EQ(fake.log.size(), 2u);
  EXPECT_NE(fake.log[0].find("on " + test::fake::hex(used)), std::string::npos);  // record on C
  EXPECT_EQ(fake.log[1].substr(0, 5 + hex(0x77).size()), "wait " + hex(0x77));    // S waits
  EXPECT_EQ(stats.collectives_streamed.load(), 1u);
  // The same stream reuses its companion.
  fake.log.clear();
  EXPECT_EQ(s.fork(user), used);
  EXPECT_EQ(fake.log.size(), 2u);
  EXPECT_EQ(s.companions(), 1u);
}

TEST_F(NcclStreamsTest, OneCompanionPerContextAndStream) {
  NcclStreams s = make();
  fake.stream_ctx[S(0x88)] = reinterpret_cast<CUcontext>(0x200);
  const CUstream a = s.fork(S(0x77));
  const CUstream b = s.fork(S(0x78));
  const CUstream c = s.fork(S(0x88));
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(s.companions(), 3u);
  bool pushed_200 = false;
  for (const auto& l : fake.log) pushed_200 = pushed_200 || l == "push 200";
  EXPECT_TRUE(pushed_200);
}

TEST_F(NcclStreamsTest, GroupsJoinAtTheOutermostEnd) {
  NcclStreams s = make();
  s.group_start();
  s.group_start();
  const CUstream u1 = S(0x71), u2 = S(0x72);
  const CUstream c1 = s.fork(u1);
  s.after(u1, c1, nullptr, ncclSuccess, real);
  const CUstream c2 = s.fork(u2);
  s.after(u2, c2, nullptr, ncclSuccess, real);
  const CUstream c1b = s.fork(u1);  // a second collective on the same stream
  s.after(u1, c1b, nullptr, ncclSuccess, real);
  EXPECT_EQ(c1, c1b);
  fake.log.clear();
  EXPECT_EQ(s.group_end(ncclSuccess, real), ncclSuccess);  // inner end: nothing yet
  EXPECT_TRUE(fake.log.empty());
  EXPECT_EQ(s.group_end(ncclSuccess, real), ncclSuccess);
  ASSERT_EQ(fake.log.size(), 4u);  // one join per (user, companion) pair
  EXPECT_EQ(fake.log[1].substr(0, 5 + hex(0x71).size()), "wait " + hex(0x71));
  EXPECT_EQ(fake.log[3].substr(0, 5 + hex(0x72).size()), "wait " + hex(0x72));
  // A later collective outside the group joins at once.
  fake.log.clear();
  const CUstream c3 = s.fork(u1);
  s.after(u1, c3, nullptr, ncclSuccess, real);
  EXPECT_EQ(fake.log.size(), 4u);
}

TEST_F(NcclStreamsTest, NonBlockingCommunicatorsArePolledBeforeTheJoin) {
  NcclStreams s = make();
  const CUstream c = s.fork(S(0x77));
  fake.log.clear();
  EXPECT_EQ(s.after(S(0x77), c, reinterpret_cast<ncclComm_t>(0x5), ncclInProgress, real),
            ncclInProgress);
  EXPECT_EQ(g_polls, 3);
  EXPECT_EQ(fake.log.size(), 2u);
  g_polls = 0;
  s.group_start();
  const CUstream c2 = s.fork(S(0x77));
  s.after(S(0x77), c2, reinterpret_cast<ncclComm_t>(0x5), ncclSuccess, real);
  EXPECT_EQ(s.group_end(ncclInProgress, real), ncclInProgress);
  EXPECT_EQ(g_polls, 3);
}

TEST_F(NcclStreamsTest, CaptureWithoutCompanionStaysOnTheStream) {
  NcclStreams s = make();
  fake.capture = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  EXPECT_EQ(s.fork(S(0x77)), S(0x77));
  EXPECT_EQ(stats.collectives_direct.load(), 1u);
  // Once a companion exists (made outside capture), captured collectives use it.
  fake.capture = CU_STREAM_CAPTURE_STATUS_NONE;
  const CUstream c = s.fork(S(0x78));
  s.after(S(0x78), c, nullptr, ncclSuccess, real);
  fake.capture = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  EXPECT_EQ(s.fork(S(0x78)), c);
}

TEST_F(NcclStreamsTest, FailuresLeaveTheCollectiveOnItsStream) {
  {
    fake.stream_create_result = CUDA_ERROR_OUT_OF_MEMORY;
    NcclStreams s = make();
    EXPECT_EQ(s.fork(S(0x77)), S(0x77));
    EXPECT_EQ(s.after(S(0x77), S(0x77), nullptr, ncclSuccess, real), ncclSuccess);
    fake.stream_create_result = CUDA_SUCCESS;
  }
  {
    fake.event_record_result = CUDA_ERROR_INVALID_HANDLE;
    NcclStreams s = make();
    EXPECT_EQ(s.fork(S(0x77)), S(0x77));
    fake.event_record_result = CUDA_SUCCESS;
  }
  {
    fake.wait_result = CUDA_ERROR_INVALID_HANDLE;
    NcclStreams s = make();
    EXPECT_EQ(s.fork(S(0x77)), S(0x77));
    fake.wait_result = CUDA_SUCCESS;
  }
  EXPECT_EQ(stats.collectives_direct.load(), 3u);
  EXPECT_EQ(stats.collectives_streamed.load(), 0u);
  size_t warnings = 0;
  for (const auto& l : test::captured_log()) warnings += l.find("warning:") != std::string::npos;
  EXPECT_EQ(warnings, 2u);  // create, fork (the same fork warning is printed once)
}

}  // namespace
