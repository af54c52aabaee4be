// Calls the (fake) cuBLAS it is linked against, after loading the (fake) driver as a CUDA runtime
// would: prints the SM-count target each GEMM ran with and what the program reads back.
// With FAKE_BLAS_STEPS=N: N steps, each started with the preload library's cco_step_mark (as
// ccoverlap.step() does) and holding one GEMM; one line per step with its target (a rotation
// under CCO_COMPARE switches the SM budget between steps).
#include <cublas_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

extern "C" int cco_fake_blas_seen();

int main() {
  if (!dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL)) return 1;
  auto h = reinterpret_cast<cublasHandle_t>(0x1234);
  auto gemm = [&] {
    return cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 7, 7, 7, nullptr, nullptr, CUDA_R_32F, 7,
                        nullptr, CUDA_R_32F, 7, nullptr, nullptr, CUDA_R_32F, 7,
                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  };
  int got = -1;
  if (const char* n = std::getenv("FAKE_BLAS_STEPS")) {
    using Mark = int (*)(void*);
    auto mark = reinterpret_cast<Mark>(dlsym(RTLD_DEFAULT, "cco_step_mark"));
    using Index = int (*)();
    auto index = reinterpret_cast<Index>(dlsym(RTLD_DEFAULT, "cco_config_index"));
    for (int i = 0; i < std::atoi(n); ++i) {
      const int m = mark ? mark(nullptr) : -1;
      gemm();
      cublasGetSmCountTarget(h, &got);
      std::printf("step %d mark=%d config=%d target=%d get=%d\n", i, m, index ? index() : -1,
                  cco_fake_blas_seen(), got);
    }
    return 0;
  }
  const cublasStatus_t r = gemm();
  cublasGetSmCountTarget(h, &got);
  std::printf("gemm status=%d target=%d get=%d\n", static_cast<int>(r), cco_fake_blas_seen(), got);
  cublasSetSmCountTarget(h, 50);  // stricter than the plan's: kept
  gemm();
  cublasGetSmCountTarget(h, &got);
  std::printf("gemm-own target=%d get=%d\n", cco_fake_blas_seen(), got);
  return 0;
}
