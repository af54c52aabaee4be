// `cco run` as cco's main runs it (same error handling), for tests that must not depend on how
// the command is wired into cco.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/run_cmd.hpp"
#include "model/limits.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args{"run"};
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  try {
    return cco::cli::run_main(args);
  } catch (const cco::cli::Usage& e) {
    std::fprintf(stderr, "cco run: error: %s (see cco run --help)\n", e.what());
    return 2;
  } catch (const cco::model::Error& e) {
    std::fprintf(stderr, "cco run: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cco run: error: %s\n", e.what());
    return 1;
  }
}
