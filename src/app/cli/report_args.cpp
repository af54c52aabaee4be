#include "cli/report_args.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>
#include <tuple>

#include "cli/commands.hpp"
#include "cli/parse.hpp"

namespace cco::cli {


double number_arg(const std::string& flag, const std::string& v) {
  try {
    std::size_t pos = 0;
    const double d = std::stod(v, &pos);
    if (pos != v.size() || !std::isfinite(d)) throw std::invalid_argument(v);
    return d;
  } catch (const std::exception&) {
    throw Usage(flag + ": expected a number, got '" + v + "'");
  }
}

/// --steps SPEC: auto, nvtx[:NAME], marks[:NAME], config:N, profiler, collectives or none.
trace::StepOptions step_spec(const std::string& flag, const std::string& arg) {
  trace::StepOptions o;
  const auto colon = arg.find(':');
  o.source = arg.substr(0, colon);
  if (colon != std::string::npos) o.name = arg.substr(colon + 1);
  if (o.source == "config") {  // config:N, the steps cco run --compare --trace ran under item N
    const std::string n = o.name;
    if (n.empty() || n.size() > 3 || !std::all_of(n.begin(), n.end(), [](unsigned char c) { return std::isdigit(c) != 0; }))
      throw Usage(flag + ": config:N takes the item's place in --compare, 0 to 999, got '" + arg +
                  "'");
    // Source "auto": the configuration makes the library's marks the source; an --alone trace
    // whose configuration is cleared (no --alone-steps) finds its own steps as usual.
    o.source = "auto";
    o.name.clear();
    o.config = std::stoi(n);
    return o;
  }
  const auto& src = o.source;
  if (src != "auto" && src != "nvtx" && src != "marks" && src != "collectives" &&
      src != "profiler" && src != "none")
    throw Usage(flag + ": expected auto, nvtx[:NAME], marks[:NAME], config:N, profiler, "
                "collectives or none, got '" + arg + "'");
  if (colon != std::string::npos && src != "nvtx" && src != "marks")
    throw Usage(flag + ": only nvtx:NAME and marks:NAME take a name, got '" + arg + "'");
  if (colon != std::string::npos && (o.name.empty() || o.name.size() > 255))
    throw Usage(flag + " " + src + ":NAME: NAME must be 1 to 255 characters");
  return o;
}

ReportArgs parse_report_args(const std::vector<std::string>& args) {
  ReportArgs a;
  CLI::App app{"cco report", "report"};
  app.set_help_flag();  // help text comes from docs/cli/report.md, handled by the CLI
  std::string json_arg, from, to, x_arg, width;
  // --json alone: standard output; --json=FILE a file (the next argument stays an input).
  auto* json_opt = app.add_flag("--json{-}", json_arg);
  auto* svg_opt = app.add_option("--svg", a.svg);
  auto* from_opt = app.add_option("--from", from);
  auto* to_opt = app.add_option("--to", to);
  auto* range_opt = app.add_option("--range", a.range);
  app.add_option("--x", x_arg);
  app.add_option("--width", width);
  app.add_option("--title", a.title);
  auto* format_opt = app.add_option("--format", a.format);
  auto* merge_opt = app.add_option("--merge", a.merge);
  std::string steps_arg, warmup_arg, alone_steps_arg;
  auto* steps_opt = app.add_option("--steps", steps_arg);
  auto* warmup_opt = app.add_option("--warmup-steps", warmup_arg);
  auto* alone_opt = app.add_option("--alone", a.alone);
  auto* alone_steps_opt = app.add_option("--alone-steps", alone_steps_arg);
  app.add_flag("--whole", a.whole);
  app.add_flag("--kernels", a.kernels);
  app.add_option("files", a.files);
  // CLI11 reads "--json=" as the bare flag; an empty file name is a mistake (an unset variable).
  for (const auto& arg : args)
    if (arg == "--json=") throw Usage("--json=FILE: empty file name");
  parse_cli(app, args);

  if (json_opt->count() > 1) throw Usage("--json given twice");
  if (json_opt->count() > 0) {
    if (json_arg.empty()) throw Usage("--json=FILE: empty file name");
    if (json_arg == "-") a.json_stdout = true;
    else a.json_file = json_arg;
  }
  for (auto* o : {svg_opt, range_opt, merge_opt})
    if (o->count() > 0 && o->as<std::string>().empty())
      throw Usage(o->get_name() + " needs a value (got an empty one)");
  if (steps_opt->count() > 0) a.steps = step_spec("--steps", steps_arg);
  if (alone_steps_opt->count() > 0) {
    if (alone_opt->count() == 0) throw Usage("--alone-steps needs --alone");
    a.alone_steps = step_spec("--alone-steps", alone_steps_arg);
  }
  if (warmup_opt->count() > 0) {
    const double w = number_arg("--warmup-steps", warmup_arg);
    if (w < 0 || w > 1e6 || w != std::floor(w))
      throw Usage("--warmup-steps: expected a whole number 0..1000000, got '" + warmup_arg + "'");
    a.steps.warmup = static_cast<int>(w);
    // Both sides leave out as many (an explicit --alone-steps would otherwise keep the default).
    if (a.alone_steps && !a.alone_steps->warmup) a.alone_steps->warmup = a.steps.warmup;
  }
  for (const auto& f : a.alone)
    if (f.empty()) throw Usage("--alone needs a file name (got an empty one)");
  (void)alone_opt;
  // The window's ends in microseconds from the first kernel: at most 1e13 (115 days), so that
  // the trace's start plus the offset in nanoseconds stays far from int64's end (1e16 overflowed
  // and silently analysed the whole trace: review).
  constexpr double kMaxOffsetUs = 1e13;
  for (auto [opt, text, out, name] : {std::tuple{from_opt, &from, &a.from_us, "--from"},
                                      std::tuple{to_opt, &to, &a.to_us, "--to"}}) {
    if (opt->count() == 0) continue;
    if (text->empty()) throw Usage(std::string(name) + " needs a value (got an empty one)");
    *out = number_arg(name, *text);
    if (**out < 0 || **out > kMaxOffsetUs)
      throw Usage(std::string(name) + ": microseconds from the first kernel, 0..1e13, got '" + *text + "'");
  }
  if (!x_arg.empty()) {
    if (x_arg == "bps" || x_arg == "blocks-per-sm")
      a.axis = report::SweepAxis::BlocksPerSm;
    else if (x_arg == "pad")
      a.axis = report::SweepAxis::Pad;
    else if (x_arg != "auto")
      throw Usage("--x: expected bps, pad or auto, got '" + x_arg + "'");
  }
  if (!width.empty()) {
    a.width = number_arg("--width", width);
    if (a.width < 400 || a.width > 20000) throw Usage("--width: expected 400..20000 pixels");
  }
  if (format_opt->count() > 0 && a.format != "text" && a.format != "csv" && a.format != "md")
    throw Usage("--format: expected text, csv or md, got '" + a.format + "'");
  if (a.merge == "-") throw Usage("--merge needs a file name (not stdout)");
  if (a.files.empty())
    throw Usage("no input: give one or more trace files, or one or two results (bench, step, tune)");
  if (a.svg == "-") throw Usage("--svg needs a file name (not stdout)");
  if (std::count(a.files.begin(), a.files.end(), "-") + std::count(a.alone.begin(), a.alone.end(), "-") > 1)
    throw Usage("standard input (-) can be read once: name the other inputs as files");
  if (a.from_us && a.to_us && *a.to_us <= *a.from_us) throw Usage("--to must be after --from");
  if (!a.range.empty() && (a.from_us || a.to_us))
    throw Usage("--range and --from/--to both choose the window: give one or the other");
  return a;
}

}  // namespace cco::cli
