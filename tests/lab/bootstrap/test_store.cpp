// Rendezvous through torchrun's store, GPU-free: a fake c10d TCPStore (a thread of this test that
// speaks the protocol documented in src/lab/bootstrap/tcpstore.cpp) stands in for torchrun's agent,
// and real processes forked from the test meet through it with MASTER_PORT pointing at it. They
// must meet on a port the kernel picked (MASTER_PORT + 1 is held by a listening socket), meet
// again on a second run, fall back to MASTER_PORT + 1 with one warning line when the store is not
// a TCPStore, and refuse malformed replies; every failure ends within the timeout.
//
// RealTorchrun.* runs only under a real torchrun with CCO_TEST_REAL_TORCHRUN=1 (see its comment).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/tcpstore.hpp"
#include "fork_ranks.hpp"

using namespace cco::boot;
using namespace cco::boot::testing;
using cco::boot::detail::after;
using cco::boot::detail::StoreClient;
using cco::boot::detail::StoreError;

namespace {

// ---- a fake TCPStore ---------------------------------------------------------------------------

/// A TCPStore server on 127.0.0.1 in a thread of the test process, per the protocol notes in
/// tcpstore.cpp. Modes make it misbehave the ways a wrong or broken server would.
class FakeStore {
 public:
  enum class Mode {
    Serve,            // a working store
    CloseOnValidate,  // closes every connection once VALIDATE arrives (refuses validation)
    Silent,           // accepts, reads, never answers
    WrongEcho,        // answers PING with another number
    HugeValue,        // answers GET with a 2^40-byte length
    MinAdd,           // answers every ADD with INT64_MIN
  };

  /// Listens on `port` (0: any free port).
  explicit FakeStore(Mode mode, int port = 0) : mode_(mode) {
    lfd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(lfd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    EXPECT_EQ(::bind(lfd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
    EXPECT_EQ(::listen(lfd_, 64), 0);
    socklen_t n = sizeof a;
    ::getsockname(lfd_, reinterpret_cast<sockaddr*>(&a), &n);
    port_ = ntohs(a.sin_port);
    EXPECT_EQ(::pipe(stop_), 0);
    thread_ = std::thread([this] { loop(); });
  }
  ~FakeStore() {
    [[maybe_unused]] auto n = ::write(stop_[1], "x", 1);
    thread_.join();
    for (auto& c : clients_) ::close(c.fd);
    ::close(lfd_);
    ::close(stop_[0]);
    ::close(stop_[1]);
  }
  int port() const { return port_; }
  std::map<std::string, std::string> data() {
    std::lock_guard<std::mutex> l(mu_);
    return kv_;
  }
  int validated() const { return validated_; }

 private:
  struct Client {
    int fd;
    std::string in;
    bool validated = false;
    std::vector<std::string> waiting;  // keys of a pending WAIT
  };

  void loop() {
    for (;;) {
      std::vector<pollfd> fds{{stop_[0], POLLIN, 0}, {lfd_, POLLIN, 0}};
      for (auto& c : clients_) fds.push_back({c.fd, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), 1000) <= 0) continue;
      if (fds[0].revents) return;
      if (fds[1].revents) {
        const int fd = ::accept(lfd_, nullptr, nullptr);
        if (fd >= 0) clients_.push_back(Client{fd, {}, false, {}});
      }
      for (std::size_t i = 2; i < fds.size(); ++i) {
        if (!fds[i].revents) continue;
        auto& c = clients_[i - 2];
        char buf[65536];
        const auto n = ::recv(c.fd, buf, sizeof buf, 0);
        if (n <= 0 || !serve(c, std::string_view(buf, static_cast<std::size_t>(n)))) {
          ::close(c.fd);
          c.fd = -1;
        }
      }
      std::erase_if(clients_, [](const Client& c) { return c.fd < 0; });
      wake_waiters();
    }
  }

  /// Reads what `c` sent and answers every whole request; false: close the connection.
  bool serve(Client& c, std::string_view got) {
    if (mode_ == Mode::Silent) return true;
    c.in.append(got);
    for (;;) {
      std::size_t pos = 0;
      bool more = false;  // the request is not all there yet
      const auto take = [&](void* out, std::size_t n) {
        if (more || c.in.size() - pos < n) return more = true, false;
        std::memcpy(out, c.in.data() + pos, n);
        pos += n;
        return true;
      };
      const auto str = [&](std::string& s, std::uint64_t limit) {
        std::uint64_t len = 0;
        if (!take(&len, 8)) return false;
        if (len > limit) throw std::runtime_error("too long");
        if (c.in.size() - pos < len) return more = true, false;
        s = c.in.substr(pos, static_cast<std::size_t>(len));
        pos += static_cast<std::size_t>(len);
        return true;
      };
      std::uint8_t q = 0;
      if (!take(&q, 1)) return true;
      std::string reply;
      try {
        if (!c.validated) {
          std::uint32_t magic = 0;
          if (q != 0) return false;  // the first query must be VALIDATE
          if (!take(&magic, 4)) return true;
          if (mode_ == Mode::CloseOnValidate || magic != 0x3C85F7CE) return false;
          c.validated = true;
          ++validated_;
        } else if (!answer(c, q, take, str, reply)) {
          return false;
        }
      } catch (const std::exception&) {
        return false;
      }
      if (more) return true;  // wait for the rest; parse it again from the start
      c.in.erase(0, pos);
      if (!reply.empty() && ::send(c.fd, reply.data(), reply.size(), MSG_NOSIGNAL) < 0)
        return false;
    }
  }

  template <class Take, class Str>
  bool answer(Client& c, std::uint8_t q, Take& take, Str& str, std::string& reply) {
    const auto put = [&](const auto& v) {
      reply.append(reinterpret_cast<const char*>(&v), sizeof v);
    };
    std::string key, value;
    std::lock_guard<std::mutex> l(mu_);
    switch (q) {
      case 13: {  // PING
        std::uint32_t nonce = 0;
        if (take(&nonce, 4)) put(mode_ == Mode::WrongEcho ? nonce + 1 : nonce);
        return true;
      }
      case 1:  // SET
        if (str(key, 8192) && str(value, 8 << 20)) kv_[key] = value;
        return true;
      case 3:  // GET
        if (!str(key, 8192)) return true;
        value = kv_.count(key) ? kv_[key] : std::string();
        if (mode_ == Mode::HugeValue) {
          put(std::uint64_t{1} << 40);
          reply += "127.0.0.1:1";
        } else {
          put(static_cast<std::uint64_t>(value.size()));
          reply += value;
        }
        return true;
      case 4: {  // ADD
        std::int64_t delta = 0;
        if (!str(key, 8192) || !take(&delta, 8)) return true;
        if (mode_ == Mode::MinAdd) {
          put(std::numeric_limits<std::int64_t>::min());
          return true;
        }
        const std::int64_t v = (kv_.count(key) ? std::stoll(kv_[key]) : 0) + delta;
        kv_[key] = std::to_string(v);
        put(v);
        return true;
      }
      case 5:    // CHECK
      case 6: {  // WAIT
        std::uint64_t n = 0;
        if (!take(&n, 8) || n > 1024) return n <= 1024;
        std::vector<std::string> keys(static_cast<std::size_t>(n));
        for (auto& k : keys)
          if (!str(k, 8192)) return true;
        bool all = true;
        for (const auto& k : keys) all = all && kv_.count(k);
        if (q == 5)
          put(static_cast<std::uint8_t>(all ? 0 : 1));
        else if (all)
          put(std::uint8_t{0});  // STOP_WAITING
        else
          c.waiting = keys;
        return true;
      }
      default:
        return false;  // not served here: close, as the real server does
    }
  }

  void wake_waiters() {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& c : clients_) {
      if (c.waiting.empty()) continue;
      bool all = true;
      for (const auto& k : c.waiting) all = all && kv_.count(k);
      if (!all) continue;
      c.waiting.clear();
      const char stop = 0;
      ::send(c.fd, &stop, 1, MSG_NOSIGNAL);
    }
  }

  Mode mode_;
  int lfd_ = -1, port_ = 0;
  int stop_[2] = {-1, -1};
  std::thread thread_;
  std::vector<Client> clients_;  // the server thread's own
  std::mutex mu_;
  std::map<std::string, std::string> kv_;
  std::atomic<int> validated_{0};
};

// ---- helpers -----------------------------------------------------------------------------------

/// A port P such that P and P + 1 are both free now (the fallback listens on P + 1).
int free_pair() {
  for (int i = 0; i < 100; ++i) {
    const int p = free_port();
    if (p >= 65535) continue;
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<std::uint16_t>(p + 1));
    const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    if (ok) return p;
  }
  ADD_FAILURE() << "no two adjacent free ports";
  return 0;
}

/// A socket listening on `port` (all interfaces), as another program holding it would; -1 if
/// the port is taken already (which proves the same).
int hold_port(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 4) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// torchrun's variables for `rank` of `n` on one node, its store at 127.0.0.1:store_port.
Env torchrun_env(int rank, int n, int store_port) {
  return {{"RANK", std::to_string(rank)},       {"WORLD_SIZE", std::to_string(n)},
          {"LOCAL_RANK", std::to_string(rank)}, {"LOCAL_WORLD_SIZE", std::to_string(n)},
          {"MASTER_ADDR", "127.0.0.1"},         {"MASTER_PORT", std::to_string(store_port)},
          {"TORCHELASTIC_RESTART_COUNT", "0"},  {"TORCHELASTIC_USE_AGENT_STORE", "True"}};
}

/// The body every rank runs: an allgather of ranks and a barrier, checked inside the rank.
void gather_ranks(Group& g) {
  const auto all = g.allgather(std::to_string(g.rank()));
  for (int r = 0; r < g.size(); ++r)
    check(all[static_cast<std::size_t>(r)] == std::to_string(r), "allgather");
  g.barrier();
}

/// Ranks `ranks` of an n-rank torchrun job against the store at `store_port`, each running
/// `runs` rendezvous of gather_ranks; each child's stderr goes to `<dir>/rank<r>.err`.
std::vector<std::function<void()>> torchrun_job(int n, std::vector<int> ranks, int store_port,
                                                double timeout, int runs,
                                                const std::filesystem::path& dir) {
  std::vector<std::function<void()>> fns;
  for (int r : ranks)
    fns.push_back([=] {
      const std::string err = (dir / ("rank" + std::to_string(r) + ".err")).string();
      if (!std::freopen(err.c_str(), "w", stderr)) throw std::runtime_error("cannot open " + err);
      ProcessLauncher l(*parse_launch_env(torchrun_env(r, n, store_port)), timeout, "k");
      for (int i = 0; i < runs; ++i) l.run(gather_ranks);
    });
  return fns;
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

int count_lines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

struct TempDir {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("cco-store-" + std::to_string(::getpid()) + "-" +
                                std::to_string(Clock::now().time_since_epoch().count()));
  TempDir() { std::filesystem::create_directories(path); }
  ~TempDir() { std::filesystem::remove_all(path); }
};

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

// ---- the client alone --------------------------------------------------------------------------

TEST(StoreClient, SpeaksTheProtocol) {
  FakeStore store(FakeStore::Mode::Serve);
  auto c = StoreClient::connect("127.0.0.1", store.port(), after(5));
  EXPECT_EQ(store.validated(), 1);
  EXPECT_FALSE(c->check({"a"}, after(5)));
  c->set("a", "hello", after(5));
  EXPECT_TRUE(c->check({"a"}, after(5)));
  EXPECT_EQ(c->get("a", 100, after(5)).value_or("?"), "hello");
  EXPECT_EQ(c->add("n", 5, after(5)), 5);
  EXPECT_EQ(c->add("n", -2, after(5)), 3);
  EXPECT_EQ(store.data().at("/a"), "hello");  // keys go out as "/" + key, like PyTorch's client
  EXPECT_EQ(store.data().at("/n"), "3");

  // A second client's SET wakes a pending WAIT.
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    StoreClient::connect("127.0.0.1", store.port(), after(5))->set("b", "x", after(5));
  });
  EXPECT_TRUE(c->wait({"a", "b"}, after(5)));
  later.join();

  // A wait that times out returns false and closes the connection.
  const auto t0 = Clock::now();
  EXPECT_FALSE(c->wait({"never"}, after(0.3)));
  EXPECT_LT(since(t0), 1.0);
  EXPECT_THROW(c->check({"a"}, after(1)), StoreError);
  auto d = StoreClient::connect("127.0.0.1", store.port(), after(5));
  EXPECT_FALSE(d->get("never", 100, after(0.3)).has_value());
}

TEST(StoreClient, RefusesWhatIsNotATcpStore) {
  const auto refused = [](int port, double limit, const std::string& part) {
    const auto t0 = Clock::now();
    try {
      StoreClient::connect("127.0.0.1", port, after(limit));
      ADD_FAILURE() << "connected to " << port;
    } catch (const StoreError& e) {
      EXPECT_TRUE(has(e.what(), part)) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
    EXPECT_LT(since(t0), limit + 1.0);
  };
  {
    FakeStore closes(FakeStore::Mode::CloseOnValidate);
    refused(closes.port(), 0.5, "connection was closed after VALIDATE and PING");
  }
  {
    FakeStore silent(FakeStore::Mode::Silent);
    refused(silent.port(), 0.5, "no answer to VALIDATE and PING");
  }
  {
    FakeStore wrong(FakeStore::Mode::WrongEcho);
    refused(wrong.port(), 5, "not a c10d TCPStore");
  }
  refused(free_port(), 0.5, "Connection refused");
}

TEST(StoreClient, RefusesMalformedLengths) {
  FakeStore store(FakeStore::Mode::HugeValue);
  auto c = StoreClient::connect("127.0.0.1", store.port(), after(5));
  c->set("k", "v", after(5));
  const auto t0 = Clock::now();
  try {
    c->get("k", 1024, after(5));
    ADD_FAILURE() << "accepted a 2^40-byte value";
  } catch (const StoreError& e) {
    EXPECT_TRUE(
        has(e.what(), "sent a value of 1099511627776 bytes for 'k' (at most 1024 expected)"))
        << e.what();
  }
  EXPECT_LT(since(t0), 1.0);
  EXPECT_THROW(c->check({"k"}, after(1)), StoreError);  // the connection is closed now
}

// ---- rendezvous through the store --------------------------------------------------------------

// A second run in the same torchrun job (bash -c 'cco bench ...; cco bench ...'): new processes,
// whose own count of rendezvous starts at 0 again, must not read the first run's address (its
// rank 0 is gone): the job-wide arrivals counter gives the second run the next key.
TEST(StoreRendezvous, ASecondRunInTheSameJobGetsTheNextKey) {
  FakeStore store(FakeStore::Mode::Serve);
  TempDir dir;
  for (int run = 0; run < 2; ++run) {
    const auto out = in_processes(torchrun_job(2, {0, 1}, store.port(), 10, 1, dir.path));
    expect_all(out, "ok", "", 10);
  }
  const auto kv = store.data();
  EXPECT_TRUE(kv.count("/cco/rendezvous/0/0"));
  EXPECT_TRUE(kv.count("/cco/rendezvous/0/1")) << "the second run reused the first one's key";
  EXPECT_EQ(kv.at("/cco/rendezvous/0/arrivals"), "4");
}

TEST(StoreRendezvous, MeetsOnAFreePortNotMasterPortPlusOne) {
  FakeStore store(FakeStore::Mode::Serve);
  const int held = hold_port(store.port() + 1);  // the collision of the issue
  TempDir dir;
  const auto out = in_processes(torchrun_job(4, {0, 1, 2, 3}, store.port(), 10, 2, dir.path));
  if (held >= 0) ::close(held);
  expect_all(out, "ok", "", 10);
  // Both rendezvous went through the store, each under its own key, on kernel-picked ports; the
  // arrivals counter numbered them (4 ranks x 2 rendezvous).
  const auto kv = store.data();
  ASSERT_EQ(kv.size(), 3u);
  EXPECT_EQ(kv.at("/cco/rendezvous/0/arrivals"), "8");
  for (const char* key : {"/cco/rendezvous/0/0", "/cco/rendezvous/0/1"}) {
    ASSERT_TRUE(kv.count(key)) << key;
    const std::string& v = kv.at(key);
    ASSERT_EQ(v.rfind("127.0.0.1:", 0), 0u) << v;  // every rank on this node: loopback
    const int port = std::stoi(v.substr(10));
    EXPECT_NE(port, store.port() + 1) << v;
    EXPECT_NE(port, store.port()) << v;
  }
  for (int r = 0; r < 4; ++r) {
    const auto err = slurp(dir.path / ("rank" + std::to_string(r) + ".err"));
    EXPECT_EQ(err, "") << "rank " << r;  // no warning on the store path
  }
}

TEST(StoreRendezvous, AStoreThatRefusesValidationFallsBackToMasterPortPlusOne) {
  const int p = free_pair();
  FakeStore store(FakeStore::Mode::CloseOnValidate, p);
  TempDir dir;
  const double timeout = 3;
  const auto out = in_processes(torchrun_job(3, {0, 1, 2}, p, timeout, 2, dir.path));
  expect_all(out, "ok", "", 2 * timeout + 1);
  for (int r = 0; r < 3; ++r) {
    const auto err = slurp(dir.path / ("rank" + std::to_string(r) + ".err"));
    EXPECT_EQ(count_lines(err), 1) << err;  // one warning, not one per rendezvous
    EXPECT_TRUE(has(err, "cco bootstrap: warning: rank " + std::to_string(r) +
                             ": cannot use torchrun's store (no c10d TCPStore answers at "
                             "127.0.0.1:" +
                             std::to_string(p)))
        << err;
    EXPECT_TRUE(has(err, "falling back to port " + std::to_string(p + 1) + " (MASTER_PORT + 1)"))
        << err;
    EXPECT_TRUE(has(err, "CCO_MASTER_PORT")) << err;
  }
  EXPECT_TRUE(store.data().empty());
}

// A store whose ADD answers INT64_MIN is no TCPStore counter: (count - 1) would overflow (seen
// under UBSan). Every rank falls back with one warning naming the answer.
TEST(StoreRendezvous, AnImpossibleArrivalsCountFallsBack) {
  const int p = free_pair();
  FakeStore store(FakeStore::Mode::MinAdd, p);
  TempDir dir;
  const double timeout = 3;
  const auto out = in_processes(torchrun_job(2, {0, 1}, p, timeout, 1, dir.path));
  expect_all(out, "ok", "", 2 * timeout + 1);
  for (int r = 0; r < 2; ++r) {
    const auto err = slurp(dir.path / ("rank" + std::to_string(r) + ".err"));
    EXPECT_EQ(count_lines(err), 1) << err;
    EXPECT_TRUE(has(err, "answered the arrivals counter with -9223372036854775808")) << err;
    EXPECT_TRUE(has(err, "falling back to port " + std::to_string(p + 1))) << err;
  }
}

TEST(StoreRendezvous, ASilentOrAbsentStoreFallsBackWithinTheTimeout) {
  const double timeout = 1.5;  // the probe waits min(timeout, 5 s)
  for (const bool silent : {true, false}) {
    const int p = free_pair();
    std::unique_ptr<FakeStore> store;
    if (silent) store = std::make_unique<FakeStore>(FakeStore::Mode::Silent, p);
    TempDir dir;
    const auto out = in_processes(torchrun_job(2, {0, 1}, p, timeout, 1, dir.path));
    expect_all(out, "ok", "", 2 * timeout + 1);
    for (const auto& o : out) EXPECT_GT(o.secs, timeout - 0.2) << o;  // the probe's wait
    const auto err = slurp(dir.path / "rank1.err");
    EXPECT_TRUE(has(err, silent ? "no answer to VALIDATE and PING" : "Connection refused")) << err;
  }
}

TEST(StoreRendezvous, AMalformedLengthFromTheStoreIsRefused) {
  FakeStore store(FakeStore::Mode::HugeValue);
  TempDir dir;
  const double timeout = 2;
  const auto out = in_processes(torchrun_job(3, {0, 1, 2}, store.port(), timeout, 1, dir.path));
  ASSERT_EQ(out.size(), 3u);
  for (int r : {1, 2}) {
    EXPECT_EQ(out[r].kind, "Aborted") << out[r];
    EXPECT_TRUE(has(out[r].what, "rank " + std::to_string(r) +
                                     " cannot read rank 0's address from torchrun's store"))
        << out[r];
    EXPECT_TRUE(has(out[r].what, "sent a value of 1099511627776 bytes")) << out[r];
    EXPECT_TRUE(has(out[r].what, "CCO_MASTER_PORT")) << out[r];
    EXPECT_LT(out[r].secs, 1.0) << out[r];  // at once
  }
  EXPECT_EQ(out[0].kind, "Aborted") << out[0];
  EXPECT_TRUE(has(out[0].what, "ranks 1, 2 did not arrive within 2 s")) << out[0];
  EXPECT_LT(out[0].secs, timeout + 1.5) << out[0];
}

TEST(StoreRendezvous, RankZeroThatNeverPublishesTimesOut) {
  FakeStore store(FakeStore::Mode::Serve);
  TempDir dir;
  const double timeout = 1.5;
  const auto out = in_processes(torchrun_job(3, {1, 2}, store.port(), timeout, 1, dir.path));
  expect_all(out, "Aborted",
             "rank 0 did not publish its address under 'cco/rendezvous/0/0' in torchrun's store "
             "at 127.0.0.1:" +
                 std::to_string(store.port()) + " within 1.5 s",
             timeout + 1.5);
  for (const auto& o : out) EXPECT_GT(o.secs, timeout - 0.2) << o;
}

// ---- under a real torchrun ---------------------------------------------------------------------

// Needs no GPU. Run on a machine with PyTorch (2.4 or later) as, e.g. (one line):
//   CCO_TEST_REAL_TORCHRUN=1 torchrun --standalone --nproc-per-node 2 --no-python
//   <build>/tests/cco.test.bootstrap_store --gtest_filter='RealTorchrun.*'
// Each rank makes two rendezvous through torchrun's own store and checks an allgather of ranks.
TEST(RealTorchrun, RendezvousThroughTheAgentStore) {
  const Env env = current_environment();
  const auto set = [&](const char* k) { return env.count(k) && !env.at(k).empty(); };
  if (!set("CCO_TEST_REAL_TORCHRUN") || env.at("CCO_TEST_REAL_TORCHRUN") != "1")
    GTEST_SKIP() << "set CCO_TEST_REAL_TORCHRUN=1 and run under torchrun to run this test";
  for (const char* k :
       {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_USE_AGENT_STORE"})
    if (!set(k)) GTEST_SKIP() << k << " is not set: not under torchrun (2.4 or later)";
  const auto where = parse_launch_env(env);
  ASSERT_TRUE(where);
  ASSERT_EQ(where->launcher, "torchrun");
  ASSERT_GT(where->store.port, 0) << "TORCHELASTIC_USE_AGENT_STORE="
                                  << env.at("TORCHELASTIC_USE_AGENT_STORE")
                                  << " (CCO_MASTER_PORT or CCO_BOOTSTRAP_FILE set?)";
  // Straight to the store first: the client must be accepted by PyTorch's own server.
  auto store = StoreClient::connect(where->store.addr, where->store.port, after(10));
  store.reset();
  ProcessLauncher l(*where, 60, "real torchrun");
  for (int i = 0; i < 2; ++i)
    l.run([&](Group& g) {
      gather_ranks(g);
      std::vector<double> v = {1.0};
      g.allreduce(v, Group::Op::Sum);
      check(v[0] == g.size(), "allreduce");
    });
  // Both went through the store (not the MASTER_PORT + 1 fallback): rank 0 published both keys.
  store = StoreClient::connect(where->store.addr, where->store.port, after(10));
  EXPECT_TRUE(store->check({where->store.key + "0", where->store.key + "1"}, after(10)))
      << "rank 0's addresses are not in the store: did the ranks fall back (see the warning)?";
  std::printf("rank %d of %d: two rendezvous through torchrun's store at %s:%d\n", where->rank,
              where->world_size, where->store.addr.c_str(), where->store.port);
}
