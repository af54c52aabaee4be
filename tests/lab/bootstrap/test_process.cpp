// Process bootstrap with real processes on loopback: each rank is a child forked from the test,
// reporting how its run() ended through a pipe. Exchanges must give the right answers; every
// failure (a rank that throws, dies, hangs, never comes, disagrees, a port in use, no master) must
// end every rank with a clear one-line exception within the timeout, never a hang.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/detail.hpp"
#include "bootstrap/hello.hpp"
#include "fork_ranks.hpp"

using namespace cco::boot;
using namespace cco::boot::testing;

namespace {

LaunchEnv at(int rank, int n, int port) {
  LaunchEnv w;
  w.launcher = "test";
  w.rank = rank;
  w.world_size = n;
  w.local_rank = rank;
  w.master_addr = "127.0.0.1";
  w.master_port = port;
  return w;
}

/// Children for ranks 0..n-1 of one job, each running `body` in a ProcessLauncher.
std::vector<std::function<void()>> job(
    int n, int port, double timeout, const std::function<void(Group&)>& body,
    const std::function<void(LaunchEnv&, std::string&)>& tweak = {}) {
  std::vector<std::function<void()>> fns;
  for (int r = 0; r < n; ++r)
    fns.push_back([=] {
      auto w = at(r, n, port);
      std::string key = "same workload";
      if (tweak) tweak(w, key);
      ProcessLauncher l(w, timeout, key);
      l.run(body);
    });
  return fns;
}

/// The exchanges of test_threads, plus a large broadcast, checked inside each rank.
void exchanges(Group& g) {
  check(g.size() == 4 && g.device() == g.rank(), "size/device");
  int v = g.rank() == 1 ? 42 : -1;
  g.broadcast(&v, sizeof v, 1);
  check(v == 42, "broadcast");
  std::vector<unsigned char> big(3 << 20);  // larger than socket buffers
  if (g.rank() == 2)
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<unsigned char>(i * 7 + 3);
  g.broadcast(big.data(), big.size(), 2);
  for (std::size_t i = 0; i < big.size(); i += 4099)
    check(big[i] == static_cast<unsigned char>(i * 7 + 3), "big broadcast");
  std::vector<double> x = {static_cast<double>(g.rank()), 10.0 - g.rank()};
  auto mx = x, mn = x, sm = x;
  g.allreduce(mx, Group::Op::Max);
  g.allreduce(mn, Group::Op::Min);
  g.allreduce(sm, Group::Op::Sum);
  check(mx == std::vector<double>{3, 10}, "max");
  check(mn == std::vector<double>{0, 7}, "min");
  check(sm == std::vector<double>{6, 34}, "sum");
  std::vector<double> none;
  g.allreduce(none, Group::Op::Sum);
  const auto names = g.allgather("r" + std::to_string(g.rank()) +
                                 std::string(static_cast<std::size_t>(g.rank()) * 1000, 'x'));
  check(names.size() == 4, "allgather size");
  for (int r = 0; r < 4; ++r)
    check(names[static_cast<std::size_t>(r)] ==
              "r" + std::to_string(r) + std::string(static_cast<std::size_t>(r) * 1000, 'x'),
          "allgather");
  for (int i = 0; i < 100; ++i) g.barrier();  // the barrier is reusable
}

}  // namespace

// The hello read back as written, a stranger's bytes refused, and the secret's rule in every case.
TEST(Hello, ReadAsWrittenAndTheSecretsRule) {
  using namespace cco::boot::detail;
  Hello h;
  h.rank = 3;
  h.world = 4;
  h.local_rank = 1;
  h.host = "node7";
  h.key = "same workload";
  h.secret = "s3cret";
  const auto back = read_hello(write_hello(h));
  ASSERT_TRUE(back);
  EXPECT_EQ(std::tie(back->version, back->rank, back->world, back->local_rank, back->host, back->key, back->secret),
            std::tie(h.version, h.rank, h.world, h.local_rank, h.host, h.key, h.secret));
  EXPECT_FALSE(read_hello("GET / HTTP/1.1\r\n"));
  EXPECT_FALSE(read_hello(write_hello(h).substr(0, 30)));
  Hello old = h;
  old.version = 1;  // no secret on the wire
  ASSERT_TRUE(read_hello(write_hello(old)));
  EXPECT_EQ(read_hello(write_hello(old))->secret, "");
  EXPECT_EQ(secret_refusal(h, "s3cret"), "");
  EXPECT_EQ(secret_refusal(h, "s3creT"), " differs from rank 0's");
  EXPECT_EQ(secret_refusal(h, ""), " is set, rank 0's is not");
  h.secret.clear();
  EXPECT_EQ(secret_refusal(h, "s3cret"), " is missing");
  EXPECT_EQ(secret_refusal(h, ""), "");
  EXPECT_NE(secret_refusal(old, "s3cret").find("another ccoverlap"), std::string::npos);
  EXPECT_EQ(secret_refusal(old, ""), "");  // without a secret: the version check says it
  EXPECT_FALSE(same_secret("abc", "abcd"));
  EXPECT_TRUE(same_secret("", ""));
}

TEST(Process, FourRanksExchangeOverLoopback) {
  const int port = free_port();
  std::vector<std::function<void()>> fns;
  for (int r = 0; r < 4; ++r)
    fns.push_back([=] {
      ProcessLauncher l(at(r, 4, port), 20, "k");
      l.run(exchanges);
      l.run(exchanges);  // a second run meets again on the same port
    });
  const auto out = in_processes(fns);
  expect_all(out, "ok", "", 20);
}

TEST(Process, SingleRankNeedsNoNetwork) {
  LaunchEnv w = at(0, 1, 0);
  w.master_addr.clear();
  ProcessLauncher l(w, 1);
  EXPECT_EQ(l.size(), 1);
  EXPECT_EQ(l.mode(), "env:test");
  int ran = 0;
  l.run([&](Group& g) {
    std::vector<double> v = {1, 2};
    g.allreduce(v, Group::Op::Sum);
    EXPECT_EQ(v, (std::vector<double>{1, 2}));
    EXPECT_EQ(g.allgather("a"), (std::vector<std::string>{"a"}));
    g.barrier();
    ++ran;
  });
  EXPECT_EQ(ran, 1);
}

TEST(Process, ARankThatThrowsReleasesTheOthers) {
  const int port = free_port();
  const auto out = in_processes(job(4, port, 3, [](Group& g) {
    g.barrier();
    if (g.rank() == 2) throw std::runtime_error("rank two broke");
    g.barrier();
  }));
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[2].kind, "other") << out[2];
  EXPECT_EQ(out[2].what, "rank two broke");  // its own error, not Aborted
  for (int r : {0, 1, 3}) {
    EXPECT_EQ(out[r].kind, "Aborted") << out[r];
    EXPECT_NE(out[r].what.find("rank 2: rank two broke"), std::string::npos) << out[r];
    EXPECT_LT(out[r].secs, 2.5) << out[r];  // told at once, not after the timeout
  }
}

TEST(Process, ARankThatFailsAfterItsLastCallFailsTheRun) {
  const int port = free_port();
  const auto out = in_processes(job(3, port, 3, [](Group& g) {
    g.barrier();
    if (g.rank() == 1) throw std::runtime_error("late failure");
  }));
  EXPECT_EQ(out[1].kind, "other") << out[1];
  for (int r : {0, 2}) {
    EXPECT_EQ(out[r].kind, "Aborted") << out[r];
    EXPECT_NE(out[r].what.find("late failure"), std::string::npos) << out[r];
  }
}

TEST(Process, ARankThatDiesReleasesTheOthersAtOnce) {
  const int port = free_port();
  const double timeout = 3;
  const auto out = in_processes(job(4, port, timeout, [](Group& g) {
    g.barrier();
    if (g.rank() == 2) ::_exit(3);  // no goodbye: its socket just closes
    std::vector<double> v = {1};
    g.allreduce(v, Group::Op::Sum);
  }));
  EXPECT_EQ(out[2].kind, "died") << out[2];
  for (int r : {0, 1, 3}) {
    EXPECT_EQ(out[r].kind, "Aborted") << out[r];
    EXPECT_NE(out[r].what.find("rank 2 lost its connection during allreduce"), std::string::npos)
        << out[r];
    EXPECT_LT(out[r].secs, timeout) << out[r];
  }
}

TEST(Process, RankZeroDyingReleasesTheOthers) {
  const int port = free_port();
  const auto out = in_processes(job(3, port, 3, [](Group& g) {
    g.barrier();
    if (g.rank() == 0) ::_exit(3);
    g.barrier();
  }));
  EXPECT_EQ(out[0].kind, "died");
  for (int r : {1, 2}) {
    EXPECT_EQ(out[r].kind, "Aborted") << out[r];
    EXPECT_NE(out[r].what.find("lost the connection to rank 0"), std::string::npos) << out[r];
    EXPECT_LT(out[r].secs, 3) << out[r];
  }
}

TEST(Process, AStuckRankTimesOut) {
  const int port = free_port();
  const double timeout = 2;
  const auto out = in_processes(job(3, port, timeout, [&](Group& g) {
    g.barrier();
    // Alive but away far longer than the timeout; when it comes back it learns the job is over.
    if (g.rank() == 1) std::this_thread::sleep_for(std::chrono::duration<double>(timeout + 0.7));
    g.barrier();
  }));
  for (int r : {0, 2}) {
    EXPECT_EQ(out[r].kind, "Aborted") << out[r];
    EXPECT_NE(out[r].what.find("rank 1 did not reach barrier within 2 s"), std::string::npos)
        << out[r];
    EXPECT_GT(out[r].secs, timeout - 0.1) << out[r];
    EXPECT_LT(out[r].secs, timeout + 1.5) << out[r];
  }
  EXPECT_EQ(out[1].kind, "Aborted") << out[1];
  EXPECT_NE(out[1].what.find("rank 1 did not reach barrier"), std::string::npos) << out[1];
}

TEST(Process, ARankThatNeverComesTimesOut) {
  const int port = free_port();
  const double timeout = 2;
  auto fns = job(4, port, timeout, [](Group& g) { g.barrier(); });
  fns.pop_back();  // rank 3 never starts
  const auto out = in_processes(fns);
  expect_all(out, "Aborted", "rank 3 did not arrive within 2 s", timeout + 1.5);
  for (const auto& o : out) EXPECT_GT(o.secs, timeout - 0.1) << o;
}

TEST(Process, RanksDisagreeAboutTheWorldSize) {
  const int port = free_port();
  const auto out = in_processes(job(
      4, port, 5, [](Group& g) { g.barrier(); },
      [](LaunchEnv& w, std::string&) {
        if (w.rank == 1) w.world_size = 3;
      }));
  // Everyone hears it from rank 0 as soon as all have connected, long before the timeout.
  expect_all(out, "ConfigError", "ranks disagree about the world size: rank 0 has 4, rank 1", 3);
}

TEST(Process, RanksDisagreeAboutTheWorkload) {
  const int port = free_port();
  const auto out = in_processes(job(
      4, port, 5, [](Group& g) { g.barrier(); },
      [](LaunchEnv& w, std::string& key) {
        if (w.rank == 2) key = "other workload";
      }));
  expect_all(out, "ConfigError", "ranks disagree about the workload", 3);
  EXPECT_NE(out[0].what.find("rank 2"), std::string::npos) << out[0];
}

// CCO_JOB_SECRET: ranks that share it form the job; a hello without it, or with another, is
// told why and dropped, and does not end the job (anyone who reaches the port could): the others
// wait for the rank that never got in and time out, their line counting the refused hellos.
TEST(Process, RankZeroTakesOnlyHellosWithTheJobSecret) {
  const int port = free_port();
  const auto ok = in_processes(job(
      4, port, 10, exchanges, [](LaunchEnv& w, std::string&) { w.secret = "s3cret-of-the-job"; }));
  expect_all(ok, "ok", "", 10);
  for (const bool missing : {true, false}) {
    const double timeout = 2;
    const auto out = in_processes(job(
        3, free_port(), timeout, [](Group& g) { g.barrier(); },
        [missing](LaunchEnv& w, std::string&) {
          w.secret = w.rank != 2 ? "s3cret-of-the-job" : missing ? "" : "s3cret-of-the-jox";
        }));
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(out[2].kind, "ConfigError") << out[2];
    EXPECT_NE(out[2].what.find(std::string("rank 0 refused this hello: its CCO_JOB_SECRET ") +
                               (missing ? "is missing" : "differs from rank 0's")),
              std::string::npos)
        << out[2];
    EXPECT_LT(out[2].secs, timeout) << out[2];  // told at once, not left to time out
    for (int r : {0, 1}) {
      EXPECT_EQ(out[r].kind, "Aborted") << out[r];
      EXPECT_NE(out[r].what.find("rank 2 did not arrive"), std::string::npos) << out[r];
    }
    EXPECT_NE(out[0].what.find("1 hello(s) refused for their CCO_JOB_SECRET"), std::string::npos)
        << out[0];
  }
}

// With CCO_JOB_SECRET, strangers cannot end the job or hold rank 0 up: hellos of another version
// (which carry no secret that can be checked) and twenty with a wrong secret, kept open, are each
// told and dropped at once, and the job forms when its late rank comes (the version-1 hello ended
// the job, and each refused hello held rank 0 for 0.2 s: a review found both).
TEST(Process, StrangersCannotEndOrStallAJobWithASecret) {
  const int port = free_port();
  auto fns = job(
      2, port, 5.0, [](Group& g) { g.barrier(); },
      [](LaunchEnv& w, std::string&) { w.secret = "s3cret-of-the-job"; });
  fns[1] = [f = fns[1]] {  // rank 1 comes late: the strangers meet rank 0 alone
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    f();
  };
  fns.push_back([port] {
    const auto connect_once = [port] {
      const auto t0 = std::chrono::steady_clock::now();
      while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5)) {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(static_cast<std::uint16_t>(port));
        if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
        ::close(fd);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      throw std::runtime_error("the stranger never reached rank 0");
    };
    const auto hello = [](std::uint64_t version, const std::string& secret) {
      cco::boot::detail::Writer w;
      w.str("ccoverlap-bootstrap");
      w.u64(version);
      w.i64(1);  // claims rank 1
      w.i64(2);
      w.i64(1);
      w.str("stranger");
      w.str("same workload");
      if (version == 2) w.str(secret);
      cco::boot::detail::Writer h;
      h.u64(cco::boot::detail::kMagic | (std::uint64_t{1} << 32));
      h.u64(w.s.size());
      return h.s + w.s;
    };
    std::vector<int> open;
    const auto t0 = std::chrono::steady_clock::now();
    for (const auto& [version, secret] : std::vector<std::pair<std::uint64_t, std::string>>{
             {1, ""}, {3, ""}, {2, ""}, {2, "guess"}}) {
      for (int i = 0; i < (version == 2 ? 10 : 1); ++i) {
        const int fd = connect_once();
        const std::string h = hello(version, secret);
        (void)::send(fd, h.data(), h.size(), MSG_NOSIGNAL);
        open.push_back(fd);  // kept open: rank 0 must not wait on it
      }
    }
    // Each was told why: its first bytes are an Abort frame (kind 5) from rank 0.
    int told = 0;
    for (int fd : open) {
      pollfd p{fd, POLLIN, 0};
      std::uint64_t head[2] = {0, 0};
      if (::poll(&p, 1, 2000) > 0 && ::recv(fd, head, sizeof head, MSG_WAITALL) == sizeof head &&
          ((head[0] >> 32) & 0xff) == 5)
        ++told;
    }
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (int fd : open) ::close(fd);
    if (told != static_cast<int>(open.size()))
      throw std::runtime_error(std::to_string(told) + " of " + std::to_string(open.size()) +
                               " strangers were told why they were refused");
    if (took >= 1.2)
      throw std::runtime_error("refusing 22 strangers took " + std::to_string(took) + " s");
  });
  const auto out = in_processes(fns);
  EXPECT_EQ(out[0].kind, "ok") << out[0];
  EXPECT_EQ(out[1].kind, "ok") << out[1];
  EXPECT_EQ(out[2].kind, "ok") << out[2];
}

TEST(Process, TwoProcessesClaimOneRank) {
  const int port = free_port();
  const auto out = in_processes(job(
      3, port, 5, [](Group& g) { g.barrier(); },
      [](LaunchEnv& w, std::string&) {
        if (w.rank == 2) w.rank = 1;
      }));
  expect_all(out, "ConfigError", "two processes claim rank 1", 3);
}

TEST(Process, DifferentCallsAbort) {
  const int port = free_port();
  const auto out = in_processes(job(3, port, 5, [](Group& g) {
    if (g.rank() == 1)
      g.allgather("x");
    else
      g.barrier();
  }));
  expect_all(out, "Aborted",
             "ranks made different group calls: rank 0 is in barrier, rank 1 in allgather", 3);
}

TEST(Process, ARankThatReturnsEarlyAborts) {
  const int port = free_port();
  const auto out = in_processes(job(3, port, 5, [](Group& g) {
    if (g.rank() != 1) g.barrier();
  }));
  expect_all(out, "Aborted",
             "ranks made different group calls: rank 0 is in barrier, rank 1 at the end of its run",
             3);
}

TEST(Process, MismatchedAllreduceLengthsAbort) {
  const int port = free_port();
  const auto out = in_processes(job(2, port, 5, [](Group& g) {
    std::vector<double> v(static_cast<std::size_t>(g.rank() + 1), 1.0);
    g.allreduce(v, Group::Op::Sum);
  }));
  expect_all(out, "Aborted", "allreduce lengths differ between ranks", 3);
}

TEST(Process, PortInUse) {
  const int port = free_port();
  // Hold the port (bound, not listening), as another program would.
  const int holder = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const double timeout = 1.5;
  const auto out = in_processes(job(2, port, timeout, [](Group& g) { g.barrier(); }));
  ::close(holder);
  EXPECT_EQ(out[0].kind, "ConfigError") << out[0];
  EXPECT_NE(out[0].what.find("port " + std::to_string(port) + ": it is already in use"),
            std::string::npos)
      << out[0];
  EXPECT_LT(out[0].secs, 0.5) << out[0];  // at once
  EXPECT_EQ(out[1].kind, "Aborted") << out[1];
  EXPECT_NE(out[1].what.find("cannot reach rank 0 at 127.0.0.1:" + std::to_string(port)),
            std::string::npos)
      << out[1];
  EXPECT_LT(out[1].secs, timeout + 1) << out[1];
}

TEST(Process, UnreachableMaster) {
  const double timeout = 1;
  ProcessLauncher l(at(1, 2, free_port()), timeout);
  const auto t0 = Clock::now();
  try {
    l.run([](Group& g) { g.barrier(); });
    FAIL() << "expected Aborted";
  } catch (const Aborted& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 cannot reach rank 0 at 127.0.0.1:"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("Connection refused"), std::string::npos) << e.what();
  }
  EXPECT_GT(since(t0), timeout - 0.1);
  EXPECT_LT(since(t0), timeout + 1);

  LaunchEnv w = at(1, 2, 29510);
  w.master_addr = "no-such-host.invalid";
  ProcessLauncher bad(w, 5);
  const auto t1 = Clock::now();
  try {
    bad.run([](Group& g) { g.barrier(); });
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot resolve rank 0's address 'no-such-host.invalid'"),
              std::string::npos)
        << e.what();
  }
  EXPECT_LT(since(t1), 5);
}

TEST(Process, SharedFileRendezvous) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("cco-boot-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "rendezvous").string();
  {
    // A stale file from an earlier job: nothing listens there any more.
    std::ofstream(file) << "127.0.0.1:" << free_port() << "\n";
  }
  std::vector<std::function<void()>> fns;
  for (int r = 0; r < 4; ++r)
    fns.push_back([=] {
      LaunchEnv w = at(r, 4, 0);  // port 0: any free port; no address: rank 0's host name
      w.master_addr.clear();
      w.rendezvous_file = file;
      if (r == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the others start first
      ProcessLauncher l(w, 10, "k");
      l.run([&](Group& g) {
        const auto all = g.allgather(std::to_string(g.rank() * 10));
        check(all == std::vector<std::string>{"0", "10", "20", "30"}, "allgather");
        g.barrier();
      });
    });
  const auto out = in_processes(fns);
  expect_all(out, "ok", "", 10);
  EXPECT_FALSE(std::filesystem::exists(file));  // rank 0 removes it once all have connected
  std::filesystem::remove_all(dir);
}

TEST(Process, InconsistentPlaceIsRejected) {
  EXPECT_THROW(ProcessLauncher(at(2, 2, 1), 1), std::invalid_argument);
  EXPECT_THROW(ProcessLauncher(at(0, 2, 1), 0), std::invalid_argument);
  EXPECT_THROW(ProcessLauncher(at(0, 2, 0), 1), std::invalid_argument);
}

// Rank 0 listens where the ranks are told to connect when that is this machine's address (a
// loopback address keeps the port off the network), else on every interface (issue 46).
TEST(Process, ListensWhereTheRanksAreToldToConnect) {
  std::string bound;
  int fd = cco::boot::detail::listen_on(0, 1, "127.0.0.1", &bound);
  EXPECT_EQ(bound, "127.0.0.1");
  ::close(fd);
  fd = cco::boot::detail::listen_on(0, 1, "localhost", &bound);
  EXPECT_EQ(bound.rfind("127.", 0), 0u) << bound;
  ::close(fd);
  fd = cco::boot::detail::listen_on(0, 1, "192.0.2.1", &bound);  // TEST-NET-1: not this machine
  EXPECT_EQ(bound, "0.0.0.0");
  ::close(fd);
  fd = cco::boot::detail::listen_on(0, 1, "", &bound);
  EXPECT_EQ(bound, "0.0.0.0");
  ::close(fd);
}

// A client that is not a rank cannot make rank 0 hold its bytes: one that announces a 512 MiB
// hello and sends on is cut off at once (it was buffered, up to 1 GiB per connection, until the
// ranks had all arrived), and the job forms as if it had not come. The stranger is a third
// process (no thread beside the forks: TSan runs this test too).
TEST(Process, AStrangerCannotMakeRankZeroHoldItsBytes) {
  const int port = free_port();
  auto fns = job(2, port, 10.0, [](Group& g) { g.barrier(); });
  fns[1] = [f = fns[1]] {  // rank 1 comes late: the stranger meets rank 0 alone
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    f();
  };
  fns.push_back([port] {
    const auto t0 = std::chrono::steady_clock::now();
    int fd = -1;
    while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5)) {
      fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(static_cast<std::uint16_t>(port));
      if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) break;
      ::close(fd);
      fd = -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (fd < 0) throw std::runtime_error("the stranger never reached rank 0");
    const auto connected = std::chrono::steady_clock::now();
    uint64_t head[2] = {cco::boot::detail::kMagic | (uint64_t{1} << 32), uint64_t{512} << 20};
    (void)::send(fd, head, sizeof head, MSG_NOSIGNAL);
    std::vector<char> junk(1 << 16, 'x');
    for (int i = 0; i < 400; ++i) {  // up to 25 MiB, while rank 0 keeps the connection
      if (::send(fd, junk.data(), junk.size(), MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN)
        break;
      pollfd p{fd, POLLIN, 0};
      char c;
      if (::poll(&p, 1, 5) > 0 && ::recv(fd, &c, 1, MSG_DONTWAIT) <= 0) break;  // closed by rank 0
    }
    const double cut = std::chrono::duration<double>(std::chrono::steady_clock::now() - connected).count();
    ::close(fd);
    if (cut >= 1.0)
      throw std::runtime_error("rank 0 kept the stranger's connection " + std::to_string(cut) +
                               " s, until the ranks came");
  });
  const auto out = in_processes(fns);
  EXPECT_EQ(out[0].kind, "ok") << out[0];
  EXPECT_EQ(out[1].kind, "ok") << out[1];
  EXPECT_EQ(out[2].kind, "ok") << out[2];  // the stranger: cut off within 1 s
}
