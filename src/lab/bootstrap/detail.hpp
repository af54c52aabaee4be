// Private to cco.bootstrap: TCP framing for the process bootstrap, and the MPI launcher's maker.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "bootstrap/bootstrap.hpp"

namespace cco::boot::detail {

/// MPI launcher (mpi.cpp); only called in builds with CCO_HAVE_MPI.
std::unique_ptr<Launcher> make_mpi_launcher();

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;
Deadline after(double seconds);
/// Milliseconds left until `d` (0 when passed), capped for poll().
int ms_left(Deadline d);

/// Writes all of `bytes` to the non-blocking socket `fd` (MSG_NOSIGNAL), polling while it is
/// full, until `d`: Ok, Timeout, or Closed with the reason in `*error` (the framed links of
/// process.cpp and the TCPStore client share it).
enum class SendResult { Ok, Closed, Timeout };
SendResult send_bounded(int fd, std::string_view bytes, Deadline d, std::string* error);

/// Message kinds on the wire. A frame is a 16-byte header (magic, kind, op, payload length) and
/// the payload.
/// A frame on the wire: u64 (kMagic | kind << 32 | op << 40), u64 body length, the body.
inline constexpr std::uint32_t kMagic = 0x424f4343;  // "CCOB"
inline constexpr std::size_t kHeader = 16;
enum class Kind : std::uint8_t { Hello = 1, Welcome, Op, Reply, Abort, Done, Finish };
struct Frame {
  Kind kind{};
  std::uint8_t op = 0;
  std::string body;
};
inline constexpr std::size_t kMaxPayload = std::size_t{1} << 30;

/// Little-endian encoding of the few field types the messages carry.
struct Writer {
  std::string s;
  void u8(std::uint8_t v) { s.push_back(static_cast<char>(v)); }
  void u64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void i64(std::int64_t v) { u64(static_cast<std::uint64_t>(v)); }
  void str(std::string_view v) {
    u64(v.size());
    s.append(v);
  }
  void raw(const void* p, std::size_t n) {
    if (n) s.append(static_cast<const char*>(p), n);
  }
};
/// Reads what Writer wrote; `ok` turns false (and stays) on a short or malformed message.
struct Reader {
  std::string_view s;
  std::size_t pos = 0;
  bool ok = true;
  std::uint8_t u8();
  std::uint64_t u64();
  std::int64_t i64() { return static_cast<std::int64_t>(u64()); }
  std::string str();
  std::string_view raw(std::size_t n);
};

/// One TCP connection, non-blocking underneath; every wait is bounded by a deadline.
class Link {
 public:
  enum class Io { Ok, Closed, Timeout };
  explicit Link(int fd, std::string peer);
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;
  ~Link();
  int fd() const { return fd_; }
  const std::string& peer() const { return peer_; }
  /// Why the link closed (errno text, "connection closed", "garbled message").
  const std::string& error() const { return error_; }
  Io send(Kind k, std::uint8_t op, std::string_view body, Deadline d);
  /// The next frame, waiting until `d`.
  Io recv(Frame& f, Deadline d);
  /// Reads what has arrived without waiting; false once the peer has closed (frames already
  /// read stay available to pop()).
  bool fill();
  /// A complete frame already read, if any. A garbled header closes the link.
  std::optional<Frame> pop();
  bool closed() const { return closed_; }
  /// Graceful close: stop sending (FIN), then read and drop until the peer closes or `d`, so
  /// that frames just sent are not lost to a reset.
  void shutdown_and_drain(Deadline d);
  /// At most this many bytes read and not yet popped (default: no limit beyond kMaxPayload per
  /// frame): more, or a frame announced larger, closes the link and drops what it held. Rank 0
  /// holds a peer that has not said hello to kHelloLimit.
  void set_limit(std::size_t bytes) { limit_ = bytes; }

 private:
  int fd_;
  std::size_t limit_ = std::numeric_limits<std::size_t>::max();
  std::string peer_;
  std::string in_;
  bool closed_ = false;
  bool eof_ = false;
  std::string error_;
};

/// What rank 0 holds of a peer before its hello is checked (a hello is a few hundred bytes), and
/// how many such peers at once: an unknown client cannot make it hold more (issue 46: 1 GiB per
/// anonymous connection before).
inline constexpr std::size_t kHelloLimit = 64 * 1024;
inline constexpr std::size_t kMaxUnknownPeers = 256;

/// Listening socket on `host`'s IPv4 address when it is one of this machine's (a loopback
/// address for one host), else on every interface; "" : every interface. ConfigError (one
/// line) if the port is taken. `bound` (may be null): the address bound, as text.
int listen_on(int port, int backlog, const std::string& host = "", std::string* bound = nullptr);
int local_port(int fd);
/// Accepts one pending connection (non-blocking); -1 if none.
int accept_one(int listen_fd, std::string& peer);
/// Resolves `host` (IPv4) and connects, waiting at most until `d`. Returns the fd, or -1 with
/// `why` set for errors worth retrying (refused, unreachable, timed out). ConfigError for a host
/// that does not resolve.
int connect_to(const std::string& host, int port, Deadline d, std::string& why);
std::string this_host();

}  // namespace cco::boot::detail
