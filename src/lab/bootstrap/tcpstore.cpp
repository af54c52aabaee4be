// A client for PyTorch's c10d TCPStore, enough to meet through the store torchrun's elastic agent
// hosts for its workers.
//
// The protocol, as read from PyTorch's sources (pytorch/pytorch, torch/csrc/distributed/c10d/, the
// stored copies of recent main that carry the 2.4+ libuv default and the PING query; line numbers
// are those of the stored copies and move between releases, the names do not):
//
//   - Framing (TCPStore.cpp, class SendBuffer; Utils.hpp, sendString/recvString around lines
//     726-742, sendValue/recvValue around 714-723, SizeType = uint64_t): every request is one byte
//     of query type followed by its fields, with nothing around it (no header, no request length,
//     no rank). A string or byte vector is a 64-bit length followed by the bytes; a number is its
//     raw bytes. All integers are in the host's byte order (memcpy of the value), i.e. little-
//     endian on x86-64 and Arm64. Replies use the same encodings.
//   - Query types (TCPStoreBackend.hpp, enum class QueryType : uint8_t, just after the magic
//     number): VALIDATE 0, SET 1, COMPARE_SET 2, GET 3, ADD 4, CHECK 5, WAIT 6, GETNUMKEYS 7,
//     DELETE_KEY 8, APPEND 9, MULTI_GET 10, MULTI_SET 11, CANCEL_WAIT 12, PING 13, then the queue,
//     list and barrier queries of newer servers (14 and up; not used here). Replies:
//     CheckResponseType READY 0 / NOT_READY 1; WaitResponseType STOP_WAITING 0 / WAIT_CANCELED 1.
//   - Handshake (TCPStore.cpp, TCPStore::TCPStore, validate(), ping()): the client's first query
//     must be VALIDATE followed by the 32-bit magic number 0x3C85F7CE (validationMagicNumber in
//     TCPStoreBackend.hpp); the server sends nothing back. The client then sends PING with a
//     32-bit nonce (its pid) and expects the same 32 bits back. PyTorch retries connect+validate+
//     ping with backoff until its timeout.
//   - The libuv server (TCPStoreLibUvBackend.cpp, the default since 2.4): a new connection is a
//     "miscellaneous" client until its first command (registerClient/isMiscellaneousClient,
//     around lines 1378-1391); that command must be VALIDATE with the right magic
//     (UvClient::processBuf around 750-765, parse_validate_command around 852-862), otherwise it
//     is not served (a later command then hits "invalid command" and the connection is closed).
//     It needs nothing else: no rank, no header, no PING (PING is answered, 864-876, but is only a
//     liveness check). Limits it enforces: keys up to 8 KiB (MAX_STRING_LEN), values up to 8 MiB
//     (MAX_PAYLOAD_LEN), 128 Ki keys per WAIT/CHECK (MAX_KEY_COUNT), lines 39-41. The legacy
//     server (TCPStoreBackend.cpp, validateHandler/pingHandler around 314-328) behaves the same on
//     the wire but closes a connection whose VALIDATE is wrong.
//   - SET key value: no reply. GET key: reply is a length-prefixed value; the libuv server
//     answers an empty value for a missing key (LibUVStoreDaemon::get, around 1450), which is why
//     PyTorch's client always WAITs for the key first (TCPStore::doGet). ADD key i64: reply is the
//     new i64; the value is stored as a decimal string. CHECK u64-count keys...: reply is one
//     byte, READY or NOT_READY. WAIT u64-count keys...: the reply byte STOP_WAITING comes once all
//     keys exist (at once if they do; waitKeys / wakeupWaitingClients around 1487-1540); the
//     server has no timeout of its own. PyTorch's client, when its own timeout passes, sends
//     CANCEL_WAIT and reads WAIT_CANCELED (possibly after a late STOP_WAITING); this client just
//     closes the connection instead, which drops the wait on the server (unregisterClient ->
//     clearClientWaitState).
//   - Keys: PyTorch's TCPStore prefixes every key with "/" (keyPrefix_ in TCPStore.hpp); this
//     client does the same, so Python's `store.get("cco/...")` sees our keys.
//   - Who hosts it under torchrun (torch/distributed/elastic/agent/server/local_elastic_agent.py,
//     _start_workers; rendezvous/static_tcp_rendezvous.py and dynamic_rendezvous.py,
//     use_agent_store; TCPStore.cpp tolerating a failed bind on MASTER_PORT when
//     TORCHELASTIC_USE_AGENT_STORE is set): every worker gets MASTER_ADDR, MASTER_PORT,
//     TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_RUN_ID and TORCHELASTIC_USE_AGENT_STORE =
//     str(use_agent_store), i.e. "True" or "False". When it is "True" the agent's TCPStore is at
//     MASTER_ADDR:MASTER_PORT and outlives the workers (static rendezvous always; the c10d
//     rendezvous unless TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1). When it is "False", MASTER_PORT is
//     only a port that was free on the agent's host, and nothing listens there.
//
// Every read here is bounded: in time by the caller's deadline, in size by the fixed widths above
// and, for values, by the caller's maximum (checked before anything is allocated).
#include "bootstrap/tcpstore.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

namespace cco::boot::detail {
namespace {

enum class Query : std::uint8_t {
  Validate = 0,
  Set = 1,
  Get = 3,
  Add = 4,
  Check = 5,
  Wait = 6,
  Ping = 13
};
constexpr std::uint32_t kValidationMagic = 0x3C85F7CE;
constexpr std::uint8_t kReady = 0, kNotReady = 1, kStopWaiting = 0;

/// A request: the query byte, then fields in the host's byte order.
struct Request {
  std::string s;
  explicit Request(Query q) { s.push_back(static_cast<char>(q)); }
  template <class T>
  Request& value(T v) {
    s.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  Request& bytes(std::string_view v) {
    value<std::uint64_t>(v.size());
    s.append(v);
    return *this;
  }
  Request& key(const std::string& k) { return bytes("/" + k); }
};

std::string shown(const std::string& key) {
  return "'" + (key.size() > 60 ? key.substr(0, 60) + "..." : key) + "'";
}

void check_key(const std::string& k) {
  if (k.size() > kStoreMaxKey)
    throw std::invalid_argument("TCPStore key longer than " + std::to_string(kStoreMaxKey) +
                                " bytes");
}

}  // namespace

StoreClient::StoreClient(int fd, std::string where) : fd_(fd), where_(std::move(where)) {}

StoreClient::~StoreClient() {
  if (fd_ >= 0) ::close(fd_);
}

std::unique_ptr<StoreClient> StoreClient::connect(const std::string& host, int port, Deadline d) {
  const std::string where = host + ":" + std::to_string(port);
  std::string why = "no attempt";
  bool closed_before = false;
  auto pause = std::chrono::milliseconds(10);
  for (;;) {
    std::string attempt;
    const int fd = connect_to(host, port, d, attempt);  // ConfigError: `host` does not resolve
    if (fd < 0 && !closed_before) why = attempt;
    if (fd >= 0) {
      std::unique_ptr<StoreClient> c(new StoreClient(fd, where));
      const auto nonce = static_cast<std::uint32_t>(::getpid()) ^ 0x5a5a0000u;
      Request r(Query::Validate);
      r.value(kValidationMagic);
      r.s += Request(Query::Ping).value(nonce).s;  // one write: VALIDATE, then PING
      std::uint32_t echo = 0;
      Io io = c->send_all(r.s, d);
      if (io == Io::Ok) io = c->read_exact(&echo, sizeof echo, d);
      if (io == Io::Ok) {
        if (echo != nonce)  // something answers, but not as a TCPStore: no point retrying
          c->broken("answered PING with " + std::to_string(echo) + " instead of " +
                    std::to_string(nonce) + ": not a c10d TCPStore");
        return c;
      }
      // Closed: a server that refused VALIDATE, or a full backlog; retried like refused
      // connections until `d`. A last attempt cut short by `d` keeps the earlier reason.
      if (io == Io::Closed)
        why = "the connection was closed after VALIDATE and PING (" + c->error_ + ")";
      else if (!closed_before)
        why = "no answer to VALIDATE and PING";
      closed_before = closed_before || io == Io::Closed;
    }
    if (ms_left(d) == 0) throw StoreError("no c10d TCPStore answers at " + where + ": " + why);
    std::this_thread::sleep_for(std::min<Clock::duration>(pause, d - Clock::now()));
    pause = std::min(pause * 2, std::chrono::milliseconds(500));
  }
}

void StoreClient::set(const std::string& key, std::string_view value, Deadline d) {
  check_key(key);
  if (value.size() > kStoreMaxValue)
    throw std::invalid_argument("TCPStore value longer than 8 MiB");
  check_open("SET " + shown(key));
  Request r(Query::Set);
  r.key(key).bytes(value);
  send_or_throw(r.s, d, "SET " + shown(key));
}

bool StoreClient::wait(const std::vector<std::string>& keys, Deadline d) {
  for (const auto& k : keys) check_key(k);
  const std::string during = "WAIT " + (keys.empty() ? std::string("()") : shown(keys[0]));
  check_open(during);
  Request r(Query::Wait);
  r.value<std::uint64_t>(keys.size());
  for (const auto& k : keys) r.key(k);
  send_or_throw(r.s, d, during);
  std::uint8_t reply = 0xff;
  switch (read_exact(&reply, 1, d)) {
    case Io::Ok:
      break;
    case Io::Timeout:
      ::close(fd_);  // the server forgets the wait of a client that left
      fd_ = -1;
      error_ = "a wait timed out";
      return false;
    case Io::Closed:
      broken("closed the connection during " + during + ": " + error_);
  }
  if (reply != kStopWaiting)
    broken("answered " + during + " with byte " + std::to_string(reply) +
           " instead of STOP_WAITING (0)");
  return true;
}

std::optional<std::string> StoreClient::get(const std::string& key, std::size_t max_bytes,
                                            Deadline d) {
  if (!wait({key}, d)) return std::nullopt;
  const std::string during = "GET " + shown(key);
  Request r(Query::Get);
  r.key(key);
  send_or_throw(r.s, d, during);
  std::uint64_t len = 0;
  read_or_throw(&len, sizeof len, d, during);
  const std::uint64_t most = std::min<std::uint64_t>(max_bytes, kStoreMaxValue);
  if (len > most)
    broken("sent a value of " + std::to_string(len) + " bytes for " + shown(key) + " (at most " +
           std::to_string(most) + " expected)");
  std::string v(static_cast<std::size_t>(len), '\0');
  if (len) read_or_throw(v.data(), v.size(), d, during);
  return v;
}

bool StoreClient::check(const std::vector<std::string>& keys, Deadline d) {
  for (const auto& k : keys) check_key(k);
  const std::string during = "CHECK " + (keys.empty() ? std::string("()") : shown(keys[0]));
  check_open(during);
  Request r(Query::Check);
  r.value<std::uint64_t>(keys.size());
  for (const auto& k : keys) r.key(k);
  send_or_throw(r.s, d, during);
  std::uint8_t reply = 0xff;
  read_or_throw(&reply, 1, d, during);
  if (reply != kReady && reply != kNotReady)
    broken("answered " + during + " with byte " + std::to_string(reply) +
           " instead of READY (0) or NOT_READY (1)");
  return reply == kReady;
}

std::int64_t StoreClient::add(const std::string& key, std::int64_t delta, Deadline d) {
  check_key(key);
  const std::string during = "ADD " + shown(key);
  check_open(during);
  Request r(Query::Add);
  r.key(key).value(delta);
  send_or_throw(r.s, d, during);
  std::int64_t v = 0;
  read_or_throw(&v, sizeof v, d, during);
  return v;
}

// ---- bounded I/O -------------------------------------------------------------------------------

StoreClient::Io StoreClient::send_all(std::string_view bytes, Deadline d) {
  const SendResult r = send_bounded(fd_, bytes, d, &error_);
  return r == SendResult::Ok ? Io::Ok : r == SendResult::Timeout ? Io::Timeout : Io::Closed;
}

StoreClient::Io StoreClient::read_exact(void* out, std::size_t n, Deadline d) {
  auto* p = static_cast<char*>(out);
  while (n > 0) {
    const ssize_t got = ::recv(fd_, p, n, 0);
    if (got > 0) {
      p += got;
      n -= static_cast<std::size_t>(got);
      continue;
    }
    if (got == 0) {
      error_ = "connection closed";
      return Io::Closed;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      error_ = std::strerror(errno);
      return Io::Closed;
    }
    pollfd pf{fd_, POLLIN, 0};
    const int ms = ms_left(d);
    if (ms == 0) return Io::Timeout;
    if (::poll(&pf, 1, ms) < 0 && errno != EINTR) {
      error_ = std::strerror(errno);
      return Io::Closed;
    }
  }
  return Io::Ok;
}

void StoreClient::send_or_throw(std::string_view bytes, Deadline d, const std::string& during) {
  switch (send_all(bytes, d)) {
    case Io::Ok:
      return;
    case Io::Timeout:
      broken("did not take " + during + " in time");
    case Io::Closed:
      broken("closed the connection during " + during + ": " + error_);
  }
}

void StoreClient::read_or_throw(void* out, std::size_t n, Deadline d, const std::string& during) {
  switch (read_exact(out, n, d)) {
    case Io::Ok:
      return;
    case Io::Timeout:
      broken("did not answer " + during + " in time");
    case Io::Closed:
      broken("closed the connection during " + during + " (" + error_ + ")");
  }
}

void StoreClient::broken(const std::string& what) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (error_.empty()) error_ = what;
  throw StoreError("the TCPStore at " + where_ + " " + what);
}

void StoreClient::check_open(const std::string& during) const {
  if (fd_ < 0)
    throw StoreError("the TCPStore connection to " + where_ + " is closed (" + error_ +
                     "); cannot " + during);
}

}  // namespace cco::boot::detail
