// Private to cco.bootstrap (and its tests): a small client for PyTorch's c10d TCPStore, the
// key-value store torchrun's elastic agent hosts for its workers at MASTER_ADDR:MASTER_PORT.
// The wire protocol, with its sources, is described at the top of tcpstore.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/detail.hpp"

namespace cco::boot::detail {

/// A store that cannot be used: not reached, not speaking the TCPStore protocol, a reply out of
/// bounds, a connection closed or timed out mid-operation. One line that names the store.
class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Largest key (before the "/" prefix) and value this client sends: the libuv server's limits.
inline constexpr std::size_t kStoreMaxKey = 8 * 1024 - 1;
inline constexpr std::size_t kStoreMaxValue = 8 * 1024 * 1024;

/// One connection to a TCPStore. Keys are given bare and sent as "/" + key, as PyTorch's own
/// client does (so `store.get("cco/x")` in Python reads what `set("cco/x", ...)` wrote here).
/// Every call waits at most until its deadline. After any StoreError, or a wait that timed out,
/// the connection is closed and further calls throw StoreError.
class StoreClient {
 public:
  /// Connects (retrying refused or unreachable attempts until `d`), sends VALIDATE with the magic
  /// number and a PING, and checks that the nonce comes back. StoreError when that does not happen
  /// by `d`; ConfigError for a host name that does not resolve.
  static std::unique_ptr<StoreClient> connect(const std::string& host, int port, Deadline d);
  StoreClient(const StoreClient&) = delete;
  StoreClient& operator=(const StoreClient&) = delete;
  ~StoreClient();

  /// "host:port", for messages.
  const std::string& where() const { return where_; }

  /// SET: no reply on the wire (use check() to learn that the server has it).
  void set(const std::string& key, std::string_view value, Deadline d);
  /// WAIT until every key exists: true, or false once `d` passed (the connection is then closed,
  /// which drops the wait on the server).
  bool wait(const std::vector<std::string>& keys, Deadline d);
  /// WAIT for `key`, then GET it (as PyTorch's client does: a GET of a missing key returns an
  /// empty value on the libuv server and fails on the legacy one). std::nullopt if `d` passed
  /// first; StoreError for a value longer than `max_bytes` (nothing of it is read).
  std::optional<std::string> get(const std::string& key, std::size_t max_bytes, Deadline d);
  /// CHECK: whether every key exists now.
  bool check(const std::vector<std::string>& keys, Deadline d);
  /// ADD: adds `delta` to the decimal number stored at `key` (0 if absent); the new value.
  std::int64_t add(const std::string& key, std::int64_t delta, Deadline d);

 private:
  StoreClient(int fd, std::string where);
  enum class Io { Ok, Closed, Timeout };
  Io send_all(std::string_view bytes, Deadline d);
  Io read_exact(void* out, std::size_t n, Deadline d);
  void send_or_throw(std::string_view bytes, Deadline d, const std::string& during);
  void read_or_throw(void* out, std::size_t n, Deadline d, const std::string& during);
  [[noreturn]] void broken(const std::string& what);
  void check_open(const std::string& during) const;

  int fd_;
  std::string where_;
  std::string error_;  // why the connection failed (errno text, "connection closed")
};

}  // namespace cco::boot::detail
