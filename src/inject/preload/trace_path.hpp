// Where a process traced under the preload library writes its trace (CCO_TRACE, docs/PRELOAD.md).
// Header-only and pure, so `cco run` checks a pattern with exactly the rules the library expands.
//
//   %p  the process id
//   %r  the rank: RANK, else OMPI_COMM_WORLD_RANK, else SLURM_PROCID, else LOCAL_RANK (the first
//       that is set to a non-negative integer); the process id when none is
//   %%  a literal %
//
// A pattern without %p or %r names one file: the command `cco run` started (its process id is
// CCO_TRACE_PID) writes it as given; every other process appends ".<pid>", so torchrun workers,
// MPI ranks and other children never overwrite each other.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cco::preload {

/// The variables a rank is read from, in order.
inline constexpr const char* kRankVariables[] = {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID",
                                                 "LOCAL_RANK"};

/// The rank of this process from the first of kRankVariables holding a non-negative integer
/// (others are skipped), or nullopt.
inline std::optional<int> rank_from_env(const std::function<const char*(const char*)>& get) {
  for (const char* name : kRankVariables) {
    const char* v = get(name);
    if (!v || !*v) continue;
    char* end = nullptr;
    const long r = std::strtol(v, &end, 10);
    if (*end != '\0' || r < 0 || r > 1000000000L || v[0] == '-' || v[0] == '+' || v[0] == ' ')
      continue;
    return static_cast<int>(r);
  }
  return std::nullopt;
}

/// Whether every rank of the job runs on this host, from the launcher's variables alone (so every
/// rank answers alike): no rank variable (one process), torchrun's LOCAL_WORLD_SIZE equal to its
/// WORLD_SIZE, Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE equal to OMPI_COMM_WORLD_SIZE, or Slurm's
/// SLURM_NNODES (SLURM_JOB_NUM_NODES) of 1. Anything else, unknown included, is false. Decisions
/// shared through a folder (cco run --compare's check) need one host: its temporary folder is not
/// seen from another.
inline bool ranks_on_one_host(const std::function<const char*(const char*)>& get) {
  if (!rank_from_env(get)) return true;
  const auto same = [&](const char* a, const char* b) {
    const char* x = get(a);
    const char* y = get(b);
    return x && y && *x && std::string_view(x) == std::string_view(y);
  };
  const auto one = [&](const char* a) {
    const char* x = get(a);
    return x && std::string_view(x) == "1";
  };
  return same("LOCAL_WORLD_SIZE", "WORLD_SIZE") ||
         same("OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_SIZE") || one("SLURM_NNODES") ||
         one("SLURM_JOB_NUM_NODES");
}

/// "" when `pattern` is a valid CCO_TRACE value, else what is wrong with it (one phrase).
inline std::string check_trace_pattern(std::string_view pattern) {
  if (pattern.empty()) return "is empty";
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') continue;
    if (i + 1 >= pattern.size()) return "ends in a lone % (write %% for a literal %)";
    const char c = pattern[i + 1];
    if (c != 'p' && c != 'r' && c != '%')
      return std::string("has an unknown placeholder %") + c + " (known: %p pid, %r rank, %% a %)";
    ++i;
  }
  if (pattern.back() == '/') return "names a folder, not a file";
  return "";
}

/// True when `pattern` holds %p or %r (so processes get distinct names by themselves).
inline bool trace_pattern_has_placeholder(std::string_view pattern) {
  for (std::size_t i = 0; i + 1 < pattern.size(); ++i) {
    if (pattern[i] != '%') continue;
    if (pattern[i + 1] == 'p' || pattern[i + 1] == 'r') return true;
    ++i;  // %%
  }
  return false;
}

/// The file a process writes: %p -> pid, %r -> rank (pid when nullopt), %% -> %. Without a
/// placeholder, `top_process` keeps the pattern as is and every other process appends ".<pid>".
/// Assumes check_trace_pattern(pattern) is "" (an unknown placeholder is copied as is).
inline std::string expand_trace_path(std::string_view pattern, int64_t pid, std::optional<int> rank,
                                     bool top_process) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c != '%' || i + 1 >= pattern.size()) {
      out.push_back(c);
      continue;
    }
    const char n = pattern[++i];
    if (n == 'p')
      out += std::to_string(pid);
    else if (n == 'r')
      out += rank ? std::to_string(*rank) : std::to_string(pid);
    else if (n == '%')
      out.push_back('%');
    else {
      out.push_back('%');
      out.push_back(n);
    }
  }
  if (!trace_pattern_has_placeholder(pattern) && !top_process) {
    out.push_back('.');
    out += std::to_string(pid);
  }
  return out;
}

/// True when a process could write its trace over `path` (cco run refuses a --trace that may
/// name one of its inputs): `path` as expand_trace_path may make it from `pattern`, %p and %r
/// matching one or more digits; without a placeholder, also PATTERN.<pid>. Both as given (the
/// caller makes them absolute alike).
inline bool trace_pattern_may_name(std::string_view pattern, std::string_view path) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (!trace_pattern_has_placeholder(pattern)) {
    std::string plain;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
      plain.push_back(pattern[i]);
      if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == '%') ++i;
    }
    if (path == plain) return true;
    if (path.size() <= plain.size() + 1 || path.substr(0, plain.size()) != plain ||
        path[plain.size()] != '.')
      return false;
    for (std::size_t i = plain.size() + 1; i < path.size(); ++i)
      if (!digit(path[i])) return false;
    return true;
  }
  // Matching with %p/%r as digit runs: positions (i in pattern, j in path) still possible.
  std::vector<std::pair<std::size_t, std::size_t>> todo{{0, 0}};
  std::size_t steps = 0;
  while (!todo.empty() && ++steps < 100000) {
    auto [i, j] = todo.back();
    todo.pop_back();
    if (i == pattern.size()) {
      if (j == path.size()) return true;
      continue;
    }
    if (pattern[i] == '%' && i + 1 < pattern.size() && (pattern[i + 1] == 'p' || pattern[i + 1] == 'r')) {
      for (std::size_t k = j; k < path.size() && digit(path[k]); ++k) todo.push_back({i + 2, k + 1});
      continue;
    }
    const bool pct = pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == '%';
    if (j < path.size() && path[j] == pattern[i]) todo.push_back({i + (pct ? 2 : 1), j + 1});
  }
  return false;
}

/// Whether this process is the command `cco run` started: CCO_TRACE_PID (cco run's own pid,
/// which the command keeps since cco run execs it) equals `pid`. Unset or empty (CCO_TRACE set
/// by hand): every process counts as the command.
inline bool trace_top_process(const char* trace_pid, int64_t pid) {
  if (!trace_pid || !*trace_pid) return true;
  char* end = nullptr;
  const long long v = std::strtoll(trace_pid, &end, 10);
  return *end == '\0' && v == pid;
}

}  // namespace cco::preload
