// The cuBLASLt calls cco makes, forwarded to the cuBLASLt loaded on first use
// (runtime/lazy.hpp). Without it every call returns CUBLAS_STATUS_NOT_INITIALIZED and
// cublasLtGetVersion 0; cublas_status_text says why.
#include <cublasLt.h>

#include <string>

#include "runtime/check.hpp"
#include "runtime/lazy.hpp"

namespace {

using cco::rt::Lib;

void* lt_fn(const char* name, const void* self) { return cco::rt::lib_entry(Lib::CublasLt, name, self); }

}  // namespace

// Each forwarder looks its target up once; the definition takes C linkage from cublasLt.h.
#define CCO_LT_FORWARD(name, params, args)                                       \
  cublasStatus_t CUBLASWINAPI name params {                                      \
    static const auto real = reinterpret_cast<decltype(&name)>(                  \
        lt_fn(#name, reinterpret_cast<const void*>(&name)));                     \
    if (!real) return CUBLAS_STATUS_NOT_INITIALIZED;                             \
    return real args;                                                            \
  }

extern "C" {

size_t CUBLASWINAPI cublasLtGetVersion(void) {
  static const auto real = reinterpret_cast<decltype(&cublasLtGetVersion)>(
      lt_fn("cublasLtGetVersion", reinterpret_cast<const void*>(&cublasLtGetVersion)));
  return real ? real() : 0;
}

CCO_LT_FORWARD(cublasLtCreate, (cublasLtHandle_t * handle), (handle))
CCO_LT_FORWARD(cublasLtDestroy, (cublasLtHandle_t handle), (handle))
CCO_LT_FORWARD(cublasLtMatrixLayoutCreate,
               (cublasLtMatrixLayout_t * layout, cudaDataType type, uint64_t rows, uint64_t cols,
                int64_t ld),
               (layout, type, rows, cols, ld))
CCO_LT_FORWARD(cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t layout), (layout))
CCO_LT_FORWARD(cublasLtMatmulDescCreate,
               (cublasLtMatmulDesc_t * desc, cublasComputeType_t compute, cudaDataType_t scale),
               (desc, compute, scale))
CCO_LT_FORWARD(cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc), (desc))
CCO_LT_FORWARD(cublasLtMatmulDescSetAttribute,
               (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const void* buf,
                size_t size),
               (desc, attr, buf, size))
CCO_LT_FORWARD(cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t * pref), (pref))
CCO_LT_FORWARD(cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t pref), (pref))
CCO_LT_FORWARD(cublasLtMatmulPreferenceSetAttribute,
               (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
                const void* buf, size_t size),
               (pref, attr, buf, size))
CCO_LT_FORWARD(cublasLtMatmulAlgoGetHeuristic,
               (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
                cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                cublasLtMatmulPreference_t pref, int requested,
                cublasLtMatmulHeuristicResult_t results[], int* returned),
               (handle, desc, a, b, c, d, pref, requested, results, returned))
CCO_LT_FORWARD(cublasLtMatmul,
               (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                const void* a, cublasLtMatrixLayout_t adesc, const void* b,
                cublasLtMatrixLayout_t bdesc, const void* beta, const void* c,
                cublasLtMatrixLayout_t cdesc, void* d, cublasLtMatrixLayout_t ddesc,
                const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_size,
                cudaStream_t stream),
               (handle, desc, alpha, a, adesc, b, bdesc, beta, c, cdesc, d, ddesc, algo,
                workspace, workspace_size, stream))

}  // extern "C"

namespace cco::rt {

std::string cublas_status_text(int status) {
  std::string s = "cuBLAS status " + std::to_string(status);
  if (status == CUBLAS_STATUS_NOT_INITIALIZED && !load(Lib::CublasLt))
    s += " (cuBLASLt " + lib_file(Lib::CublasLt) + " cannot be loaded: " +
         load_error(Lib::CublasLt) + ")";
  return s;
}

}  // namespace cco::rt
