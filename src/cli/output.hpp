// The CLI's output files, one way for every command (issue 33, "never destroy input"): an output
// that names one of the command's inputs (the same device and inode) is refused before anything
// runs, and a file is written whole or not at all (model::write_file: a temporary file renamed
// into place). "-" is standard output.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.hpp"
#include "model/read_file.hpp"

namespace cco::cli {

/// Throws Usage ("FLAG PATH names the input IN: COMMAND never overwrites its inputs") when `path`
/// names one of `inputs`; "" and "-" name none.
inline void refuse_input(const std::string& flag, const std::string& path,
                         const std::vector<std::string>& inputs, const std::string& command) {
  if (path.empty() || path == "-") return;
  for (const auto& in : inputs)
    if (!in.empty() && model::same_file(path, in))
      throw Usage(flag + " " + path + " names the input " + in + ": " + command +
                  " never overwrites its inputs");
}

/// Writes `text` to `path` ("-": standard output; "": nothing) whole or not at all. Throws
/// model::WriteError naming the path.
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
