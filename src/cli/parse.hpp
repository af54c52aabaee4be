// One CLI11 parse for every subcommand: bench's parse_app (CLI11's errors in the house wording,
// bench::cli_error_text), its UsageError rethrown as the CLI's Usage (exit 2).
#pragma once

#include <CLI/CLI.hpp>

#include <cctype>
#include <string>
#include <vector>

#include "bench/options.hpp"
#include "cli/commands.hpp"

namespace cco::cli {

inline void parse_cli(CLI::App& app, const std::vector<std::string>& args) {
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
