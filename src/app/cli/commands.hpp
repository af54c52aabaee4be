// The subcommands of `cco`. Each takes its arguments (args[0] is the command name) and returns
// the process exit code; bad input throws cco::cli::Usage (exit 2), everything else that throws
// is caught in main and reported as one line (exit 1).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace cco::cli {

/// What bench and tune say in a build without CUDA: what measuring needs, and what works anyway.
inline constexpr const char* kNoCudaBuild =
    "this cco was built without CUDA (CCO_ENABLE_CUDA=OFF): measuring needs a build with the CUDA "
    "Toolkit (cmake -DCCO_ENABLE_CUDA=ON) and a GPU; report, plan, doctor and --validate work "
    "without";

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
