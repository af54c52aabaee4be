// The hello a rank sends rank 0 when it joins a process bootstrap (process.cpp), and rank 0's
// rule on its job secret (CCO_JOB_SECRET, docs/MULTINODE.md): the message's wire format, read and
// written in one place, and the decision whether a hello's secret lets it in. GPU-free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cco::boot::detail {

/// 2: the hello ends with the job secret.
inline constexpr std::uint64_t kHelloVersion = 2;
inline constexpr std::string_view kHelloTag = "ccoverlap-bootstrap";

struct Hello {
  std::uint64_t version = kHelloVersion;
  std::int64_t rank = 0, world = 0, local_rank = 0;
  std::string host;
  std::string key;     ///< the job key (a hash of the workload)
  std::string secret;  ///< CCO_JOB_SECRET (only in hellos of kHelloVersion)
};

/// The hello's body: tag, version, rank, world size, local rank, host, job key, secret.
std::string write_hello(const Hello& h);
/// A hello body read back; nullopt when it is not one of ours (another tag, or too short). A
/// hello of another version is read up to its key (its secret, if any, is not known).
std::optional<Hello> read_hello(std::string_view body);

/// The job secret compared without stopping at the first difference (its time says nothing of
/// where a guess went wrong).
bool same_secret(const std::string& a, const std::string& b);
/// Why rank 0, whose secret is `own` ("" for none), refuses hello `h` for the secret: " is
/// missing", " differs from rank 0's", ... (to follow "its CCO_JOB_SECRET"); "" when `h` may go
/// on to the other checks. With a secret, a hello of another version is refused (it carries no
/// secret rank 0 can check); without one, a hello that carries a secret is.
std::string secret_refusal(const Hello& h, const std::string& own);

}  // namespace cco::boot::detail
