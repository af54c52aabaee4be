#include "nccl_tuner/decide.hpp"

#include <limits>

#include "nccl_tuner/nccl_tuner_abi.h"

namespace cco::tuner {

std::string_view collective_name(int coll_type) {
  switch (coll_type) {
    case ccoNcclFuncBroadcast:
      return "broadcast";
    case ccoNcclFuncReduce:
      return "reduce";
    case ccoNcclFuncAllGather:
      return "allgather";
    case ccoNcclFuncReduceScatter:
      return "reducescatter";
    case ccoNcclFuncAllReduce:
      return "allreduce";
    default:
      return {};
  }
}

int collective_index(int coll_type) {
  return coll_type >= ccoNcclFuncBroadcast && coll_type <= ccoNcclFuncAllReduce
             ? coll_type
             : kCollectiveSlots - 1;
}

Decision decide(const plan::Nccl& nccl, int coll_type, std::uint64_t bytes,
                int nccl_channels) noexcept {
  Decision d;
  const std::string_view name = collective_name(coll_type);
  if (name.empty() || nccl.channels.empty()) return d;
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  const auto b = static_cast<std::int64_t>(bytes > kMax ? kMax : bytes);
  // channel_cap only compares strings and integers: it cannot throw.
  d.cap = plan::channel_cap(nccl, name, b);
  if (d.cap <= 0) return d;
  if (nccl_channels > 0 && d.cap >= nccl_channels) return d;  // never raise NCCL's own choice
  d.set = true;
  d.channels = d.cap;
  return d;
}

}  // namespace cco::tuner
