#include "bench/comm_path.hpp"

#include <algorithm>

#include "model/types.hpp"

namespace cco::bench {

std::string probe_mark(const std::string& label, bool begin) {
  return "path probe " + label + (begin ? " begin" : " end");
}

CommPath classify_comm_path(const trace::Trace& t, int rank, const std::string& label) {
  CommPath p;
  const std::string b = probe_mark(label, true), e = probe_mark(label, false);
  int64_t from = -1, to = -1;
  for (const auto& m : t.marks) {
    if (m.rank != rank && m.rank != -1) continue;
    if (m.name == b) from = m.ts_ns;
    else if (m.name == e) to = m.ts_ns;
  }
  if (from < 0 || to < from) {
    p.why = "no probe marks on rank " + std::to_string(rank) + " in the trace";
    return p;
  }
  p.known = true;
  for (const auto& k : t.kernels) {
    if (k.rank != rank || k.start_ns < from || k.start_ns > to) continue;
    if (!trace::is_communication_kernel(k.name)) continue;
    ++p.nccl_kernels;
    if (k.name.find("AllGather") != std::string::npos) ++p.allgather_kernels;
    p.max_ctas = std::max(p.max_ctas, k.grid.volume());
    if (p.names.size() < 3 && std::find(p.names.begin(), p.names.end(), k.name) == p.names.end())
      p.names.push_back(k.name);
  }
  return p;
}

nlohmann::json comm_path_json(const CommPath& c, bool split) {
  nlohmann::json j;
  if (!c.known) j["path"] = "unknown";
  else if (split) j["path"] = c.allgather_kernels > 0 ? "sm" : "sm+copy-engine";
  else j["path"] = c.nccl_kernels > 0 ? "sm" : "copy-engine";
  j["nccl_kernels"] = c.nccl_kernels;
  j["allgather_kernels"] = c.allgather_kernels;
  j["max_ctas"] = c.max_ctas;
  j["kernels"] = c.names;
  if (!c.known) j["why"] = c.why;
  return j;
}

std::string path_note(const std::string& label, model::CtaPolicy policy, const nlohmann::json& p, int nranks,
                      bool copy_engine_capable) {
  const std::string path = p.value("path", std::string("unknown"));
  const std::string one_rank = nranks == 1 ? "; with one rank NCCL copies locally whatever the policy)" : ")";
  std::string s = "collective " + label + ": ";
  if (path == "sm+copy-engine")
    return s + "reduce-scatter on SMs (" + std::to_string(p.value("nccl_kernels", 0)) +
           " NCCL kernels), all-gather on the copy engines (no all-gather kernel ran" + one_rank;
  if (path == "copy-engine") return s + "no NCCL kernel ran (copy engines" + one_rank;
  if (path == "unknown") return s + "path unknown (" + p.value("why", std::string()) + ")";
  s += "on SMs (" + std::to_string(p.value("nccl_kernels", 0)) + " NCCL kernels, up to " +
       std::to_string(p.value("max_ctas", int64_t{0})) + " CTAs)";
  if (policy == model::CtaPolicy::Zero)
    s += copy_engine_capable ? "; NCCL did not honour CTA policy zero here: these rows measure its SM path"
                             : "; as expected under CTA policy zero: NCCL has no copy-engine path for it";
  return s;
}

}  // namespace cco::bench
