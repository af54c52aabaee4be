#include "trace/regather.hpp"

#include "trace/slowdown.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <string_view>

namespace cco::trace {

namespace {

// A communication kernel of collective `kind`: by cco's label of the NCCL call (its parser,
// slowdown.hpp), else by NCCL's kernel name, which classify_kernel already took for NCCL's
// (ncclDevKernel_X, ncclKernel_X, ncclSymkDevKernel_X, with or without "void ").
bool of_kind(const KernelEvent& k, model::Collective kind, std::string_view name) {
  if (k.category != KernelCategory::Communication || k.is_copy()) return false;
  if (const auto c = collective_size(k.call)) return c->kind == kind;
  return k.call.empty() && k.name.find(name) != std::string::npos;
}

bool by_start(const KernelEvent* a, const KernelEvent* b) { return a->start_ns < b->start_ns; }

// The all-gathers that gather parameters: where cco's labels give sizes, those whose size occurs
// at least twice in the step (a block's parameters, or equal blocks'; not a one-off gather such as
// a loss gathered once a step); without sizes (a profiler's trace), all of them.
std::vector<const KernelEvent*> parameter_gathers(const std::vector<const KernelEvent*>& gathers) {
  std::map<std::string, int> times;
  for (const KernelEvent* k : gathers) ++times[k->call];
  std::vector<const KernelEvent*> out;
  for (const KernelEvent* k : gathers)
    if (k->call.empty() || times[k->call] >= 2) out.push_back(k);
  return out;
}

}  // namespace

bool is_all_gather(const KernelEvent& k) {
  return of_kind(k, model::Collective::AllGather, "_AllGather");
}

bool is_reduce_scatter(const KernelEvent& k) {
  return of_kind(k, model::Collective::ReduceScatter, "_ReduceScatter");
}

bool is_gather_copy_out(const KernelEvent& k) {
  return k.category == KernelCategory::Compute && k.name.find("split_with_sizes_copy") != std::string::npos;
}

Regathers regathers(std::vector<const KernelEvent*> comms,
                    std::vector<const KernelEvent*> copies_out, const std::vector<Interval>& exposed,
                    const std::vector<Interval>& comp, int64_t compute_overlapped_ns,
                    int64_t compute_slowed_ns, Interval step) {
  Regathers r;
  std::sort(comms.begin(), comms.end(), by_start);
  std::vector<const KernelEvent*> gathers;
  for (const KernelEvent* k : comms) {
    if (is_all_gather(*k)) gathers.push_back(k);
    r.reduce_scatters += is_reduce_scatter(*k) ? 1 : 0;
  }
  gathers = parameter_gathers(gathers);
  r.all_gathers = static_cast<int>(gathers.size());
  // FSDP2's step, seen whole: reduce-scatters (backward), its copies out of the gathers, and a
  // window that starts with a gather (a window from the collectives' period may start mid-step,
  // where the last gathers would be the next step's forward ones). Else none: an all-gather
  // of tensor parallelism, FSDP with reshard off (no surplus), or a window that cannot tell.
  if (r.reduce_scatters == 0 || r.all_gathers <= r.reduce_scatters || copies_out.empty() ||
      comms.empty() || !is_all_gather(*comms.front()))
    return r;
  r.regathers = r.all_gathers - r.reduce_scatters;
  std::vector<Interval> mine, others;
  for (auto it = gathers.end() - r.regathers; it != gathers.end(); ++it)
    mine.push_back({std::max((*it)->start_ns, step.begin), std::min((*it)->end_ns, step.end)});
  for (const KernelEvent* k : comms)
    if (std::find(gathers.end() - r.regathers, gathers.end(), k) == gathers.end())
      others.push_back({std::max(k->start_ns, step.begin), std::min(k->end_ns, step.end)});
  // Only where no other collective runs (a reduce-scatter beside a re-gather keeps its time).
  const auto mine_u = interval_difference(interval_union(std::move(mine)),
                                          interval_union(std::move(others)));
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
  r.step_ns = step.length();
  return r;
}

}  // namespace cco::trace
