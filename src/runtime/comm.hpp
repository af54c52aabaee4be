// NCCL communicators with the knobs of ncclConfig_t exposed.
#pragma once

#include <nccl.h>

#include <string>

namespace cco::rt {

/// Communicator settings; -1 (or empty) leaves NCCL's default.
struct CommConfig {
  int min_ctas = -1;           ///< ncclConfig_t.minCTAs
  int max_ctas = -1;           ///< ncclConfig_t.maxCTAs
  int cga_cluster_size = -1;   ///< ncclConfig_t.cgaClusterSize (0 disables clusters on sm_90)
  int cta_policy = -1;         ///< ncclConfig_t.CTAPolicy (NCCL_CTA_POLICY_*), NCCL 2.27+
  bool blocking = true;        ///< ncclConfig_t.blocking
};

/// Human-readable "minCTAs=32 maxCTAs=32" (only the fields set), "default" when none.
std::string describe(const CommConfig& c);

/// An owned NCCL communicator for one rank. Move-only. Creation is collective: every rank of the
/// id must construct its Comm (from its own thread or process) with the same config.
class Comm {
 public:
  Comm() = default;
  /// Calls ncclCommInitRankConfig on the current device.
  Comm(const ncclUniqueId& id, int nranks, int rank, const CommConfig& cfg);
  ~Comm();
  Comm(Comm&& o) noexcept;
  Comm& operator=(Comm&& o) noexcept;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  ncclComm_t get() const { return c_; }
  int nranks() const { return nranks_; }
  int rank() const { return rank_; }

 private:
  ncclComm_t c_ = nullptr;
  int nranks_ = 0;
  int rank_ = 0;
};

ncclUniqueId make_unique_id();

}  // namespace cco::rt
