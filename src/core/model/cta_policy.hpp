// NCCL's CTA policies (ncclConfig_t.CTAPolicy) and where each one can apply: the rule `cco bench`
// and `cco tune` use to refuse a row before any GPU work, with the reason printed per row.
// GPU-free and rank-independent: every input is agreed data (the collective, the lowest NCCL
// version among the ranks, whether the ranks share one host), so every rank refuses alike.
//
//   default     NCCL's own choice of CTAs (NCCL_CTA_POLICY_DEFAULT, 0)
//   efficiency  as few CTAs as give decent bandwidth (NCCL_CTA_POLICY_EFFICIENCY, 1; NCCL 2.27+)
//   zero        no CTA where NCCL can: the copy engines carry the data (NCCL_CTA_POLICY_ZERO, 2;
//               NCCL 2.28+, all-gather, all-to-all, gather and scatter only, every rank in one
//               NVLink domain, buffers in a symmetric window of ncclMemAlloc memory)
#pragma once

#include <string>
#include <string_view>

#include "model/metrics.hpp"
#include "model/types.hpp"  // CtaPolicy, its names

namespace cco::model {

/// The NCCL version (NCCL_VERSION_CODE form, 22809 for 2.28.9) that first knows the policy.
int cta_policy_min_version(CtaPolicy p);
/// Whether NCCL's zero-CTA path covers the collective (copy-engine collectives of NCCL 2.28).
bool copy_engine_collective(Collective c);

/// Whether zero on `c` runs as a split (an all-reduce: reduce-scatter on SMs, then all-gather on
/// the copy engines) rather than as one collective.
bool zero_splits(CtaPolicy p, Collective c);

/// Why a row with policy `p` cannot run as asked, or "" when it can. `nccl_version`: the lowest
/// runtime NCCL version among the ranks (0: unknown, not checked); `one_host`: every rank on one
/// host (the copy engines reach only peers in the NVLink domain); `split`: an all-reduce may run
/// as zero_splits says (rows of cco bench; not the run's own communicator, whose baselines must be
/// plain collectives). A row that would silently fall back (zero on a reduce-scatter runs on SMs)
/// is refused, never reported under the asked policy.
std::string cta_policy_refusal(CtaPolicy p, Collective c, int nccl_version, bool one_host,
                               bool split = false);

/// "2.28.9" from 22809 (and 2.x versions before 2.9's five-digit codes: 2708 -> "2.7.8").
std::string nccl_version_text(int code);

}  // namespace cco::model
