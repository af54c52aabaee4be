// MPI bootstrap (builds with -DCCO_ENABLE_MPI=ON), run by CTest under `mpiexec -n 4`: the factory
// picks MPI, and the exchanges give the same answers as the threads and TCP modes.
#include <gtest/gtest.h>

#include "bootstrap/bootstrap.hpp"

using namespace cco::boot;

TEST(Mpi, FactoryPicksMpiUnderMpirun) {
  LaunchOptions o;
  const auto env = current_environment();
  ASSERT_TRUE(mpi_available());
  EXPECT_EQ(make_launcher(o, env)->mode(), "mpi");  // auto: Open MPI's variables and an MPI build
  o.mode = "mpi";
  EXPECT_EQ(make_launcher(o, env)->mode(), "mpi");
}

TEST(Mpi, Exchanges) {
  LaunchOptions o;
  o.mode = "mpi";
  auto l = make_launcher(o, current_environment());
  ASSERT_EQ(l->size(), 4) << "run under mpiexec -n 4";
  EXPECT_EQ(l->local_ranks(), 1);
  l->run([&](Group& g) {
    EXPECT_EQ(g.rank(), l->first_rank());
    EXPECT_EQ(g.size(), 4);
    EXPECT_EQ(g.device(), g.rank());  // one node: the local rank is the rank
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
    EXPECT_EQ(g.allgather("r" + std::to_string(g.rank())),
              (std::vector<std::string>{"r0", "r1", "r2", "r3"}));
    for (int i = 0; i < 100; ++i) g.barrier();
  });
}

TEST(Mpi, MismatchedLengthsAbortOnEveryRank) {
  LaunchOptions o;
  o.mode = "mpi";
  auto l = make_launcher(o, current_environment());
  l->run([&](Group& g) {
    std::vector<double> v(static_cast<std::size_t>(g.rank() + 1), 1.0);
    EXPECT_THROW(g.allreduce(v, Group::Op::Sum), Aborted);  // caught here, so the job goes on
    g.barrier();
  });
}
