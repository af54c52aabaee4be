// The tuner plugin's decision, pure: which channel count NCCL is given for one collective.
// It depends only on (collective type, size in bytes, plan), so every rank of a communicator --
// which sees the same collectives with the same sizes -- makes the same decision.
#pragma once

#include <cstdint>
#include <string_view>

#include "plan/plan.hpp"

namespace cco::tuner {

/// The plan's name of an NCCL collective type (ncclFunc_t as getCollInfo receives it):
/// "broadcast", "reduce", "allgather", "reducescatter", "allreduce"; "" for every other type
/// (send/recv, all-to-all, gather, scatter, or a value this build does not know), which no rule
/// can match.
std::string_view collective_name(int coll_type);

/// Index of a collective for statistics: 0..4 in the order of ncclFunc_t (broadcast, reduce,
/// allgather, reducescatter, allreduce), 5 for everything else.
int collective_index(int coll_type);
inline constexpr int kCollectiveSlots = 6;

struct Decision {
  bool set = false;  ///< write `channels` into *nChannels
  int channels = 0;  ///< the cap, when set
  int cap = 0;       ///< the matching rule's max_channels (0: no rule matched)
};

/// The decision for one getCollInfo call. `nccl_channels` is *nChannels as NCCL passed it: 0
/// when NCCL has not decided yet (NCCL 2.28 always passes 0), else NCCL's own count, which is
/// only ever lowered: a cap at or above it leaves it alone. Sizes beyond INT64_MAX count as
/// INT64_MAX. Never throws.
Decision decide(const plan::Nccl& nccl, int coll_type, std::uint64_t bytes,
                int nccl_channels) noexcept;

}  // namespace cco::tuner
