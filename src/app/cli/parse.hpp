// One CLI11 parse for every subcommand: bench's parse_app (CLI11's errors in the house wording,
// bench::cli_error_text), its UsageError rethrown as the CLI's Usage (exit 2).
#pragma once

#include <CLI/CLI.hpp>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/options.hpp"
#include "cli/commands.hpp"
#include "model/env_names.hpp"

namespace cco::cli {

/// Thrown by parse_cli under CCO_LIST_OPTIONS=1 once the options are listed: the command exits 0
/// without doing anything (main catches it).
struct OptionsListed {};

/// CCO_LIST_OPTIONS=1 (the completion test, tests/app/cli/test_completion.sh): every spelling of every
/// option the parser `app` accepts, one per line on standard output ("--name", "-x"), then
/// OptionsListed. The parser's own table, so completion and help pages can be checked against it.
inline void list_options_if_asked(const CLI::App& app) {
  const char* v = std::getenv(cco::env::kListOptions);
  if (!v || std::string(v) != "1") return;
  for (const CLI::Option* o : app.get_options()) {
    for (const auto& n : o->get_lnames()) std::printf("--%s\n", n.c_str());
    for (const auto& n : o->get_snames()) std::printf("-%s\n", n.c_str());
  }
  std::fflush(stdout);
  throw OptionsListed{};
}

inline void parse_cli(CLI::App& app, const std::vector<std::string>& args) {
  list_options_if_asked(app);
  try {
    bench::parse_app(app, args);
  } catch (const bench::UsageError& e) {
    throw Usage(e.what());
  }
}

/// "X needs a value", or "X needs a range name" where the option declares its value's noun in
/// lower case with CLI11's type_name("range name") (CLI11's own type names are upper case).
inline std::string needs_value(const CLI::App& app, const std::string& name) {
  std::string noun = "value";
  if (const auto* o = app.get_option_no_throw(name)) {
    const std::string t = o->get_type_name();
    if (!t.empty() && std::islower(static_cast<unsigned char>(t[0]))) noun = t;
  }
  return name + " needs a " + noun;
}

/// The options of a command that runs a program (`cco run [options] [--] CMD ...`, `cco tune
/// [options] -- CMD ...`), parsed with CLI11 up to the program's command, which is returned.
/// The options end at "--" or (unless `need_separator`) at the first argument that is no option.
/// An option whose value would be "--" or empty "needs a value"; an unknown option is refused,
/// with `synopsis` after it. Throws Usage.
inline std::vector<std::string> parse_until_command(CLI::App& app, const std::vector<std::string>& args,
                                                    bool need_separator, const std::string& synopsis) {
  app.prefix_command(true);
  parse_cli(app, args);
  for (const auto* o : app.get_options())
    if (o->count() > 0 && o->get_type_size() > 0)  // options with a value, not flags
      for (const auto& v : o->results())
        if (v.empty() || v == "--") throw Usage(needs_value(app, o->get_name()));
  std::vector<std::string> command = app.remaining();
  // "--name=" in the options' part (the program's own arguments are its business): CLI11 took
  // the next argument as the value.
  for (std::size_t i = 1; i < args.size() - command.size(); ++i) {
    const auto& a = args[i];
    if (a.size() > 3 && a.compare(0, 2, "--") == 0 && a.back() == '=')
      throw Usage(needs_value(app, a.substr(0, a.size() - 1)));
  }
  if (!command.empty() && command.front() != "--") {
    const std::string& a = command.front();
    if (a.size() > 1 && a[0] == '-') {  // "--name=value": the name is what is unknown
      const std::string name = a.substr(0, a.rfind("--", 0) == 0 ? a.find('=') : a.npos);
      throw Usage("unknown option '" + name + "'" + bench::did_you_mean(app, name) + synopsis);
    }
    if (need_separator) throw Usage("unexpected argument '" + a + "' before --" + synopsis);
  }
  if (!command.empty() && command.front() == "--") command.erase(command.begin());
  return command;
}

}  // namespace cco::cli
