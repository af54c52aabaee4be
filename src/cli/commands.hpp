// The subcommands of `cco`. Each takes its arguments (args[0] is the command name) and returns
// the process exit code; bad input throws cco::cli::Usage (exit 2), everything else that throws
// is caught in main and reported as one line (exit 1).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace cco::cli {

class Usage : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

int plan_main(const std::vector<std::string>& args);
int info_main(const std::vector<std::string>& args);
int bench_main(const std::vector<std::string>& args);
int tune_main(const std::vector<std::string>& args);
int doctor_main(const std::vector<std::string>& args);

/// True when args holds -h or --help (before a "--").
bool wants_help(const std::vector<std::string>& args);

}  // namespace cco::cli
