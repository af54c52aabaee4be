// What a cuBLAS or cuBLASLt GEMM call is, for the trace (docs/TRACE.md, "Library calls"): its
// function, types, operations and shape, spelled as a label the trace gives every kernel the call
// launched. Persistent GEMM kernels launch one grid for many shapes; the label tells them apart
// in the diagnosis (trace/diagnosis.hpp) and in cco report.
//
// Pure: the shape comes from the call's arguments (cuBLAS) or from its descriptors through
// LtShapeApi (cuBLASLt; tests fill it with fakes). Only asked while a trace records library calls
// (trace_hook.hpp): untraced, the wrappers never look.
#pragma once

#include <cublasLt.h>

#include <cstdint>
#include <optional>
#include <string>

namespace cco::preload {

struct GemmCall {
  const char* function = "";  ///< "cublasGemmEx", "cublasLtMatmul", ...
  char op_a = 'N', op_b = 'N';  ///< 'N', 'T' or 'C'
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;  ///< batchCount of the batched calls, D's batch count for cuBLASLt
  int type = -1;      ///< A's cudaDataType (-1: the function's name says it, as cublasSgemm)
};

/// 'N', 'T', 'C' for a cublasOperation_t (others: '?').
char op_letter(int op);
/// A short name of a cudaDataType ("f32", "bf16", "e4m3", ...; others "type N").
std::string data_type_name(int type);
/// "cublasLtMatmul bf16 TN m=4096 n=8192 k=2048" (and " batch=8" when batched).
std::string call_label(const GemmCall& c);
/// The same call, the same id (a hash of every field; collisions only mix two labels' kernels).
uint64_t call_id(const GemmCall& c);

using LtDescAttrFn = cublasStatus_t (*)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t,
                                        void*, size_t, size_t*);
using LtLayoutAttrFn = cublasStatus_t (*)(cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t,
                                          void*, size_t, size_t*);
struct LtShapeApi {
  LtDescAttrFn descGet = nullptr;      ///< cublasLtMatmulDescGetAttribute
  LtLayoutAttrFn layoutGet = nullptr;  ///< cublasLtMatrixLayoutGetAttribute
};

/// A cublasLtMatmul's call read from its descriptors: m and n are D's rows and columns, k is A's
/// columns (rows when A is transposed). nullopt when a read fails (the call itself says why).
std::optional<GemmCall> lt_gemm_call(const LtShapeApi& api, cublasLtMatmulDesc_t desc,
                                     cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t d);

}  // namespace cco::preload
