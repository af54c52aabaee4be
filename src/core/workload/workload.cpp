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

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "model/env_names.hpp"
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
    throw StepError(path, {}, e.reason());  // "PATH: a folder, not a file", "...: cannot be read (...)"
  }
  return parse_step(text, path, opt);
}

std::vector<std::string> workload_dirs() {
  std::vector<std::string> dirs;
  auto add = [&](const std::string& d) {
    if (!d.empty() && model::is_directory(d) && std::find(dirs.begin(), dirs.end(), d) == dirs.end())
      dirs.push_back(d);
  };
  if (const char* env = std::getenv(cco::env::kWorkloadPath)) {
    std::string list = env;
    for (std::size_t at = 0; at <= list.size();) {
      const std::size_t colon = std::min(list.find(':', at), list.size());
      add(list.substr(at, colon - at));
      at = colon + 1;
    }
  }
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    const std::filesystem::path bin = std::filesystem::path(std::string(exe, static_cast<std::size_t>(n)));
    add((bin.parent_path() / ".." / "share" / "ccoverlap" / "workloads").lexically_normal().string());
  }
#ifdef CCO_SOURCE_WORKLOADS
  add(CCO_SOURCE_WORKLOADS);
#endif
  return dirs;
}

std::vector<std::string> shipped_workloads(const std::vector<std::string>& dirs) {
  std::set<std::string> names;
  for (const auto& d : dirs) {
    std::error_code ec;
    for (std::filesystem::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec)) {
      const auto& p = it->path();
      if (p.extension() == ".json" && model::is_regular_file(p.string())) names.insert(p.stem().string());
      if (names.size() >= 1000) break;  // bounded: a folder of workloads, not a file system
    }
  }
  return {names.begin(), names.end()};
}

std::string find_workload(const std::string& name, const std::vector<std::string>& dirs) {
  if (name.empty() || name.find('/') != std::string::npos) return name;
  struct stat st {};
  if (::stat(name.c_str(), &st) == 0) return name;  // a file here (or something load_step refuses)
  // NAME.json here comes before the shipped one: a local copy is what the user edits (and an
  // output named like it is then refused as the input, not written over it).
  if (model::is_regular_file(name + ".json")) return name + ".json";
  for (const auto& d : dirs)
    for (const std::string& f : {d + "/" + name, d + "/" + name + ".json"})
      if (model::is_regular_file(f)) return f;
  const auto names = shipped_workloads(dirs);
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  throw Error("--workload " + name + ": no such file, and no shipped workload of that name" +
              (names.empty() ? std::string(" (no workload folder found; CCO_WORKLOAD_PATH names more)")
                             : " (shipped: " + list + ")"));
}

void check_readable_json(const std::string& path) {
  std::string text;
  try {
    text = read_file(path, kWorkloadFileLimit);
  } catch (const FileError& e) {
    throw StepError(path, {}, e.reason());
  }
  (void)detail::read_json(text, path);
}

std::pair<std::string, std::string> parse_override(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) throw Error("--param " + text + ": expected NAME=VALUE");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

}  // namespace cco::workload
