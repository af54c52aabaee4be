// NCCL communicators with the knobs of ncclConfig_t exposed.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <optional>
#include <string>

#include "model/types.hpp"

namespace cco::rt {

/// Communicator settings; nullopt leaves NCCL's default.
struct CommConfig {
  std::optional<int> min_ctas = std::nullopt;  ///< ncclConfig_t.minCTAs
  std::optional<int> max_ctas = std::nullopt;  ///< ncclConfig_t.maxCTAs
  /// ncclConfig_t.cgaClusterSize (0 disables clusters on sm_90)
  std::optional<int> cga_cluster_size = std::nullopt;
  std::optional<model::CtaPolicy> cta_policy = std::nullopt;  ///< ncclConfig_t.CTAPolicy, NCCL 2.27+
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

/// A buffer registered with a communicator, undone by reset() or the destructor (call it before
/// the buffer is freed): Buffer is ncclCommRegister (NCCL may skip its staging copies), Window
/// a symmetric window, ncclCommWindowRegister (collective: every rank registers in the same
/// order), None nothing. The buffer must come from ncclMemAlloc. Move-only.
class Registration {
 public:
  Registration() = default;
  /// Throws rt::Error (CCO_NCCL_CHECK) when NCCL refuses the registration.
  Registration(ncclComm_t comm, void* buf, std::size_t bytes, model::CommRegister how);
  ~Registration() { reset(); }
  Registration(Registration&& o) noexcept;
  Registration& operator=(Registration&& o) noexcept;
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;
  void reset() noexcept;

 private:
  ncclComm_t comm_ = nullptr;
  void* handle_ = nullptr;  // ncclCommRegister's handle or the ncclWindow_t
  model::CommRegister how_ = model::CommRegister::None;
};

}  // namespace cco::rt
