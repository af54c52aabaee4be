#include "model/types.hpp"

#include "model/ascii.hpp"
#include "model/limits.hpp"

namespace cco::model {
const char* to_string(DType t) {
  switch (t) {
    case DType::F32: return "float";
    case DType::F16: return "half";
    case DType::BF16: return "bfloat16";
  }
  return "?";
}

DType parse_dtype(std::string_view name) {
  const std::string k = ascii_lower(name);
  if (k == "float" || k == "fp32" || k == "f32" || k == "float32") return DType::F32;
  if (k == "half" || k == "fp16" || k == "f16" || k == "float16") return DType::F16;
  if (k == "bfloat16" || k == "bf16") return DType::BF16;
  throw Error("unknown data type '" + std::string(name) + "' (known: float, half, bfloat16)");
}

std::size_t dtype_size(DType t) { return t == DType::F32 ? 4 : 2; }

const char* to_string(RedOp op) {
  switch (op) {
    case RedOp::Sum: return "sum";
    case RedOp::Prod: return "prod";
    case RedOp::Min: return "min";
    case RedOp::Max: return "max";
    case RedOp::Avg: return "avg";
  }
  return "?";
}

RedOp parse_redop(std::string_view name) {
  const std::string k = ascii_lower(name);
  if (k == "sum") return RedOp::Sum;
  if (k == "prod") return RedOp::Prod;
  if (k == "min") return RedOp::Min;
  if (k == "max") return RedOp::Max;
  if (k == "avg") return RedOp::Avg;
  throw Error("unknown reduction '" + std::string(name) + "' (known: sum, prod, min, max, avg)");
}

const char* to_string(ComputeKind k) {
  switch (k) {
    case ComputeKind::CublasLt: return "cublaslt";
    case ComputeKind::Builtin: return "builtin";
    case ComputeKind::MemBound: return "membound";
  }
  return "?";
}

ComputeKind parse_compute(std::string_view name) {
  const std::string k = ascii_lower(name);
  if (k == "cublaslt" || k == "gemm" || k == "lt") return ComputeKind::CublasLt;
  if (k == "builtin") return ComputeKind::Builtin;
  if (k == "membound" || k == "memory") return ComputeKind::MemBound;
  throw Error("unknown compute kind '" + std::string(name) + "' (known: cublaslt, builtin, membound)");
}

std::string version_from_code(long long code) {
  if (code <= 0) return {};
  return std::to_string(code / 10000) + "." + std::to_string((code % 10000) / 100) + "." +
         std::to_string(code % 100);
}

std::string cuda_version_from_code(int code) {
  if (code <= 0) return {};
  return std::to_string(code / 1000) + "." + std::to_string((code % 1000) / 10);
}

const char* to_string(CommRegister r) {
  switch (r) {
    case CommRegister::None: return "none";
    case CommRegister::Buffer: return "buffer";
    case CommRegister::Window: return "window";
  }
  return "?";
}

CommRegister parse_register(std::string_view name) {
  const std::string k = ascii_lower(name);
  if (k == "none") return CommRegister::None;
  if (k == "buffer") return CommRegister::Buffer;
  if (k == "window") return CommRegister::Window;
  throw Error("unknown registration '" + std::string(name) + "' (known: none, buffer, window)");
}

int comm_register_number(std::optional<CommRegister> r) { return r ? static_cast<int>(*r) : -1; }

std::optional<CommRegister> comm_register_from_number(int n) {
  switch (n) {
    case -1: return std::nullopt;
    case 0: return CommRegister::None;
    case 1: return CommRegister::Buffer;
    case 2: return CommRegister::Window;
  }
  throw Error("unknown registration number " + std::to_string(n) + " (known: -1 for none given, 0, 1, 2)");
}

const char* to_string(CtaPolicy p) {
  switch (p) {
    case CtaPolicy::Default: return "default";
    case CtaPolicy::Efficiency: return "efficiency";
    case CtaPolicy::Zero: return "zero";
  }
  return "?";
}

CtaPolicy parse_cta_policy(std::string_view name) {
  const std::string k = ascii_lower(name);
  if (k == "default" || k == "0") return CtaPolicy::Default;
  if (k == "efficiency" || k == "1") return CtaPolicy::Efficiency;
  if (k == "zero" || k == "2") return CtaPolicy::Zero;
  throw Error("unknown CTA policy '" + std::string(name) +
              "' (known: default or 0, efficiency or 1, zero or 2)");
}

int cta_policy_number(std::optional<CtaPolicy> p) { return p ? static_cast<int>(*p) : -1; }

std::optional<CtaPolicy> cta_policy_from_number(int n) {
  switch (n) {
    case -1: return std::nullopt;
    case 0: return CtaPolicy::Default;
    case 1: return CtaPolicy::Efficiency;
    case 2: return CtaPolicy::Zero;
  }
  throw Error("unknown CTA policy number " + std::to_string(n) + " (known: -1 for none, 0, 1, 2)");
}

}  // namespace cco::model
