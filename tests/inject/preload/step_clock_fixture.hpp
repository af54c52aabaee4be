// The step clock's test fixtures, shared by its tests (test_step_clock.cpp: steps, rotation, the
// step file) and the search's and the check's (test_tune_clock.cpp): a clock against the fake
// driver and a fake host clock; the search's decision folder.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "fake_driver.hpp"
#include "preload/step_clock.hpp"

namespace cco::test {

using cco::preload::StepClock;
using cco::preload::StepClockOptions;

class StepClockTest : public ::testing::Test {
 protected:
  void SetUp() override { fake.install(); }
  FakeDriver fake;
  uint64_t now = 1'000'000'000;  // the fake host clock (ns)
  std::vector<int> switches;
  std::unique_ptr<StepClock> make(StepClockOptions o) {
    return std::make_unique<StepClock>(fake.api(), std::move(o),
                                       [this](int c) { switches.push_back(c); },
                                       [this] { return now; });
  }
  // The configuration in force after each of `n` step marks (what a follower runs).
  std::vector<int> actives_over_marks(StepClock& c, int n) {
    std::vector<int> active;
    for (int k = 0; k < n; ++k) {
      c.mark(0, S(0x88), false);
      active.push_back(c.active());
    }
    return active;
  }
  // One training step: 3 collectives and `ms` of host and GPU time; `ms_b` instead when the
  // configuration in force after the step's first collective (a boundary) is 1.
  void step(StepClock& c, double ms, int dev = 0, double ms_b = -1) {
    for (uint64_t sig : {11u, 22u, 33u}) {
      c.collective(sig, dev, S(0x77), false);
      if (sig == 11u && ms_b >= 0 && c.active() == 1) ms = ms_b;
      now += static_cast<uint64_t>(ms / 3 * 1e6);
      fake.gpu_ms += ms / 3;
    }
  }
};

class TuneClockTest : public StepClockTest {
 protected:
  std::string dir;
  void SetUp() override {
    StepClockTest::SetUp();
    char t[] = "/tmp/cco-tune-test-XXXXXX";
    ASSERT_NE(::mkdtemp(t), nullptr);
    dir = t;
  }
  void TearDown() override {
    std::remove((dir + "/tune.json").c_str());
    std::remove((dir + "/decider").c_str());
    EXPECT_EQ(::rmdir(dir.c_str()), 0) << "a file left in " << dir;
  }
  StepClockOptions options(bool decider) {
    StepClockOptions o;
    o.configs = {"off", "fast", "slow"};
    o.warmup = 2;
    o.flush_ns = 0;
    o.rank = decider ? 0 : 1;
    o.tune.on = true;
    o.tune.min_rounds = 6;
    o.tune.decider = decider;
    o.tune.path = dir + "/tune.json";
    o.tune.wait_ns = 2'000'000'000;
    return o;
  }
  // A marked step of the decider: its time is that of the candidate in force (ms[c]) plus a
  // jitter of +-j alternating by step.
  void marked(StepClock& c, const std::vector<double>& ms, double j, int k) {
    c.mark(0, S(0x77), false);
    const double t = ms[static_cast<std::size_t>(c.active())] + (k % 2 ? -j : j);
    now += static_cast<uint64_t>(t * 1e6);
    fake.gpu_ms += t;
  }
};

// The lines the library warns, kept by a test (set_log_sink(keep_line)).
inline std::vector<std::string>& warned() {
  static std::vector<std::string> lines;
  return lines;
}
inline void keep_line(const std::string& l) { warned().push_back(l); }

}  // namespace cco::test
