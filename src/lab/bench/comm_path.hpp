// Where NCCL ran a collective: on SMs (NCCL kernels) or on the copy engines (no NCCL kernel),
// read off a kernel trace of one run between two marks. A CTA policy is a request NCCL may not
// honour (zero on a collective or a buffer it cannot carry on the copy engines runs on SMs), so
// `cco bench` probes every communicator whose policy it set and reports what happened, never
// only what it asked for. GPU-free: the trace comes from trace::Session on a GPU, or from a test.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "model/types.hpp"
#include "trace/format.hpp"

namespace cco::bench {

struct CommPath {
  bool known = false;          ///< both marks found on the rank (tracing worked)
  int nccl_kernels = 0;        ///< NCCL kernels that started between the marks
  int64_t max_ctas = 0;        ///< the largest grid among them (CTAs; 0: none)
  int allgather_kernels = 0;   ///< of them, NCCL's all-gather kernels (named "AllGather")
  std::vector<std::string> names;  ///< their distinct names, at most 3
  std::string why;             ///< when not known: why
};

/// The marks a probe brackets its run with.
std::string probe_mark(const std::string& label, bool begin);

/// The NCCL kernels of `rank` that started between the last "begin" and "end" marks of `label`.
CommPath classify_comm_path(const trace::Trace& t, int rank, const std::string& label);

/// Over ranks: kernels and CTAs are each rank's largest (the caller reduces them); path is
/// "sm" when any rank ran an NCCL kernel, "copy-engine" when none did, "unknown" without a trace.
/// For an all-reduce split (`split`: reduce-scatter on SMs by design, then an all-gather asked
/// of the copy engines) "sm+copy-engine" when no all-gather kernel ran, else "sm".
/// {"path", "nccl_kernels", "allgather_kernels", "max_ctas", "kernels", "why"?}
nlohmann::json comm_path_json(const CommPath& combined, bool split = false);

/// One note on where NCCL ran a probed communicator (`p`: comm_path_json's object), e.g.
/// "collective cta=zero reg=window, 256M: no NCCL kernel ran (copy engines)", with a remark that
/// one rank copies locally whatever the policy. When `policy` is zero and the collective ran on
/// SMs: a warning that NCCL did not honour it, or, for a collective NCCL has no copy-engine path
/// for (`copy_engine_capable` false: a step's reduce-scatters and all-reduces on a zero-CTA
/// communicator), that this is expected.
std::string path_note(const std::string& label, model::CtaPolicy policy, const nlohmann::json& p, int nranks,
                      bool copy_engine_capable = true);

}  // namespace cco::bench
