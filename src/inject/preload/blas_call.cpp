#include "preload/blas_call.hpp"

#include <library_types.h>

namespace cco::preload {

char op_letter(int op) {
  switch (op) {
    case CUBLAS_OP_N:
      return 'N';
    case CUBLAS_OP_T:
      return 'T';
    case CUBLAS_OP_C:
      return 'C';
    default:
      return '?';
  }
}

std::string data_type_name(int type) {
  switch (type) {
    case CUDA_R_32F:
      return "f32";
    case CUDA_R_16F:
      return "f16";
    case CUDA_R_16BF:
      return "bf16";
    case CUDA_R_64F:
      return "f64";
    case CUDA_R_8F_E4M3:
      return "e4m3";
    case CUDA_R_8F_E5M2:
      return "e5m2";
    case CUDA_R_8I:
      return "i8";
    case CUDA_C_32F:
      return "c32";
    case CUDA_C_64F:
      return "c64";
    default:
      return std::string("type ").append(std::to_string(type));
  }
}

std::string call_label(const GemmCall& c) {
  std::string s = c.function ? c.function : "";
  if (c.type >= 0) {
    s += ' ';
    s += data_type_name(c.type);
  }
  s += ' ';
  s += c.op_a;
  s += c.op_b;
  // Appended piece by piece (GCC 12 warns, wrongly, on "literal" + std::to_string here).
  auto field = [&](const char* name, int64_t v) {
    s.append(name);
    s.append(std::to_string(v));
  };
  field(" m=", c.m);
  field(" n=", c.n);
  field(" k=", c.k);
  if (c.batch > 1) field(" batch=", c.batch);
  return s;
}

uint64_t call_id(const GemmCall& c) {
  // FNV-1a over the fields, the function's name by its characters.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xffu;
      h *= 1099511628211ull;
    }
  };
  for (const char* p = c.function ? c.function : ""; *p; ++p) mix(static_cast<unsigned char>(*p));
  mix(static_cast<uint64_t>(c.op_a) << 8 | static_cast<uint64_t>(c.op_b));
  mix(static_cast<uint64_t>(c.m));
  mix(static_cast<uint64_t>(c.n));
  mix(static_cast<uint64_t>(c.k));
  mix(static_cast<uint64_t>(c.batch));
  mix(static_cast<uint64_t>(static_cast<int64_t>(c.type)));
  return h;
}

std::optional<GemmCall> lt_gemm_call(const LtShapeApi& api, cublasLtMatmulDesc_t desc,
                                     cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t d) {
  if (!api.descGet || !api.layoutGet || !desc || !a || !d) return std::nullopt;
  auto layout = [&](cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t attr, auto* v) {
    size_t written = 0;
    return api.layoutGet(l, attr, v, sizeof *v, &written) == CUBLAS_STATUS_SUCCESS &&
           written == sizeof *v;
  };
  auto op = [&](cublasLtMatmulDescAttributes_t attr, int32_t* v) {
    size_t written = 0;
    return api.descGet(desc, attr, v, sizeof *v, &written) == CUBLAS_STATUS_SUCCESS &&
           written == sizeof *v;
  };
  int32_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N, batch = 1;
  uint32_t type = 0;
  uint64_t a_rows = 0, a_cols = 0, d_rows = 0, d_cols = 0;
  if (!op(CUBLASLT_MATMUL_DESC_TRANSA, &ta) || !op(CUBLASLT_MATMUL_DESC_TRANSB, &tb) ||
      !layout(a, CUBLASLT_MATRIX_LAYOUT_TYPE, &type) ||
      !layout(a, CUBLASLT_MATRIX_LAYOUT_ROWS, &a_rows) ||
      !layout(a, CUBLASLT_MATRIX_LAYOUT_COLS, &a_cols) ||
      !layout(d, CUBLASLT_MATRIX_LAYOUT_ROWS, &d_rows) ||
      !layout(d, CUBLASLT_MATRIX_LAYOUT_COLS, &d_cols))
    return std::nullopt;
  if (!layout(d, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch)) batch = 1;
  GemmCall c;
  c.function = "cublasLtMatmul";
  c.op_a = op_letter(ta);
  c.op_b = op_letter(tb);
  c.m = static_cast<int64_t>(d_rows);
  c.n = static_cast<int64_t>(d_cols);
  c.k = static_cast<int64_t>(ta == CUBLAS_OP_N ? a_cols : a_rows);
  c.batch = batch > 1 ? batch : 1;
  c.type = static_cast<int>(type);
  return c;
}

}  // namespace cco::preload
