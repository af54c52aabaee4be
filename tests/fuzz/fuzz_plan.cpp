// Plan files (cco::plan::parse): read by `cco run --plan` and by the preload library (CCO_PLAN).
// Contract: returns a Plan or throws plan::Error; to_json() of a parsed plan parses back to the
// same document (docs/PRELOAD.md); rule matching on any plan terminates.
#include "fuzz_common.hpp"
#include "plan/plan.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace cco;
  plan::Plan p;
  try {
    p = plan::parse(fuzz::as_text(data, size));
  } catch (const plan::Error&) {
    return 0;
  }
  const std::string text = plan::to_json(p);
  try {
    if (plan::to_json(plan::parse(text)) != text)
      fuzz::violated("to_json/parse round trip differs", text);
  } catch (const plan::Error& e) {
    fuzz::violated("parse refuses what to_json wrote", e.what());
  }
  // What the library does with a plan per kernel: match names against every pattern.
  for (const char* name : {"_Z11gemm_kernelILi4EEvPfi", "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                           "void softmax_kernel<float>(float*, int)", ""}) {
    (void)plan::match_rule(p.shaping, name, name);
    (void)plan::matches_any(p.shaping.denylist, name);
    (void)plan::matches_any(p.priority.nccl_kernels, name);
  }
  for (const auto& r : p.shaping.rules) (void)plan::glob_match(r.kernel, r.kernel);
  (void)plan::made_for_mismatch(p.made_for, "NVIDIA H200", 132, {{"nccl", "2.21.5"}});
  return 0;
}
