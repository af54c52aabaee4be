// A program that marks its steps with NVTX only (the header-only NVTX v3, as PyTorch and NCCL use
// it): after loading the (fake) driver as a CUDA runtime would, FAKE_NVTX_STEPS steps (default 8),
// each an NVTX range "train_step" holding a nested range "forward" and one launch-free
// iteration; one line per step with the nesting level NVTX returned. Under the preload library
// with CCO_STEP_NVTX=train_step (NVTX_INJECTION64_PATH naming the library) each step is a step.
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>

int main() {
  if (!dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL)) return 1;
  const char* n = std::getenv("FAKE_NVTX_STEPS");
  const int steps = n ? std::atoi(n) : 8;
  for (int i = 0; i < steps; ++i) {
    const int outer = nvtxRangePushA("train_step");
    const int inner = nvtxRangePushA("forward");
    nvtxRangePop();
    nvtxRangePop();
    std::printf("step %d levels=%d,%d\n", i, outer, inner);
  }
  return 0;
}
