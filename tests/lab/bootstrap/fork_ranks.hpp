// Test helpers shared by the process-bootstrap tests: run ranks as forked child processes and
// collect how each one's run() ended. Header-only, for the test executables.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.hpp"

namespace cco::boot::testing {

using Clock = std::chrono::steady_clock;

/// How one rank's run() ended.
struct Outcome {
  std::string kind;  // "ok", "Aborted", "ConfigError", "other", "died", "hung"
  std::string what;
  double secs = 0;  // from the child's start to the end of run()
};

inline std::ostream& operator<<(std::ostream& o, const Outcome& x) {
  return o << x.kind << " after " << x.secs << " s: " << x.what;
}

inline double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// A port nothing listens on right now (bind port 0, read it back, close).
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t n = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  ::close(fd);
  return ntohs(a.sin_port);
}

/// Runs each function in its own child process and collects how each ended. A child that has not
/// reported within `limit_s` is killed and reported "hung" (the test then fails on it).
inline std::vector<Outcome> in_processes(const std::vector<std::function<void()>>& fns,
                                         double limit_s = 20) {
  std::fflush(nullptr);
  std::vector<pid_t> pids;
  std::vector<int> reads;
  for (const auto& fn : fns) {
    int p[2];
    EXPECT_EQ(::pipe(p), 0);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(p[0]);
      const auto t0 = Clock::now();
      std::string kind = "ok", what;
      try {
        fn();
      } catch (const Aborted& e) {
        kind = "Aborted", what = e.what();
      } catch (const ConfigError& e) {
        kind = "ConfigError", what = e.what();
      } catch (const std::exception& e) {
        kind = "other", what = e.what();
      }
      const std::string msg = kind + "\n" + std::to_string(since(t0)) + "\n" + what;
      [[maybe_unused]] auto n = ::write(p[1], msg.data(), msg.size());
      ::_exit(0);
    }
    ::close(p[1]);
    pids.push_back(pid);
    reads.push_back(p[0]);
  }
  std::vector<Outcome> out(fns.size());
  std::vector<std::string> got(fns.size());
  std::vector<bool> done(fns.size(), false);
  const auto t0 = Clock::now();
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::size_t> idx;
    for (std::size_t i = 0; i < fns.size(); ++i)
      if (!done[i]) fds.push_back({reads[i], POLLIN, 0}), idx.push_back(i);
    if (fds.empty()) break;
    const int left = static_cast<int>((limit_s - since(t0)) * 1000);
    if (left <= 0) break;
    if (::poll(fds.data(), fds.size(), left) <= 0) continue;
    for (std::size_t j = 0; j < fds.size(); ++j) {
      if (!fds[j].revents) continue;
      char buf[4096];
      const auto n = ::read(fds[j].fd, buf, sizeof buf);
      if (n > 0)
        got[idx[j]].append(buf, static_cast<std::size_t>(n));
      else
        done[idx[j]] = true;
    }
  }
  for (std::size_t i = 0; i < fns.size(); ++i) {
    if (!done[i]) {
      ::kill(pids[i], SIGKILL);
      out[i].kind = "hung";
    } else if (got[i].empty()) {
      out[i].kind = "died";
    } else {
      const auto a = got[i].find('\n'), b = got[i].find('\n', a + 1);
      out[i].kind = got[i].substr(0, a);
      out[i].secs = std::stod(got[i].substr(a + 1, b - a - 1));
      out[i].what = got[i].substr(b + 1);
    }
    if (std::getenv("CCO_TEST_VERBOSE"))
      std::fprintf(stderr, "  rank %zu: %s %.3f s: %s\n", i, out[i].kind.c_str(), out[i].secs,
                   out[i].what.c_str());
    ::close(reads[i]);
    int status = 0;
    ::waitpid(pids[i], &status, 0);
  }
  return out;
}

inline void expect_all(const std::vector<Outcome>& out, const std::string& kind,
                       const std::string& part, double max_secs) {
  for (std::size_t r = 0; r < out.size(); ++r) {
    EXPECT_EQ(out[r].kind, kind) << "rank " << r << ": " << out[r];
    EXPECT_NE(out[r].what.find(part), std::string::npos) << "rank " << r << ": " << out[r];
    EXPECT_EQ(out[r].what.find('\n'), std::string::npos) << "rank " << r << ": " << out[r];
    EXPECT_LT(out[r].secs, max_secs) << "rank " << r << ": " << out[r];
  }
}

inline void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("wrong result: " + what);
}

}  // namespace cco::boot::testing
