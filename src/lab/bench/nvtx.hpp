// An NVTX range (push/pop) for the object's lifetime, around each measured run of the pair and
// step runners: shown by Nsight Systems and recorded by `--trace`. Header-only NVTX: without a
// tool attached each call is a test of a null function pointer.
#pragma once

#include <nvtx3/nvToolsExt.h>

namespace cco::bench {

class NvtxScope {
 public:
  explicit NvtxScope(const char* name) { nvtxRangePushA(name); }
  ~NvtxScope() { nvtxRangePop(); }
  NvtxScope(const NvtxScope&) = delete;
  NvtxScope& operator=(const NvtxScope&) = delete;
};

}  // namespace cco::bench
