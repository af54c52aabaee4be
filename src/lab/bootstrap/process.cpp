// Process bootstrap over TCP: a star through rank 0. Rank 0 gathers every rank's message for an
// exchange, checks that all ranks made the same call, computes the answer and sends it back.
// Every wait is bounded by the timeout, and any failure is turned into one Abort message that rank
// 0 forwards to everyone, so no rank is left waiting.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <limits>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/detail.hpp"
#include "bootstrap/hello.hpp"
#include "bootstrap/tcpstore.hpp"
#include "model/env_names.hpp"
#include "model/read_file.hpp"

namespace cco::boot {
namespace {

using namespace detail;

enum class OpCode : std::uint8_t { Barrier = 1, Broadcast, Allreduce, Allgather, Finish };
enum class FailKind : std::uint8_t { Aborted = 0, Config = 1 };


const char* op_name(std::uint8_t op) {
  if (op == 0) return "the rendezvous";
  switch (static_cast<OpCode>(op)) {
    case OpCode::Barrier:
      return "barrier";
    case OpCode::Broadcast:
      return "broadcast";
    case OpCode::Allreduce:
      return "allreduce";
    case OpCode::Allgather:
      return "allgather";
    case OpCode::Finish:
      return "the end of the run";
  }
  return "an unknown call";
}

std::string secs(double t) {
  std::ostringstream o;
  o << t << " s";
  return o.str();
}

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\r', ' ');
  return s;
}

std::string short_key(const std::string& k) {
  if (k.empty()) return "(empty)";
  return "'" + (k.size() > 24 ? k.substr(0, 24) + "..." : k) + "'";
}

std::string rank_list(const std::vector<int>& rs) {
  std::string s = rs.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < rs.size() && i < 8; ++i) s += (i ? ", " : "") + std::to_string(rs[i]);
  if (rs.size() > 8) s += ", ... (" + std::to_string(rs.size()) + " in all)";
  return s;
}

/// Set (with the reason) once the store did not answer as a TCPStore: later rendezvous of this
/// process take the MASTER_PORT + 1 path at once, without a second warning.
std::mutex g_store_mutex;
std::string g_store_unusable;
/// How long a rank tries to reach the store (connect, VALIDATE, PING) before falling back.
constexpr double kStoreProbeS = 5.0;
/// Longest "host:port" value accepted from the store.
constexpr std::size_t kMaxAddressValue = 1024;

/// "host:port" -> host and port; false (with `why`) for anything else.
bool parse_host_port(const std::string& line, std::string& host, int& port, std::string& why) {
  const auto colon = line.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= line.size() ||
      line.find_first_not_of("0123456789", colon + 1) != std::string::npos ||
      line.size() - colon > 6) {
    why = "'" + (line.size() > 80 ? line.substr(0, 80) + "..." : line) + "', not host:port";
    return false;
  }
  const int p = std::stoi(line.substr(colon + 1));
  if (p < 1 || p > 65535) {
    why = "'" + line + "', a port out of range";
    return false;
  }
  host = line.substr(0, colon);
  port = p;
  return true;
}

[[noreturn]] void raise(FailKind k, const std::string& msg) {
  if (k == FailKind::Config) throw ConfigError(msg);
  throw Aborted(msg);
}

std::string abort_body(FailKind k, const std::string& msg) {
  Writer w;
  w.u8(static_cast<std::uint8_t>(k));
  w.str(one_line(msg));
  return w.s;
}

std::pair<FailKind, std::string> read_abort(const std::string& body) {
  Reader r{body};
  const auto k = r.u8();
  auto msg = r.str();
  if (!r.ok) return {FailKind::Aborted, "another rank aborted (garbled reason)"};
  return {k == 1 ? FailKind::Config : FailKind::Aborted, msg};
}

/// One rank's end of the star. Rank 0 holds a link to every other rank; the others hold one link
/// to rank 0.
class TcpGroup final : public Group {
 public:
  TcpGroup(const LaunchEnv& w, double timeout, std::string key)
      : w_(w),
        n_(w.world_size),
        timeout_(timeout),
        grace_(std::min(1.0, 0.5 * timeout)),
        key_(std::move(key)) {
    if (w_.rank == 0) peers_.resize(static_cast<std::size_t>(n_));
  }

  int rank() const override { return w_.rank; }
  int size() const override { return n_; }
  int device() const override { return w_.local_rank; }

  void connect() {
    if (n_ == 1) return;
    if (w_.store.port > 0) open_store();
    if (w_.rank == 0)
      accept_all();
    else
      join();
  }

  void barrier() override { exchange(OpCode::Barrier, {}); }

  void broadcast(void* data, std::size_t bytes, int root) override {
    if (root < 0 || root >= n_) throw std::invalid_argument("broadcast root out of range");
    if (bytes > kMaxPayload - 64) throw std::invalid_argument("broadcast of more than 1 GiB");
    Writer w;
    w.u64(bytes);
    w.i64(root);
    if (w_.rank == root) w.raw(data, bytes);
    std::string out =
        exchange(OpCode::Broadcast, std::move(w.s), [&](const std::vector<std::string>& all) {
          std::string payload;
          for (int r = 0; r < n_; ++r) {
            Reader rd{all[static_cast<std::size_t>(r)]};
            const auto b = rd.u64();
            const auto ro = rd.i64();
            if (!rd.ok || b != bytes || ro != root)
              fail(FailKind::Aborted,
                   "broadcast sizes or roots differ between ranks: rank 0 sends " +
                       std::to_string(bytes) + " bytes from rank " + std::to_string(root) +
                       ", rank " + std::to_string(r) + " " + std::to_string(b) +
                       " bytes from rank " + std::to_string(ro));
            if (r == root) payload = std::string(rd.raw(bytes));
            if (!rd.ok)
              fail(FailKind::Aborted, "rank " + std::to_string(r) + " sent a short broadcast");
          }
          return payload;
        });
    if (out.size() != bytes) fail(FailKind::Aborted, "broadcast sizes differ between ranks");
    if (w_.rank != root && bytes) std::memcpy(data, out.data(), bytes);
  }

  void allreduce(std::vector<double>& v, Op op) override {
    Writer w;
    w.u8(static_cast<std::uint8_t>(op));
    w.u64(v.size());
    w.raw(v.data(), v.size() * sizeof(double));
    const std::size_t n = v.size();
    std::string out =
        exchange(OpCode::Allreduce, std::move(w.s), [&](const std::vector<std::string>& all) {
          std::vector<double> acc(n), x(n);
          for (int r = 0; r < n_; ++r) {
            Reader rd{all[static_cast<std::size_t>(r)]};
            const auto o = rd.u8();
            const auto len = rd.u64();
            if (rd.ok && len != n)
              fail(FailKind::Aborted, "allreduce lengths differ between ranks");
            if (rd.ok && o != static_cast<std::uint8_t>(op))
              fail(FailKind::Aborted, "allreduce ops differ between ranks");
            const auto raw = rd.raw(n * sizeof(double));
            if (!rd.ok)
              fail(FailKind::Aborted, "rank " + std::to_string(r) + " sent a short allreduce");
            if (n) std::memcpy(x.data(), raw.data(), raw.size());
            for (std::size_t i = 0; i < n; ++i)
              acc[i] = r == 0          ? x[i]
                       : op == Op::Max ? std::max(acc[i], x[i])
                       : op == Op::Min ? std::min(acc[i], x[i])
                                       : acc[i] + x[i];
          }
          return std::string(reinterpret_cast<const char*>(acc.data()), n * sizeof(double));
        });
    if (out.size() != n * sizeof(double))
      fail(FailKind::Aborted, "allreduce lengths differ between ranks");
    if (n) std::memcpy(v.data(), out.data(), out.size());
  }

  std::vector<std::string> allgather(const std::string& s) override {
    std::string out = exchange(OpCode::Allgather, s, [&](const std::vector<std::string>& all) {
      Writer w;
      for (const auto& a : all) w.str(a);
      return w.s;
    });
    Reader rd{out};
    std::vector<std::string> res;
    for (int r = 0; r < n_; ++r) res.push_back(rd.str());
    if (!rd.ok || rd.pos != out.size())
      fail(FailKind::Aborted, "garbled allgather answer from rank 0");
    return res;
  }

  /// After `body` returned: all ranks confirm they succeeded, or all learn who did not.
  void finish_ok() {
    check_alive();
    exchange(OpCode::Finish, {});
    close_all(after(std::min(timeout_, 2.0)));
  }

  /// After `body` threw: tell the others (unless this rank is failing because of them). Never
  /// throws.
  void finish_failed(const std::string& what) noexcept {
    try {
      if (!aborted_) {
        aborted_ = true;
        tell_others(FailKind::Aborted,
                    "another rank failed: rank " + std::to_string(w_.rank) + ": " + what);
      }
      close_all(after(std::min(timeout_, 1.0)));
    } catch (...) {
    }
  }

  bool aborted() const { return aborted_; }
  [[noreturn]] void rethrow_abort() const { raise(abort_kind_, abort_msg_); }

 private:
  // ---- failure ---------------------------------------------------------------------------------

  void check_alive() const {
    if (aborted_) rethrow_abort();
  }

  void tell_others(FailKind k, const std::string& msg) {
    const auto body = abort_body(k, msg);
    const auto d = after(std::min(timeout_, 1.0));
    if (up_) up_->send(Kind::Abort, 0, body, d);
    for (auto& p : peers_)
      if (p) p->send(Kind::Abort, 0, body, d);
  }

  void close_all(Deadline d) {
    if (up_) up_->shutdown_and_drain(d);
    for (auto& p : peers_)
      if (p && p->fd() >= 0) ::shutdown(p->fd(), SHUT_WR);
    for (auto& p : peers_)
      if (p) p->shutdown_and_drain(d);
  }

  /// This rank found a failure: tell the others (rank 0 tells all, the rest tell rank 0, which
  /// forwards it), close, throw.
  [[noreturn]] void fail(FailKind k, std::string msg) {
    msg = one_line(std::move(msg));
    if (!aborted_) {
      aborted_ = true;
      abort_kind_ = k;
      abort_msg_ = msg;
      tell_others(k, msg);
      close_all(after(std::min(timeout_, 1.0)));
    }
    rethrow_abort();
  }

  // ---- exchanges -------------------------------------------------------------------------------

  using Combine = std::function<std::string(const std::vector<std::string>&)>;

  /// One collective step: every rank contributes `mine`; rank 0 combines all contributions (in
  /// rank order) into the answer every rank gets back.
  std::string exchange(OpCode op, std::string mine, const Combine& combine = {}) {
    check_alive();
    const auto o = static_cast<std::uint8_t>(op);
    const Kind k = op == OpCode::Finish ? Kind::Done : Kind::Op;
    if (w_.rank != 0) return ask(k, o, mine);
    auto all = gather(k, o, std::move(mine));
    std::string answer = combine ? combine(all) : std::string{};
    const auto d = after(timeout_);
    const Kind reply = op == OpCode::Finish ? Kind::Finish : Kind::Reply;
    for (int r = 1; r < n_; ++r)
      if (peers_[static_cast<std::size_t>(r)]->send(reply, o, answer, d) != Link::Io::Ok)
        lost(r, o);
    return answer;
  }

  [[noreturn]] void lost(int r, std::uint8_t op) {
    auto& p = *peers_[static_cast<std::size_t>(r)];
    fail(FailKind::Aborted,
         "rank " + std::to_string(r) + " lost its connection during " + op_name(op) +
             " (process died?): " + (p.error().empty() ? "timed out sending" : p.error()));
  }

  /// Rank 0: one message from every other rank for call `op`, waiting at most the timeout.
  std::vector<std::string> gather(Kind k, std::uint8_t op, std::string mine) {
    std::vector<std::string> all(static_cast<std::size_t>(n_));
    std::vector<char> have(static_cast<std::size_t>(n_), 0);
    all[0] = std::move(mine);
    have[0] = 1;
    int missing = n_ - 1;
    const auto take = [&](int r) {
      auto& p = *peers_[static_cast<std::size_t>(r)];
      auto f = p.pop();
      if (!f) {
        if (p.closed()) lost(r, op);
        return;
      }
      if (f->kind == Kind::Abort) {
        auto [kind, msg] = read_abort(f->body);
        fail(kind, msg);
      }
      if (f->kind != k || f->op != op) {
        const std::string theirs = f->kind == Kind::Done ? "at the end of its run"
                                   : f->kind == Kind::Op ? std::string("in ") + op_name(f->op)
                                                         : "sending an unexpected message";
        const std::string ours =
            k == Kind::Done ? "at the end of its run" : std::string("in ") + op_name(op);
        fail(FailKind::Aborted, "ranks made different group calls: rank 0 is " + ours + ", rank " +
                                    std::to_string(r) + " " + theirs);
      }
      all[static_cast<std::size_t>(r)] = std::move(f->body);
      have[static_cast<std::size_t>(r)] = 1;
      --missing;
    };
    const auto d = after(timeout_);
    std::vector<pollfd> fds;
    std::vector<int> who;
    while (missing > 0) {
      for (int r = 1; r < n_; ++r)
        if (!have[static_cast<std::size_t>(r)]) take(r);
      if (missing == 0) break;
      fds.clear();
      who.clear();
      for (int r = 1; r < n_; ++r)
        if (!have[static_cast<std::size_t>(r)]) {
          fds.push_back({peers_[static_cast<std::size_t>(r)]->fd(), POLLIN, 0});
          who.push_back(r);
        }
      const int ms = ms_left(d);
      if (ms == 0) {
        fail(FailKind::Aborted, rank_list(who) + " did not reach " + op_name(op) + " within " +
                                    secs(timeout_) + " (rank 0 waited; CCO_BOOTSTRAP_TIMEOUT)");
      }
      const int rc = ::poll(fds.data(), fds.size(), ms);
      if (rc <= 0) continue;
      for (std::size_t i = 0; i < fds.size(); ++i)
        if (fds[i].revents) peers_[static_cast<std::size_t>(who[i])]->fill();
    }
    return all;
  }

  /// Ranks other than 0: send this rank's part, wait for rank 0's answer.
  std::string ask(Kind k, std::uint8_t op, const std::string& mine) {
    const auto sent = up_->send(k, op, mine, after(timeout_ + grace_));
    if (sent != Link::Io::Ok) {
      take_pending_abort();
      if (sent == Link::Io::Timeout)
        fail(FailKind::Aborted, "rank 0 did not take rank " + std::to_string(w_.rank) + "'s " +
                                    op_name(op) + " within " + secs(timeout_));
      fail(FailKind::Aborted, std::string("lost the connection to rank 0 during ") + op_name(op) +
                                  " (rank 0 died?): " + up_->error());
    }
    Frame f;
    switch (up_->recv(f, after(timeout_ + grace_))) {
      case Link::Io::Ok:
        break;
      case Link::Io::Closed:
        fail(FailKind::Aborted, std::string("lost the connection to rank 0 during ") + op_name(op) +
                                    " (rank 0 died?): " + up_->error());
      case Link::Io::Timeout:
        fail(FailKind::Aborted, std::string("rank 0 did not complete ") + op_name(op) + " within " +
                                    secs(timeout_) + " (rank " + std::to_string(w_.rank) +
                                    " waited; CCO_BOOTSTRAP_TIMEOUT)");
    }
    if (f.kind == Kind::Abort) received(f);
    const Kind want = k == Kind::Done ? Kind::Finish : Kind::Reply;
    if (f.kind != want || f.op != op) fail(FailKind::Aborted, "unexpected message from rank 0");
    return std::move(f.body);
  }

  /// An Abort from rank 0: the group is over; nothing to tell back.
  [[noreturn]] void received(const Frame& f) {
    auto [kind, msg] = read_abort(f.body);
    aborted_ = true;
    abort_kind_ = kind;
    abort_msg_ = one_line(msg);
    close_all(after(std::min(timeout_, 1.0)));
    rethrow_abort();
  }

  void take_pending_abort() {
    up_->fill();
    while (auto f = up_->pop())
      if (f->kind == Kind::Abort) received(*f);
  }

  // ---- rendezvous ------------------------------------------------------------------------------

  std::string hello() const {
    Hello h;
    h.rank = w_.rank;
    h.world = n_;
    h.local_rank = w_.local_rank;
    h.host = this_host();
    h.key = key_;
    h.secret = w_.secret;
    return write_hello(h);
  }

  /// Rank 0: listen, publish the address if asked, take every other rank's hello and check it.
  /// About 130 lines, on purpose: one poll loop over the listening socket and every half-read
  /// hello, whose deadline, refusals and messages share the loop's state.
  void accept_all() {
    struct Fd {
      int fd;
      ~Fd() {
        if (fd >= 0) ::close(fd);
      }
    } lfd{listen_on(via_store_ ? 0 : w_.master_port, std::max(n_, 128), advertised())};
    const int port = local_port(lfd.fd);
    const bool file = !w_.rendezvous_file.empty();
    if (file) publish(port);
    if (via_store_) publish_in_store(port);
    struct Unlink {
      const std::string* path;
      ~Unlink() {
        if (path) ::unlink(path->c_str());
      }
    } unlink_file{file ? &w_.rendezvous_file : nullptr};

    const auto d = after(timeout_);
    std::vector<std::unique_ptr<Link>> pending, told;
    std::vector<char> arrived(static_cast<std::size_t>(n_), 0);
    std::vector<std::string> hosts(static_cast<std::size_t>(n_));
    hosts[0] = this_host();
    arrived[0] = 1;
    int count = 1;   // distinct ranks arrived, rank 0 included
    int hellos = 0;  // hellos from other ranks, also those refused
    int wrong_secret = 0;  // hellos dropped for their CCO_JOB_SECRET
    std::optional<std::pair<FailKind, std::string>> failure;

    const auto refuse = [&](std::unique_ptr<Link> l) {
      l->send(Kind::Abort, 0, abort_body(failure->first, failure->second),
              after(std::min(timeout_, 1.0)));
      told.push_back(std::move(l));
    };
    const auto problem = [&](FailKind k, std::string msg) {
      if (failure) return;
      failure.emplace(k, one_line(std::move(msg)));
      for (auto& p : peers_)
        if (p) refuse(std::move(p));
    };
    const auto consider = [&](std::unique_ptr<Link>& l) {
      // Returns with `l` moved away once its hello has been dealt with.
      auto f = l->pop();
      if (!f) {
        if (l->closed()) l.reset();
        return;
      }
      const std::optional<Hello> h = f->kind == Kind::Hello ? read_hello(f->body) : std::nullopt;
      if (!h) {
        l.reset();  // not one of ours: a stray client
        return;
      }
      // A hello the job secret does not let in is not the job's failure (anyone who reaches the
      // port could cause that): the connection is told why, without waiting for it, and closed;
      // the count goes into a timeout's line.
      if (const std::string why = secret_refusal(*h, w_.secret); !why.empty()) {
        ++wrong_secret;
        l->send(Kind::Abort, 0,
                abort_body(FailKind::Config, std::string("rank 0 refused this hello: its ") +
                                                 cco::env::kJobSecret + why +
                                                 " (give every rank of the job the same value)"),
                after(0));
        l.reset();
        return;
      }
      const std::int64_t rank = h->rank, world = h->world;
      const std::string& host = h->host;
      ++hellos;
      const std::string who = "rank " + std::to_string(rank) + " (" + host + ")";
      if (h->version != kHelloVersion)
        problem(FailKind::Config,
                who + " runs a different ccoverlap bootstrap version than rank 0");
      else if (world != n_)
        problem(FailKind::Config, "ranks disagree about the world size: rank 0 has " +
                                      std::to_string(n_) + ", " + who + " has " +
                                      std::to_string(world));
      else if (rank < 1 || rank >= n_)
        problem(FailKind::Config, who + " is outside the world size " + std::to_string(n_));
      else if (arrived[static_cast<std::size_t>(rank)])
        problem(FailKind::Config, "two processes claim rank " + std::to_string(rank) + " (on " +
                                      hosts[static_cast<std::size_t>(rank)] + " and " + host + ")");
      else if (h->key != key_)
        problem(FailKind::Config, "ranks disagree about the workload: " + who + " has job key " +
                                      short_key(h->key) + ", rank 0 has " + short_key(key_));
      if (rank >= 1 && rank < n_ && !arrived[static_cast<std::size_t>(rank)]) {
        arrived[static_cast<std::size_t>(rank)] = 1;
        hosts[static_cast<std::size_t>(rank)] = host;
        ++count;
      }
      if (failure) {
        refuse(std::move(l));
      } else {
        l->set_limit(std::numeric_limits<std::size_t>::max());  // a rank: its frames as they come
        peers_[static_cast<std::size_t>(rank)] = std::move(l);
      }
    };

    std::vector<pollfd> fds;
    // After a failure, keep going only until every process that may still come has been told.
    while (failure ? hellos < n_ - 1 : count < n_) {
      const int ms = ms_left(d);
      if (ms == 0) break;
      fds.assign(1, pollfd{lfd.fd, POLLIN, 0});
      for (auto& l : pending) fds.push_back({l->fd(), POLLIN, 0});
      if (::poll(fds.data(), fds.size(), ms) <= 0) continue;
      for (std::size_t i = 1; i < fds.size(); ++i)
        if (fds[i].revents) pending[i - 1]->fill();
      std::string peer;
      for (int fd; (fd = accept_one(lfd.fd, peer)) >= 0;) {
        if (pending.size() >= kMaxUnknownPeers) {  // more strangers than ranks could be: dropped
          ::close(fd);
          continue;
        }
        pending.push_back(std::make_unique<Link>(fd, peer));
        pending.back()->set_limit(kHelloLimit);  // nothing more is held before its hello
        pending.back()->fill();
      }
      for (auto& l : pending) consider(l);
      std::erase_if(pending, [](const auto& l) { return !l; });
    }
    ::close(lfd.fd);
    lfd.fd = -1;
    pending.clear();
    if (failure) {
      aborted_ = true;
      abort_kind_ = failure->first;
      abort_msg_ = failure->second;
      for (auto& l : told) l->shutdown_and_drain(after(std::min(timeout_, 1.0)));
      rethrow_abort();
    }
    if (count < n_) {
      std::vector<int> missing;
      for (int r = 1; r < n_; ++r)
        if (!arrived[static_cast<std::size_t>(r)]) missing.push_back(r);
      fail(FailKind::Aborted, rank_list(missing) + " did not arrive within " + secs(timeout_) +
                                  " (rank 0 listened on port " + std::to_string(port) +
                                  "; did they start, and can they reach " + advertised() + "?)" +
                                  (wrong_secret == 0 ? std::string()
                                                     : "; " + std::to_string(wrong_secret) +
                                                           " hello(s) refused for their " +
                                                           cco::env::kJobSecret));
    }
    const auto sd = after(timeout_);
    for (int r = 1; r < n_; ++r)
      if (peers_[static_cast<std::size_t>(r)]->send(Kind::Welcome, 0, {}, sd) != Link::Io::Ok)
        lost(r, 0);
  }

  /// Rank 0 with a rendezvous file: write "host:port" so that readers see all of it or nothing
  /// (model::write_file, the one writer of outputs).
  void publish(int port) const {
    const std::string& path = w_.rendezvous_file;
    try {
      model::write_file(path, advertised() + ":" + std::to_string(port) + "\n");
    } catch (const model::WriteError& e) {
      throw ConfigError(std::string("the rendezvous file: ") + e.what());
    }
  }

  /// Other ranks with a rendezvous file: rank 0's "host:port", if the file is there and whole.
  bool read_published(std::string& host, int& port, std::string& why) const {
    std::ifstream f(w_.rendezvous_file);
    std::string line;
    if (!f || !std::getline(f, line)) {
      why = "rank 0 has not written " + w_.rendezvous_file + " yet";
      return false;
    }
    if (parse_host_port(line, host, port, why)) return true;
    why = w_.rendezvous_file + " holds " + why;
    return false;
  }

  // ---- torchrun's store ------------------------------------------------------------------------

  /// The host rank 0 tells the others: the store's choice (LaunchEnv::AgentStore::advertise),
  /// else CCO_MASTER_ADDR (with a rendezvous file) or MASTER_ADDR, else this host's name.
  std::string advertised() const {
    if (via_store_) return w_.store.advertise.empty() ? this_host() : w_.store.advertise;
    return w_.master_addr.empty() ? this_host() : w_.master_addr;
  }

  /// A connection to the store if it answers as a TCPStore, and this rendezvous's key. If it does
  /// not: one warning line, and the MASTER_PORT + 1 path for this and later rendezvous.
  /// The key is prefix + n, n = the rendezvous's number in the whole torchrun job: every rank ADDs
  /// 1 to prefix + "arrivals" as it arrives, and n = (count - 1) / world size. No rank can start
  /// rendezvous n + 1 before every rank has arrived at n, so the counts of one rendezvous are
  /// exactly its world-size numbers, whatever the processes: a second cco run in the same job
  /// (bash -c 'cco bench ...; cco bench ...') never reads the first one's address.
  void open_store() {
    std::lock_guard<std::mutex> lock(g_store_mutex);
    if (!g_store_unusable.empty()) return;
    try {
      const auto d = after(std::min(timeout_, kStoreProbeS));
      store_ = StoreClient::connect(w_.store.addr, w_.store.port, d);
      const std::int64_t count = store_->add(w_.store.key + "arrivals", 1, d);
      // We just added 1: a count below 1 (INT64_MIN, say) is not a TCPStore's counter, and
      // count - 1 would overflow.
      if (count < 1)
        throw StoreError("the store answered the arrivals counter with " + std::to_string(count) +
                         " after an ADD of 1");
      store_key_ = w_.store.key + std::to_string((count - 1) / std::max(w_.world_size, 1));
      via_store_ = true;
    } catch (const StoreError& e) {
      store_.reset();
      g_store_unusable = one_line(e.what());
      std::fprintf(
          stderr,
          "cco bootstrap: warning: rank %d: cannot use torchrun's store (%s); falling back "
          "to port %d (MASTER_PORT + 1) on %s; set CCO_MASTER_PORT to choose the port\n",
          w_.rank, g_store_unusable.c_str(), w_.master_port,
          w_.rank == 0 ? "this node" : w_.master_addr.c_str());
      std::fflush(stderr);
    }
  }

  /// Rank 0: SET "host:port" under this rendezvous's key, and CHECK that the store holds it.
  void publish_in_store(int port) {
    const auto d = after(timeout_);
    std::string why;
    try {
      store_->set(store_key_, advertised() + ":" + std::to_string(port), d);
      if (!store_->check({store_key_}, d))
        why = "the TCPStore at " + store_->where() + " does not hold '" + store_key_ +
              "' right after SET";
    } catch (const StoreError& e) {
      why = e.what();
    }
    store_.reset();
    if (!why.empty())
      fail(FailKind::Aborted, "rank 0 cannot publish its address in torchrun's store: " + why +
                                  " (CCO_MASTER_PORT bypasses the store)");
  }

  /// Other ranks: WAIT for rank 0's "host:port" under this rendezvous's key, then GET it.
  void fetch_from_store(std::string& host, int& port, Deadline d) {
    const std::string at = store_->where();
    std::optional<std::string> value;
    std::string why;
    try {
      value = store_->get(store_key_, kMaxAddressValue, d);
    } catch (const StoreError& e) {
      why = e.what();
    }
    store_.reset();
    const std::string me = "rank " + std::to_string(w_.rank);
    if (!why.empty())
      fail(FailKind::Aborted, me + " cannot read rank 0's address from torchrun's store: " + why +
                                  " (CCO_MASTER_PORT bypasses the store)");
    if (!value)
      fail(FailKind::Aborted,
           "rank 0 did not publish its address under '" + store_key_ + "' in torchrun's store at " +
               at + " within " + secs(timeout_) + " (" + me +
               " waited; did rank 0 start? a rank that cannot use the store says so and falls "
               "back to MASTER_PORT + 1; CCO_MASTER_PORT bypasses the store)");
    if (!parse_host_port(*value, host, port, why))
      fail(FailKind::Aborted,
           "torchrun's store at " + at + " holds " + why + " under '" + store_key_ + "'");
  }

  /// Ranks other than 0: connect to rank 0 (retrying until the timeout) and be let in.
  void join() {
    const auto d = after(timeout_);
    const bool file = !w_.rendezvous_file.empty();
    std::string host = w_.master_addr, why = "no attempt";
    int port = w_.master_port;
    if (via_store_) fetch_from_store(host, port, d);
    auto pause = std::chrono::milliseconds(10);
    for (;;) {
      int fd = -1;
      if (!file || read_published(host, port, why)) fd = connect_to(host, port, d, why);
      if (fd >= 0) {
        auto l = std::make_unique<Link>(fd, host + ":" + std::to_string(port));
        Frame f;
        auto io = l->send(Kind::Hello, 0, hello(), d);
        if (io == Link::Io::Ok)
          io = l->recv(f, d + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(grace_)));
        if (io == Link::Io::Ok && f.kind == Kind::Welcome) {
          up_ = std::move(l);
          return;
        }
        if (io == Link::Io::Ok && f.kind == Kind::Abort) {
          auto [kind, msg] = read_abort(f.body);
          aborted_ = true;
          abort_kind_ = kind;
          abort_msg_ = one_line(msg);
          l->shutdown_and_drain(after(std::min(timeout_, 1.0)));
          rethrow_abort();
        }
        if (io == Link::Io::Timeout) {
          aborted_ = true;
          abort_kind_ = FailKind::Aborted;
          abort_msg_ = "rank 0 at " + host + ":" + std::to_string(port) +
                       " did not complete the rendezvous within " + secs(timeout_) +
                       " (CCO_BOOTSTRAP_TIMEOUT)";
          rethrow_abort();
        }
        why = "rank 0 closed the connection";
      }
      if (ms_left(d) == 0) {
        std::string where = host + ":" + std::to_string(port);
        if (file)
          where = host.empty() ? w_.rendezvous_file : where + " (from " + w_.rendezvous_file + ")";
        if (via_store_) where += " (from torchrun's store)";
        aborted_ = true;
        abort_kind_ = FailKind::Aborted;
        abort_msg_ = "rank " + std::to_string(w_.rank) + " cannot reach rank 0 at " + where +
                     " within " + secs(timeout_) + ": " + why;
        rethrow_abort();
      }
      std::this_thread::sleep_for(std::min<Clock::duration>(pause, d - Clock::now()));
      pause = std::min(pause * 2, std::chrono::milliseconds(500));
    }
  }

  LaunchEnv w_;
  int n_;
  double timeout_, grace_;
  std::string key_;
  std::vector<std::unique_ptr<Link>> peers_;  // rank 0: one per rank ([0] unused)
  std::unique_ptr<Link> up_;                  // other ranks: the link to rank 0
  std::unique_ptr<StoreClient> store_;        // torchrun's store, during the rendezvous only
  std::string store_key_;                     // this rendezvous's key in it
  bool via_store_ = false;                    // rank 0's address goes through the store
  bool aborted_ = false;
  FailKind abort_kind_ = FailKind::Aborted;
  std::string abort_msg_;
};

}  // namespace

ProcessLauncher::ProcessLauncher(LaunchEnv where, double timeout_s, std::string job_key)
    : where_(std::move(where)), timeout_s_(timeout_s), job_key_(std::move(job_key)) {
  if (where_.world_size < 1 || where_.rank < 0 || where_.rank >= where_.world_size)
    throw std::invalid_argument("process launcher: rank " + std::to_string(where_.rank) + " of " +
                                std::to_string(where_.world_size));
  if (!(timeout_s_ > 0)) throw std::invalid_argument("process launcher: timeout must be positive");
  if (where_.world_size > 1 && where_.rendezvous_file.empty() &&
      (where_.master_addr.empty() || where_.master_port < 1 || where_.master_port > 65535))
    throw std::invalid_argument(
        "process launcher: no master address and port, nor rendezvous file");
}

void ProcessLauncher::run(const std::function<void(Group&)>& body) {
  TcpGroup g(where_, timeout_s_, job_key_);
  g.connect();
  try {
    body(g);
  } catch (const std::exception& e) {
    g.finish_failed(e.what());
    throw;
  } catch (...) {
    g.finish_failed("unknown error");
    throw;
  }
  if (g.aborted()) g.rethrow_abort();  // the body swallowed a group failure
  g.finish_ok();
}

}  // namespace cco::boot
