// The workload language's entry points and the Step's own methods (workload.hpp).
#include "workload/workload.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <sstream>

#include "model/read_file.hpp"
#include "workload/builder.hpp"
#include "workload/detail.hpp"

namespace cco::workload {

using namespace cco::model;
using detail::format_pos;

StepError::StepError(std::string file, SourcePos pos, std::string message)
    : Error(format_pos(file, pos) + ": " + message),
      file_(std::move(file)),
      pos_(pos),
      message_(std::move(message)) {}

const char* to_string(OpKind k) {
  switch (k) {
    case OpKind::Gemm:
      return "gemm";
    case OpKind::Elementwise:
      return "elementwise";
    case OpKind::Norm:
      return "norm";
    case OpKind::Collective:
      return "collective";
  }
  return "?";
}

const char* to_string(GemmEngine e) {
  return e == GemmEngine::Builtin ? "builtin" : "cublaslt";
}
const char* to_string(StreamId s) {
  return s == StreamId::Comm ? "comm" : "compute";
}

double StepOp::flops() const {
  return kind == OpKind::Gemm ? gemm_flops(m, n, k) : 0.0;
}

double StepOp::traffic() const {
  const double e = static_cast<double>(dtype_size(dtype));
  switch (kind) {
    case OpKind::Gemm:
      return e * (static_cast<double>(m) * static_cast<double>(k) +
                  static_cast<double>(k) * static_cast<double>(n) +
                  static_cast<double>(m) * static_cast<double>(n));
    case OpKind::Elementwise:
    case OpKind::Norm:
      return 3.0 * static_cast<double>(bytes);
    case OpKind::Collective:
      return static_cast<double>(bytes);
  }
  return 0;
}

int64_t StepOp::send_elements(int nranks) const {
  const int64_t total = bytes / static_cast<int64_t>(dtype_size(dtype));
  return coll == Collective::AllGather ? total / nranks : total;
}

int64_t StepOp::recv_elements(int nranks) const {
  const int64_t total = bytes / static_cast<int64_t>(dtype_size(dtype));
  return coll == Collective::ReduceScatter ? total / nranks : total;
}

int64_t StepOp::nccl_count(int nranks) const {
  const int64_t total = bytes / static_cast<int64_t>(dtype_size(dtype));
  switch (coll) {
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll:
      return total / nranks;
    default:
      return total;
  }
}

int Step::find_op(std::string_view id) const {
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (ops[i].id == id) return static_cast<int>(i);
  return -1;
}

const StepParam* Step::param(std::string_view nm) const {
  for (const auto& p : params)
    if (p.name == nm) return &p;
  return nullptr;
}

int pattern_mod(DType t, int nranks) {
  const double exact = t == DType::BF16 ? 256 : t == DType::F16 ? 2048 : 16777216;
  const double n = std::max(1, nranks);
  const double top = std::max(n * (n + 1) / 2, n);  // a sum over ranks of scales r + 1
  return static_cast<int>(std::clamp(std::floor(exact / top), 1.0, 7.0));
}

Step parse_step(std::string_view text, const std::string& file, const StepLoadOptions& opt) {
  if (opt.nranks < 1) throw StepError(file, {}, "the step needs at least one rank");
  const detail::Node root = detail::read_json(text, file);
  detail::Builder b(file, opt);
  return b.build(root);
}

Step load_step(const std::string& path, const StepLoadOptions& opt) {
  std::string text;
  try {
    text = read_file(path, kWorkloadFileLimit);
  } catch (const FileError& e) {
    throw StepError(path, {}, "the workload file " + e.reason());
  }
  return parse_step(text, path, opt);
}

std::pair<std::string, std::string> parse_override(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) throw Error("--param " + text + ": expected NAME=VALUE");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

}  // namespace cco::workload
