#include "trace/regather.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>

namespace cco::trace {

namespace {

bool names(const KernelEvent& k, std::string_view label, std::string_view kernel) {
  if (k.is_copy()) return false;
  if (k.call.rfind(label, 0) == 0) return true;
  return k.name.find(kernel) != std::string::npos;
}

bool by_start(const KernelEvent* a, const KernelEvent* b) { return a->start_ns < b->start_ns; }

}  // namespace

bool is_all_gather(const KernelEvent& k) {
  return k.category == KernelCategory::Communication &&
         names(k, "nccl AllGather ", "ncclDevKernel_AllGather");
}

bool is_reduce_scatter(const KernelEvent& k) {
  return k.category == KernelCategory::Communication &&
         names(k, "nccl ReduceScatter ", "ncclDevKernel_ReduceScatter");
}

bool is_gather_copy_out(const KernelEvent& k) {
  return k.category == KernelCategory::Compute && k.name.find("split_with_sizes_copy") != std::string::npos;
}

Regathers regathers(std::vector<const KernelEvent*> comms,
                    std::vector<const KernelEvent*> copies_out, const std::vector<Interval>& exposed,
                    const std::vector<Interval>& comp, int64_t compute_overlapped_ns,
                    int64_t compute_slowed_ns, Interval step) {
  Regathers r;
  std::vector<const KernelEvent*> gathers;
  for (const KernelEvent* k : comms) {
    if (is_all_gather(*k)) gathers.push_back(k);
    r.reduce_scatters += is_reduce_scatter(*k) ? 1 : 0;
  }
  r.all_gathers = static_cast<int>(gathers.size());
  // Without reduce-scatters this is not FSDP's backward (an all-gather of tensor parallelism).
  if (r.reduce_scatters == 0 || r.all_gathers <= r.reduce_scatters) return r;
  r.regathers = r.all_gathers - r.reduce_scatters;
  std::sort(gathers.begin(), gathers.end(), by_start);
  std::vector<Interval> mine;
  for (auto it = gathers.end() - r.regathers; it != gathers.end(); ++it)
    mine.push_back({std::max((*it)->start_ns, step.begin), std::min((*it)->end_ns, step.end)});
  const auto mine_u = interval_union(std::move(mine));
  r.exposed_ns = total_length(interval_intersection(exposed, mine_u));
  const int64_t beside = total_length(interval_intersection(comp, mine_u));
  if (compute_overlapped_ns > 0)
    r.slowed_ns = std::llround(static_cast<double>(compute_slowed_ns) *
                               std::min(1.0, static_cast<double>(beside) /
                                                 static_cast<double>(compute_overlapped_ns)));
  std::sort(copies_out.begin(), copies_out.end(), by_start);
  const auto n = static_cast<std::size_t>(std::llround(
      static_cast<double>(copies_out.size()) * r.regathers / static_cast<double>(r.all_gathers)));
  std::vector<Interval> copies;
  for (auto it = copies_out.end() - static_cast<std::ptrdiff_t>(std::min(n, copies_out.size()));
       it != copies_out.end(); ++it)
    copies.push_back({std::max((*it)->start_ns, step.begin), std::min((*it)->end_ns, step.end)});
  r.copies_ns = total_length(interval_union(std::move(copies)));
  return r;
}

}  // namespace cco::trace
