#include "trace/nvtx.hpp"

#include <algorithm>
#include <utility>

namespace cco::trace {

void NvtxPairing::add(const NvtxRecord& r) {
  if (r.kind == NvtxRecord::Kind::Start) {
    NvtxRange x;
    x.name = r.name;
    x.domain = r.domain;
    x.start_ns = r.ts_ns;
    x.end_ns = r.ts_ns;
    x.rank = -1;
    x.thread = r.thread;
    auto [it, fresh] = open_.try_emplace(r.id, x);
    if (!fresh) {
      ++replaced_;
      it->second = std::move(x);
    }
    return;
  }
  auto it = open_.find(r.id);
  if (it == open_.end()) {
    ++unmatched_ends_;
    return;
  }
  NvtxRange x = std::move(it->second);
  open_.erase(it);
  x.end_ns = std::max(r.ts_ns, x.start_ns);
  ranges_.push_back(std::move(x));
}

std::vector<std::string> NvtxPairing::notes(std::size_t max_listed) const {
  std::vector<std::string> out;
  // Oldest first, so the list names the ranges most likely left open by mistake.
  std::vector<const NvtxRange*> open;
  for (const auto& [id, r] : open_) open.push_back(&r);
  std::stable_sort(open.begin(), open.end(), [](const NvtxRange* a, const NvtxRange* b) {
    return a->start_ns < b->start_ns;
  });
  for (std::size_t i = 0; i < open.size() && i < max_listed; ++i) {
    const auto& r = *open[i];
    out.push_back("NVTX range '" + r.name + "'" +
                  (r.domain.empty() ? std::string() : " (domain '" + r.domain + "')") +
                  " opened on thread " + std::to_string(r.thread) + " at " +
                  std::to_string(r.start_ns) +
                  " ns was not closed while tracing: truncated, left out of the trace");
  }
  if (open.size() > max_listed)
    out.push_back(std::to_string(open.size() - max_listed) +
                  " more NVTX ranges were not closed while tracing: truncated, left out");
  if (unmatched_ends_ > 0)
    out.push_back(std::to_string(unmatched_ends_) +
                  " NVTX ranges ended without a recorded start (opened before tracing began, or "
                  "records dropped): left out");
  if (replaced_ > 0)
    out.push_back(std::to_string(replaced_) +
                  " NVTX range starts were replaced by a later start of the same id before they "
                  "ended: left out");
  return out;
}

void NvtxPairing::clear_closed() {
  ranges_.clear();
  unmatched_ends_ = 0;
  replaced_ = 0;
}

void assign_nvtx_ranks(std::vector<NvtxRange>& ranges,
                       const std::map<uint64_t, int>& rank_of_thread, int fallback) {
  for (auto& r : ranges) {
    auto it = rank_of_thread.find(r.thread);
    r.rank = it != rank_of_thread.end() ? it->second : fallback;
  }
}

}  // namespace cco::trace
