// Element types shared by workloads, parsers and reports. GPU-free.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cco::model {

enum class DType { F32, F16, BF16 };

/// "float", "half", "bfloat16" (nccl-tests' spellings).
const char* to_string(DType t);
/// Accepts nccl-tests' and common spellings: float/fp32/f32, half/fp16/f16, bfloat16/bf16.
/// Throws Error listing them when unknown.
DType parse_dtype(std::string_view name);
std::size_t dtype_size(DType t);

/// Reduction operators of the collectives: sum, prod, min, max, avg (nccl-tests -o).
enum class RedOp { Sum, Prod, Min, Max, Avg };
const char* to_string(RedOp op);
RedOp parse_redop(std::string_view name);

/// The compute part of a benchmark: a cuBLASLt GEMM (vendor kernels), the built-in tiled GEMM
/// (a launch we control), or a memory-bound kernel.
enum class ComputeKind { CublasLt, Builtin, MemBound };
/// "cublaslt", "builtin", "membound".
const char* to_string(ComputeKind k);
/// Accepts the names above and "gemm"/"lt" for cublaslt, "memory" for membound. Throws Error.
ComputeKind parse_compute(std::string_view name);

/// How a collective's buffers are registered with NCCL: not at all (cudaMalloc), as user
/// buffers (ncclMemAlloc + ncclCommRegister: NCCL may skip its staging copies), or as a
/// symmetric window (ncclMemAlloc + ncclCommWindowRegister with NCCL_WIN_COLL_SYMMETRIC: NCCL
/// may run its symmetric kernels). NCCL decides per call whether registration is used.
enum class CommRegister { None, Buffer, Window };
/// "none", "buffer", "window".
const char* to_string(CommRegister r);

/// "X.Y.Z" of a library version code X*10000 + Y*100 + Z (NCCL 2.9+ as ncclGetVersion gives it,
/// cuBLASLt as cublasLtGetVersion does); empty for <= 0.
std::string version_from_code(long long code);
/// "X.Y" of a CUDA version code X*1000 + Y*10 (cudaDriverGetVersion, cuDriverGetVersion,
/// cudaRuntimeGetVersion); empty for <= 0.
std::string cuda_version_from_code(int code);
/// Accepts the names above. Throws Error listing them.
CommRegister parse_register(std::string_view name);
/// A registration as a number, the encoding of JSON and the rows rank 0 sends to the other ranks:
/// none 0, buffer 1, window 2, or -1 for none given (std::nullopt: the run's own).
/// comm_register_from_number reads it back; any other number throws Error.
int comm_register_number(std::optional<CommRegister> r);
std::optional<CommRegister> comm_register_from_number(int n);

/// NCCL's CTA policies (ncclConfig_t.CTAPolicy); where each applies: model/cta_policy.hpp.
enum class CtaPolicy { Default = 0, Efficiency = 1, Zero = 2 };
/// "default", "efficiency", "zero".
const char* to_string(CtaPolicy p);
/// Accepts the names above and NCCL's numbers 0, 1, 2. Throws Error listing them.
CtaPolicy parse_cta_policy(std::string_view name);
/// A policy as a number, the one encoding of files, JSON and the rows rank 0 sends to the other
/// ranks: NCCL's (0, 1, 2), or -1 for none (std::nullopt: NCCL's default, unset).
/// cta_policy_from_number reads it back; any other number throws Error.
int cta_policy_number(std::optional<CtaPolicy> p);
std::optional<CtaPolicy> cta_policy_from_number(int n);

}  // namespace cco::model
