// Threads bootstrap: exchanges give the right answers, and a failing rank never hangs the rest.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

#include "bootstrap/bootstrap.hpp"

using namespace cco::boot;

TEST(Threads, RanksDevicesAndExchanges) {
  ThreadLauncher l(4, 2);
  std::atomic<int> seen{0};
  l.run([&](Group& g) {
    EXPECT_EQ(g.size(), 4);
    EXPECT_EQ(g.device(), 2 + g.rank());
    int v = g.rank() == 1 ? 42 : -1;
    g.broadcast(&v, sizeof v, 1);
    EXPECT_EQ(v, 42);
    std::vector<double> x = {static_cast<double>(g.rank()), 10.0 - g.rank()};
    auto mx = x, mn = x, sm = x;
    g.allreduce(mx, Group::Op::Max);
    g.allreduce(mn, Group::Op::Min);
    g.allreduce(sm, Group::Op::Sum);
    EXPECT_EQ(mx, (std::vector<double>{3, 10}));
    EXPECT_EQ(mn, (std::vector<double>{0, 7}));
    EXPECT_EQ(sm, (std::vector<double>{6, 34}));
    std::string mine = "r";
    mine += std::to_string(g.rank());  // (not "r" + ...: GCC 12 warns falsely, -Wrestrict)
    const auto names = g.allgather(mine);
    EXPECT_EQ(names, (std::vector<std::string>{"r0", "r1", "r2", "r3"}));
    for (int i = 0; i < 100; ++i) g.barrier();  // the barrier is reusable
    ++seen;
  });
  EXPECT_EQ(seen, 4);
}

TEST(Threads, AFailingRankReleasesTheOthersAndItsErrorComesBack) {
  ThreadLauncher l(3);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    l.run([&](Group& g) {
      if (g.rank() == 2) throw std::runtime_error("rank two broke");
      g.barrier();  // would wait forever for rank 2
      g.barrier();
    });
    FAIL() << "expected the rank's error";
  } catch (const Aborted&) {
    FAIL() << "the root cause must come back, not Aborted";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "rank two broke");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST(Threads, MismatchedAllreduceLengthsAbort) {
  ThreadLauncher l(2);
  EXPECT_THROW(l.run([&](Group& g) {
    std::vector<double> v(static_cast<std::size_t>(g.rank() + 1), 1.0);
    g.allreduce(v, Group::Op::Sum);
  }),
               Aborted);
}

TEST(Threads, ZeroRanksIsAnError) {
  EXPECT_THROW(ThreadLauncher(0), std::invalid_argument);
}
