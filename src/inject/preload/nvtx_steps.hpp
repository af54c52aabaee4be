// Steps from an NVTX range (cco run --step-nvtx NAME; docs/STEPS.md, "Steps").
//
// The library is the program's NVTX injection: `cco run` names it in NVTX_INJECTION64_PATH, and
// every copy of NVTX in the process (the program's, PyTorch's, NCCL's: NVTX v3 is header-only, so
// each library has its own) calls the exported InitializeInjectionNvtx2 at its first NVTX call
// (configs.cpp). That installs the range callbacks below into the copy's function tables: each
// start of a range whose message matches the pattern (a push or a start, ASCII or wide, core or
// domain) is a step mark, as if the program called ccoverlap.step() there. Nothing else of NVTX
// is taken over; the callbacks keep push/pop nesting per thread and hand out range ids, as NVTX's
// own contract says, and never fail the program.
//
// Messages: ASCII and Unicode (wide strings match when they are ASCII). Registered strings
// (nvtxDomainRegisterString) are not resolved: a range named through one never matches.
#pragma once

#include <cstdint>
#include <string>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#undef NVTX_NO_IMPL

namespace cco::preload {

/// Pure: which range messages name a step. `pattern` is a glob (plan::glob_match).
class NvtxStepNames {
 public:
  explicit NvtxStepNames(std::string pattern) : pattern_(std::move(pattern)) {}
  bool ascii(const char* message) const;
  /// A wide message matches when it is all ASCII and the ASCII form matches.
  bool wide(const wchar_t* message) const;
  /// An event attribute's message (ASCII or Unicode; registered strings never match).
  bool event(const nvtxEventAttributes_t* attr) const;
  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
};

/// Called at each start of a matching range, on the thread that starts it.
using NvtxStepFn = void (*)();

/// Installs the range callbacks into the tables that `get_table` (the injection's argument)
/// hands out, for steps named by `names` (kept, never freed by the caller while the process
/// runs). The same names and function for every call (one per NVTX copy in the process). Returns
/// false, changing nothing, when the callback tables cannot be had.
bool install_nvtx_steps(NvtxGetExportTableFunc_t get_table, const NvtxStepNames* names,
                        NvtxStepFn on_step);

/// Matching range starts seen (tests, statistics).
uint64_t nvtx_steps_seen();

}  // namespace cco::preload
