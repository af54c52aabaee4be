// Sockets for the process bootstrap: framing, bounded waits, listen/connect with clear errors.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <optional>
#include <cstring>

#include "bootstrap/detail.hpp"

namespace cco::boot::detail {
namespace {

std::string err_text(int e) {
  return std::strerror(e);
}

void set_nonblocking(int fd) {
  const int fl = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}
void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

}  // namespace

Deadline after(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

int ms_left(Deadline d) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(d - Clock::now()).count();
  if (left <= 0) return 0;
  return static_cast<int>(std::min<long long>(left + 1, INT_MAX / 2));
}

std::uint8_t Reader::u8() {
  if (!ok || pos + 1 > s.size()) return ok = false, 0;
  return static_cast<std::uint8_t>(s[pos++]);
}
std::uint64_t Reader::u64() {
  if (!ok || pos + 8 > s.size()) return ok = false, 0;
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t{static_cast<unsigned char>(s[pos + i])} << (8 * i);
  pos += 8;
  return v;
}
std::string_view Reader::raw(std::size_t n) {
  if (!ok || n > s.size() - pos) return ok = false, std::string_view{};
  const auto v = s.substr(pos, n);
  pos += n;
  return v;
}
std::string Reader::str() {
  const auto n = u64();
  return std::string(raw(static_cast<std::size_t>(n)));
}

Link::Link(int fd, std::string peer) : fd_(fd), peer_(std::move(peer)) {
  set_nonblocking(fd_);
  set_nodelay(fd_);
}
Link::~Link() {
  if (fd_ >= 0) ::close(fd_);
}

SendResult send_bounded(int fd, std::string_view bytes, Deadline d, std::string* error) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      const int ms = ms_left(d);
      if (ms == 0) return SendResult::Timeout;
      if (::poll(&p, 1, ms) < 0 && errno != EINTR) {
        *error = err_text(errno);
        return SendResult::Closed;
      }
      continue;
    }
    *error = n < 0 ? err_text(errno) : "connection closed";
    return SendResult::Closed;
  }
  return SendResult::Ok;
}

Link::Io Link::send(Kind k, std::uint8_t op, std::string_view body, Deadline d) {
  if (fd_ < 0) return Io::Closed;
  Writer h;
  h.u64(kMagic | std::uint64_t{static_cast<std::uint8_t>(k)} << 32 | std::uint64_t{op} << 40);
  h.u64(body.size());
  const std::string_view parts[2] = {h.s, body};
  for (auto part : parts) {
    const SendResult r = send_bounded(fd_, part, d, &error_);
    if (r == SendResult::Timeout) return Io::Timeout;
    if (r == SendResult::Closed) {
      closed_ = true;
      return Io::Closed;
    }
  }
  return Io::Ok;
}

bool Link::fill() {
  if (eof_ || fd_ < 0) return false;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n > 0) {
      in_.append(buf, static_cast<std::size_t>(n));
      if (in_.size() > limit_) {  // more than the link may hold: dropped, nothing kept
        error_ = "sent more than " + std::to_string(limit_) + " bytes unread";
        eof_ = closed_ = true;
        in_.clear();
        in_.shrink_to_fit();
        return false;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (error_.empty()) error_ = n == 0 ? "connection closed" : err_text(errno);
    eof_ = closed_ = true;
    return false;
  }
}

std::optional<Frame> Link::pop() {
  if (in_.size() < kHeader) return std::nullopt;
  Reader r{in_};
  const auto w = r.u64();
  const auto len = r.u64();
  const auto kind = static_cast<std::uint8_t>(w >> 32);
  if ((w & 0xffffffffu) != kMagic || kind < 1 || kind > 7 || len > kMaxPayload ||
      len > limit_ - kHeader) {
    error_ = "garbled message";
    eof_ = closed_ = true;
    in_.clear();
    return std::nullopt;
  }
  if (in_.size() < kHeader + len) return std::nullopt;
  Frame f{static_cast<Kind>(kind), static_cast<std::uint8_t>(w >> 40), in_.substr(kHeader, len)};
  in_.erase(0, kHeader + len);
  return f;
}

Link::Io Link::recv(Frame& f, Deadline d) {
  for (;;) {
    if (auto got = pop()) {
      f = std::move(*got);
      return Io::Ok;
    }
    if (eof_) return Io::Closed;
    pollfd p{fd_, POLLIN, 0};
    const int ms = ms_left(d);
    if (ms == 0) return Io::Timeout;
    const int rc = ::poll(&p, 1, ms);
    if (rc < 0 && errno != EINTR) {
      error_ = err_text(errno);
      eof_ = closed_ = true;
      return Io::Closed;
    }
    if (rc > 0) fill();
  }
}

void Link::shutdown_and_drain(Deadline d) {
  if (fd_ < 0) return;
  ::shutdown(fd_, SHUT_WR);
  while (fill()) {
    in_.clear();
    pollfd p{fd_, POLLIN, 0};
    const int ms = ms_left(d);
    if (ms == 0 || ::poll(&p, 1, ms) == 0) break;
  }
  ::close(fd_);
  fd_ = -1;
  eof_ = closed_ = true;
}

namespace {

// The IPv4 address `host` names (its first), or nullopt.
std::optional<in_addr> resolve_v4(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (host.empty() || ::getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || !res) return std::nullopt;
  const in_addr a = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
  ::freeaddrinfo(res);
  return a;
}

// Binds `fd` to addr:port; the errno, or 0.
int bind_to(int fd, in_addr addr, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr = addr;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  return ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 ? 0 : errno;
}

}  // namespace

int listen_on(int port, int backlog, const std::string& host, std::string* bound) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw ConfigError("cannot open a TCP socket: " + err_text(errno));
  int one = 1;
  // Lets a new run reuse the port while the last run's connections sit in TIME_WAIT; a port
  // that another socket holds still fails to bind.
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  // Where the other ranks are told to connect, when that is an address of this machine: a
  // loopback address keeps the port off the network (one host); an interface's address keeps it
  // off the others. An address that is not this machine's (NAT, a name resolved elsewhere):
  // every interface, as before.
  in_addr any{};
  any.s_addr = htonl(INADDR_ANY);
  const std::optional<in_addr> want = resolve_v4(host);
  int e = want ? bind_to(fd, *want, port) : EADDRNOTAVAIL;
  in_addr used = want && e == 0 ? *want : any;
  if (e == EADDRNOTAVAIL) {
    used = any;
    e = bind_to(fd, any, port);
  }
  if (e == 0 && ::listen(fd, backlog) != 0) e = errno;
  if (e != 0) {
    ::close(fd);
    if (e == EADDRINUSE)
      throw ConfigError("rank 0 cannot listen on port " + std::to_string(port) +
                        ": it is already in use on this node (another job?); choose another "
                        "with CCO_MASTER_PORT");
    throw ConfigError("rank 0 cannot listen on port " + std::to_string(port) + ": " + err_text(e));
  }
  if (bound) {
    char ip[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &used, ip, sizeof ip);
    *bound = ip;
  }
  set_nonblocking(fd);
  return fd;
}

int local_port(int fd) {
  sockaddr_in a{};
  socklen_t n = sizeof a;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n) != 0) return 0;
  return ntohs(a.sin_port);
}

int accept_one(int listen_fd, std::string& peer) {
  sockaddr_in a{};
  socklen_t n = sizeof a;
  const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&a), &n, SOCK_CLOEXEC);
  if (fd < 0) return -1;
  char ip[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
  peer = std::string(ip) + ":" + std::to_string(ntohs(a.sin_port));
  return fd;
}

int connect_to(const std::string& host, int port, Deadline d, std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int g = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (g == EAI_AGAIN || (g == EAI_SYSTEM && errno == EINTR)) {
    why = "cannot resolve '" + host + "' yet: " + gai_strerror(g);
    return -1;
  }
  if (g != 0)
    throw ConfigError("cannot resolve rank 0's address '" + host + "': " + gai_strerror(g) +
                      " (check MASTER_ADDR / CCO_MASTER_ADDR)");
  int fd = -1;
  for (addrinfo* ai = res; ai && fd < 0; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) {
      why = err_text(errno);
      continue;
    }
    int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      rc = ::poll(&p, 1, ms_left(d));
      if (rc == 0) {
        why = "connection timed out";
        rc = -1;
      } else if (rc > 0) {
        int e = 0;
        socklen_t n = sizeof e;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &n);
        rc = e == 0 ? 0 : -1;
        if (e) why = err_text(e);
      } else {
        why = err_text(errno);
      }
    } else if (rc != 0) {
      why = err_text(errno);
    }
    if (rc != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(res);
  return fd;
}

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || !name[0]) return "127.0.0.1";
  return name;
}

}  // namespace cco::boot::detail
