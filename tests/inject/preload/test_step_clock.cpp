// The step clock (step_clock.hpp) against the fake driver: steps found from collectives or marks,
// host and GPU times, the rotation of configurations at step boundaries, the step file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "fake_driver.hpp"
#include "step_clock_fixture.hpp"
#include "preload/step_clock.hpp"
#include "steps/record.hpp"
#include "steps/schedule.hpp"

namespace {

using cco::preload::StepClock;
using cco::preload::StepClockOptions;
using cco::test::FakeDriver;
using cco::test::S;
using cco::test::StepClockTest;

TEST_F(StepClockTest, RotatesAtBoundariesAndTimesSteps) {
  StepClockOptions o;
  o.configs = {"off", "shape:1"};
  o.warmup = 2;
  o.flush_ns = 0;
  auto c = make(o);
  // Period 3 is locked after 3 steps; then steps run A A (warm-up) A B B A A B B A ...
  // and config 1 is 2 ms slower per step.
  for (int i = 0; i < 24; ++i) {
    step(*c, 10.0, 0, 12.0);
    fake.complete_events();
  }
  const auto f = c->snapshot("exit");
  EXPECT_EQ(f.source, "collectives");
  EXPECT_EQ(f.period, 3);
  ASSERT_GE(f.steps.size(), 15u);
  for (const auto& s : f.steps) {
    EXPECT_EQ(s.config, cco::steps::config_of_step(s.step, 2, 2)) << s.step;
    EXPECT_NEAR(s.host_ms, s.config == 1 ? 12.0 : 10.0, 0.01) << s.step;
    ASSERT_TRUE(s.gpu_ms.has_value()) << s.step;
    EXPECT_NEAR(*s.gpu_ms, s.config == 1 ? 12.0 : 10.0, 0.01) << s.step;
    EXPECT_TRUE(s.regular);
  }
  // The switches the hook saw: exactly the changes of the schedule.
  ASSERT_FALSE(switches.empty());
  EXPECT_EQ(switches.front(), 1);
  for (std::size_t i = 1; i < switches.size(); ++i) EXPECT_NE(switches[i], switches[i - 1]);
}

// Every boundary is reported to on_boundary (cco run --trace makes it a mark in the trace), named
// by the clock's epoch and with the device followed; a relock starts a new epoch.
TEST_F(StepClockTest, BoundariesAreReportedForTheTrace) {
  StepClockOptions o;
  o.flush_ns = 0;
  std::vector<std::pair<std::string, int>> marks;
  o.on_boundary = [&](const char* name, int dev) { marks.push_back({name, dev}); };
  auto c = make(o);
  for (int i = 0; i < 8; ++i) step(*c, 10.0, 1);
  const auto f = c->snapshot("exit");
  // One mark per boundary: the steps measured and the one still running.
  ASSERT_EQ(marks.size(), f.steps.size() + 1);
  for (std::size_t i = 0; i < marks.size(); ++i) {
    // The default warm-up is 5 steps.
    EXPECT_EQ(marks[i].first, std::string("cco step, epoch 1, config 0") + (i < 5 ? ", warm-up" : ""));
    EXPECT_EQ(marks[i].second, 1);
  }
  // Marks take over: a new epoch.
  c->mark(1, S(0x77), false);
  c->mark(1, S(0x77), false);
  EXPECT_EQ(marks.back().first, "cco step, epoch 2, config 0, warm-up");
}

// Under a rotation each mark names the configuration of the step it starts.
TEST_F(StepClockTest, BoundaryMarksNameTheConfiguration) {
  StepClockOptions o;
  o.configs = {"off", "priority"};
  o.warmup = 2;
  o.flush_ns = 0;
  std::vector<std::string> marks;
  o.on_boundary = [&](const char* name, int) { marks.push_back(name); };
  auto c = make(o);
  for (int i = 0; i < 12; ++i) step(*c, 10.0);
  const auto f = c->snapshot("exit");
  ASSERT_GE(f.steps.size(), 6u);
  for (const auto& s : f.steps)
    EXPECT_EQ(marks[s.step], "cco step, epoch 1, config " + std::to_string(s.config) +
                                 (s.step < 2 ? ", warm-up" : ""))
        << s.step;
}

TEST_F(StepClockTest, GpuTimeOnlyOnceEventsComplete) {
  StepClockOptions o;
  o.flush_ns = 0;
  auto c = make(o);
  for (int i = 0; i < 8; ++i) step(*c, 10.0);  // events never complete
  auto f = c->snapshot("exit");
  ASSERT_FALSE(f.steps.empty());
  for (const auto& s : f.steps) EXPECT_FALSE(s.gpu_ms.has_value());
  fake.complete_events();
  f = c->snapshot("exit");  // resolved at the snapshot, without waiting
  for (const auto& s : f.steps) EXPECT_TRUE(s.gpu_ms.has_value());
}

TEST_F(StepClockTest, CapturedBoundariesHaveNoGpuTime) {
  StepClockOptions o;
  o.flush_ns = 0;
  auto c = make(o);
  for (int i = 0; i < 8; ++i)
    for (uint64_t sig : {1u, 2u}) {
      c->collective(sig, 0, S(0x77), /*capturing=*/true);
      now += 1'000'000;
    }
  fake.complete_events();
  const auto f = c->snapshot("exit");
  ASSERT_FALSE(f.steps.empty());
  EXPECT_EQ(fake.event_creates, 0);
  for (const auto& s : f.steps) EXPECT_FALSE(s.gpu_ms.has_value());
}

TEST_F(StepClockTest, MarksTakeOverAndOtherDevicesAreIgnored) {
  StepClockOptions o;
  o.flush_ns = 0;
  auto c = make(o);
  for (int i = 0; i < 6; ++i) step(*c, 10.0, /*dev=*/0);
  for (int i = 0; i < 6; ++i) step(*c, 50.0, /*dev=*/1);  // another GPU of the process: ignored
  auto f = c->snapshot("exit");
  EXPECT_EQ(f.source, "collectives");
  for (const auto& s : f.steps) EXPECT_NEAR(s.host_ms, 10.0, 0.01);
  // Marks: from now on only they count.
  for (int i = 0; i < 5; ++i) {
    c->mark(0, S(0x5), false);
    now += 7'000'000;
    step(*c, 3.0);  // collectives between marks do not make steps any more
  }
  f = c->snapshot("exit");
  EXPECT_EQ(f.source, "marker");
  EXPECT_EQ(f.period, 0);
  ASSERT_EQ(f.steps.size(), 4u);
  for (const auto& s : f.steps) EXPECT_NEAR(s.host_ms, 10.0, 0.01);
}

TEST_F(StepClockTest, NoStepsWithoutRepeatsOrMarks) {
  StepClockOptions o;
  o.configs = {"off", "shape:1"};
  o.flush_ns = 0;
  auto c = make(o);
  for (uint64_t i = 0; i < 500; ++i) c->collective(i * 7919, 0, S(0x77), false);
  const auto f = c->snapshot("exit");
  EXPECT_EQ(f.source, "none");
  EXPECT_TRUE(f.steps.empty());
  EXPECT_TRUE(switches.empty());  // never rotated
}

TEST_F(StepClockTest, WritesTheStepFileAndFlushesWhileRunning) {
  const std::string dir = testing::TempDir();
  StepClockOptions o;
  o.path = dir + "cco_step_clock_" + std::to_string(::getpid()) + ".json";
  o.flush_ns = 50'000'000;  // 50 ms of the fake clock
  auto c = make(o);
  for (int i = 0; i < 12; ++i) step(*c, 10.0);
  // Flushed while running, without an explicit write, by the writer's thread.
  cco::steps::StepFile f;
  for (int i = 0; i < 2000 && f.steps.empty(); ++i) {
    try {
      f = cco::steps::read_step_file(o.path);
    } catch (const std::exception&) {
    }
    if (f.steps.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(f.ended, "running");
  EXPECT_FALSE(f.steps.empty());
  std::string err;
  ASSERT_TRUE(c->write("exit", &err)) << err;
  f = cco::steps::read_step_file(o.path);
  EXPECT_EQ(f.ended, "exit");
  std::remove(o.path.c_str());

  StepClockOptions bad;
  bad.path = "/nonexistent/dir/steps.json";
  bad.flush_ns = 0;
  auto c2 = make(bad);
  EXPECT_FALSE(c2->write("exit", &err));
  EXPECT_NE(err.find("/nonexistent/dir/steps.json"), std::string::npos);
}

// A boundary never waits for the step file (issue 46: it was built and written under the clock's
// lock, 1.3 s at 875k kept steps): with the writer's thread held inside its write, the program's
// boundaries go on, and what they hand over is written once it is let go -- every step, the GPU
// times resolved since included -- and the exit's write, made later, is never replaced by an
// older one.
TEST_F(StepClockTest, ABoundaryNeverWaitsForTheStepFile) {
  const std::string path =
      testing::TempDir() + "cco_step_writer_" + std::to_string(::getpid()) + ".json";
  std::atomic<bool> held{true};  // the writer's thread stops at its first write
  std::atomic<int> entered{0};
  StepClockOptions o;
  o.path = path;
  o.flush_ns = 1;  // a hand-over at every boundary
  o.before_write = [&] {
    ++entered;
    while (held.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  auto c = make(o);
  for (int i = 0; i < 8; ++i) step(*c, 10.0);
  for (int i = 0; i < 2000 && entered.load() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(entered.load(), 1) << "the writer's thread never started a write";
  // The writer is held: boundaries (and their hand-overs) go on regardless.
  for (int i = 0; i < 200; ++i) {
    step(*c, 10.0);
    fake.complete_events();
  }
  const std::size_t kept = c->snapshot("running").steps.size();
  EXPECT_GE(kept, 190u);
  held = false;
  // Let go, it writes the newest hand-over: every step the clock had, with GPU times.
  cco::steps::StepFile f;
  for (int i = 0; i < 4000 && f.steps.size() < kept; ++i) {
    try {
      f = cco::steps::read_step_file(path);
    } catch (const std::exception&) {
    }
    if (f.steps.size() < kept) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(f.steps.size(), kept);
  EXPECT_EQ(f.ended, "running");
  for (std::size_t k = 0; k + 2 < f.steps.size(); ++k) {
    EXPECT_EQ(f.steps[k].step, k);
    EXPECT_TRUE(f.steps[k].gpu_ms.has_value()) << k;
  }
  std::string err;
  ASSERT_TRUE(c->write("exit", &err)) << err;
  c.reset();  // stops and joins the writer's thread: nothing older replaces the exit's file
  EXPECT_EQ(cco::steps::read_step_file(path).ended, "exit");
  std::remove(path.c_str());
}

}  // namespace
