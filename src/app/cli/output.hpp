// The CLI's output files, one way for every command (issue 33, "never destroy input"): an output
// that names one of the command's inputs (the same device and inode) is refused before anything
// runs, and a file is written whole or not at all (model::write_file: a temporary file renamed
// into place). "-" is standard output.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.hpp"
#include "model/read_file.hpp"

namespace cco::cli {

/// Checks an output before anything runs (a long run must not find out at its end that it cannot
/// write, review of `cco run --compare-json`). Throws Usage when `path` names one of `inputs`
/// ("FLAG PATH names the input IN: COMMAND never overwrites its inputs"), is a folder, a symbolic
/// link to nothing or a write-protected file (model::output_problem), or lies in a folder that
/// does not exist or cannot be written; "" and "-" name none.
inline void refuse_input(const std::string& flag, const std::string& path,
                         const std::vector<std::string>& inputs, const std::string& command) {
  if (path.empty() || path == "-") return;
  for (const auto& in : inputs)
    if (!in.empty() && model::same_file(path, in))
      throw Usage(flag + " " + path + " names the input " + in + ": " + command +
                  " never overwrites its inputs");
  if (const std::string why = model::output_problem(path); !why.empty())
    throw Usage(flag + " " + path + ": " + why);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw Usage(flag + " " + path + ": a folder, not a file");
    if (!S_ISREG(st.st_mode)) return;  // /dev/stdout, a pipe: written as they are
  }
  const auto slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (!model::is_directory(dir))
    throw Usage(flag + " " + path + ": the folder " + dir + " does not exist");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw Usage(flag + " " + path + ": cannot write in " + dir + " (" + std::strerror(errno) + ")");
}

/// Writes `text` to `path` ("-": standard output; "": nothing) whole or not at all. Throws
/// model::WriteError naming the path.
/// Every file a launched command reads that cco can see: each argument that names an existing
/// regular file (the program, its script, its data; also the FILE of --opt=FILE), at most 4096.
inline std::vector<std::string> command_files(const std::vector<std::string>& command) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < command.size() && i < 4096; ++i) {
    std::string a = command[i];
    if (const auto eq = a.find('='); a.rfind('-', 0) == 0 && eq != std::string::npos)
      a = a.substr(eq + 1);
    if (!a.empty() && model::is_regular_file(a)) out.push_back(a);
  }
  return out;
}

inline void write_output(const std::string& path, std::string_view text) {
  if (path.empty()) return;
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return;
  }
  model::write_file(path, text);
}

}  // namespace cco::cli
