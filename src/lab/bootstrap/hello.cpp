#include "bootstrap/hello.hpp"

#include <algorithm>

#include "bootstrap/detail.hpp"

namespace cco::boot::detail {

std::string write_hello(const Hello& h) {
  Writer w;
  w.str(kHelloTag);
  w.u64(h.version);
  w.i64(h.rank);
  w.i64(h.world);
  w.i64(h.local_rank);
  w.str(h.host);
  w.str(h.key);
  if (h.version == kHelloVersion) w.str(h.secret);
  return w.s;
}

std::optional<Hello> read_hello(std::string_view body) {
  Reader r{body};
  const std::string tag = r.str();
  Hello h;
  h.version = r.u64();
  h.rank = r.i64();
  h.world = r.i64();
  h.local_rank = r.i64();
  h.host = r.str();
  h.key = r.str();
  if (h.version == kHelloVersion) h.secret = r.str();
  if (!r.ok || tag != kHelloTag) return std::nullopt;
  return h;
}

bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const std::size_t n = std::max(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i)
    diff |= static_cast<unsigned char>((i < a.size() ? a[i] : 0) ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

std::string secret_refusal(const Hello& h, const std::string& own) {
  if (h.version != kHelloVersion)
    return own.empty() ? "" : " is not in a hello of this version (rank 0 runs another ccoverlap)";
  if (own.empty()) return h.secret.empty() ? "" : " is set, rank 0's is not";
  if (h.secret.empty()) return " is missing";
  return same_secret(h.secret, own) ? "" : " differs from rank 0's";
}

}  // namespace cco::boot::detail
