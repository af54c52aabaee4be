// cco: the command-line entry point. Errors are caught here once and printed as one line:
// "cco <cmd>: error: ..." with exit code 2 for bad input and 1 for everything else.
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "model/version.hpp"
#include "bench/options.hpp"
#include "bootstrap/bootstrap.hpp"
#include "cli/commands.hpp"
#include "cli/parse.hpp"
#include "cli/help_text.hpp"  // generated from docs/cli/*.md
#include "cli/report_cmd.hpp"
#include "cli/run_cmd.hpp"
#include "model/limits.hpp"

#ifdef CCO_HAVE_CUDA
#include "bench/runner.hpp"
#include "runtime/check.hpp"
#endif

namespace cco::cli {

bool wants_help(const std::vector<std::string>& args) {
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--") break;
    if (args[i] == "-h" || args[i] == "--help") return true;
  }
  return false;
}


}  // namespace cco::cli

namespace {

int run_command(const std::vector<std::string>& args) {
  using namespace cco;
  if (args.empty()) {
    std::fputs(cli::help::cco, stderr);
    return 2;
  }
  const std::string cmd = args[0];
  if (cmd == "-h" || cmd == "--help" || (cmd == "help" && args.size() == 1)) {
    std::fputs(cli::help::cco, stdout);
    return 0;
  }
  if (cmd == "--version") {
    std::printf("ccoverlap %s\n", cco::model::kVersion);
    return 0;
  }
  struct Cmd {
    const char* name;
    const char* help;
    int (*fn)(const std::vector<std::string>&);
  };
  const Cmd cmds[] = {{"info", cli::help::info, cli::info_main},
                      {"plan", cli::help::plan, cli::plan_main},
                      {"bench", cli::help::bench, cli::bench_main},
                      {"tune", cli::help::tune, cli::tune_main},
                      {"run", cli::help::run, cli::run_main},
                      {"report", cli::help::report, cli::report_main},
                      {"doctor", cli::help::doctor, cli::doctor_main}};
  if (cmd == "help") {  // cco help CMD: the command's --help
    for (const auto& c : cmds)
      if (args[1] == c.name) {
        std::fputs(c.help, stdout);
        return 0;
      }
    std::fprintf(stderr, "cco help: error: unknown command '%s' (commands: info, plan, bench, tune, "
                         "run, report, doctor)\n", args[1].c_str());
    return 2;
  }
  for (const auto& c : cmds) {
    if (cmd != c.name) continue;
    if (cli::wants_help(args)) {
      std::fputs(c.help, stdout);
      return 0;
    }
    try {
      return c.fn(args);
    } catch (const cli::OptionsListed&) {
      return 0;  // CCO_LIST_OPTIONS=1: the options were listed
    } catch (const cli::Usage& e) {
      std::fprintf(stderr, "cco %s: error: %s (see cco %s --help)\n", c.name, e.what(), c.name);
      return 2;
    } catch (const bench::UsageError& e) {
      std::fprintf(stderr, "cco %s: error: %s (see cco %s --help)\n", c.name, e.what(), c.name);
      return 2;
    } catch (const boot::ConfigError& e) {
      std::fprintf(stderr, "cco %s: error: %s\n", c.name, e.what());
      return 2;
    } catch (const model::Error& e) {
      std::fprintf(stderr, "cco %s: error: %s\n", c.name, e.what());
      return 2;
#ifdef CCO_HAVE_CUDA
    } catch (const bench::NoGpu& e) {
      std::fprintf(stderr, "cco %s: error: %s\n", c.name, e.what());
      return 1;
#endif
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cco %s: error: %s\n", c.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "cco: error: unknown command '%s' (commands: info, plan, bench, tune, run, report, doctor; see cco --help)\n",
               cmd.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // A parent that ignores SIGCHLD hands that on: the kernel would reap cco's children itself, and
  // every wait for the program's exit status would fail (exit 7 read as 0, 1 or 3; issue 46).
  // Reset before anything starts a child, which then inherits the default too.
  std::signal(SIGCHLD, SIG_DFL);
  const int rc = run_command(std::vector<std::string>(argv + 1, argv + argc));
  // What went to standard output must have arrived: a full disk or /dev/full failed in silence
  // with exit 0 (review). Files named by an option are checked where they are written.
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    const int e = errno;
    std::fprintf(stderr, "cco: error: cannot write to standard output%s%s\n", e ? ": " : "",
                 e ? std::strerror(e) : "");
    return rc == 0 ? 1 : rc;
  }
  return rc;
}
