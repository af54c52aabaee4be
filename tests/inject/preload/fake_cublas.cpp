// A fake libcublas.so.13 for the process test: a GEMM that records the SM-count target its handle
// has when it runs, and the handle's target calls. cco_fake_blas_seen() reports the last GEMM's.
#include <cublas_api.h>

namespace {
int g_target = 0;  // the (one) handle's SM-count target
int g_seen = -1;
}  // namespace

extern "C" {
__attribute__((visibility("default"))) cublasStatus_t cublasSetSmCountTarget(cublasHandle_t,
                                                                             int v) {
  if (v < 0) return CUBLAS_STATUS_INVALID_VALUE;
  g_target = v;
  return CUBLAS_STATUS_SUCCESS;
}
__attribute__((visibility("default"))) cublasStatus_t cublasGetSmCountTarget(cublasHandle_t,
                                                                             int* v) {
  *v = g_target;
  return CUBLAS_STATUS_SUCCESS;
}
__attribute__((visibility("default"))) cublasStatus_t cublasGemmEx(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int m, int, int, const void*,
    const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
    cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) {
  g_seen = g_target;
  return m == 7 ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}
__attribute__((visibility("default"))) int cco_fake_blas_seen() {
  return g_seen;
}
}
