#include "bench/workload_args.hpp"

#include <CLI/CLI.hpp>

#include <charconv>
#include <string>

#include "bench/flags.hpp"
#include "bench/options.hpp"
#include "model/occupancy.hpp"
#include "model/types.hpp"

namespace cco::bench {

using model::Error;
using workload::StepLoadOptions;

namespace {

// `app` keeps what it does not declare (app.remaining(), in order); the options declared on it
// take the last of repeated values.
void keep_extras(CLI::App& app) {
  app.set_help_flag();  // help text comes from docs/cli/bench.md, handled by the CLI
  app.allow_extras();
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

// v as an int, or `fallback` (the bench parser words the errors of -g and -c).
int int_or(const std::string& v, int fallback) {
  int x = 0;
  const auto r = std::from_chars(v.data(), v.data() + v.size(), x);
  return r.ec == std::errc() && r.ptr == v.data() + v.size() ? x : fallback;
}

}  // namespace

StepLoadOptions StepArgs::load_options() const {
  StepLoadOptions o;
  o.nranks = ngpus > 0 ? ngpus : 2;
  o.overrides = params;
  o.gpu_memory = gpu_memory;
  o.check = check;
  return o;
}

StepArgs split_step_args(const std::vector<std::string>& args) {
  StepArgs a;
  std::vector<std::string> params;
  std::string memory, ngpus, check;
  CLI::App app{"cco bench", "bench"}, peek{"cco bench", "bench"};
  keep_extras(app);
  keep_extras(peek);
  auto* workload = add_flag_option(app, F::Workload, a.workload);
  workload->multi_option_policy(CLI::MultiOptionPolicy::Throw);  // two steps: say so, never the last
  add_flag_switch(app, F::Validate, a.validate);
  add_flag_option(app, F::Param, params)->allow_extra_args(false);  // one NAME=VALUE each
  auto* gpu_memory = add_flag_option(app, F::GpuMemory, memory);
  // -g, -c and --json are read from what is left, which keeps them for the bench's own parser.
  add_flag_option(peek, F::Ngpus, ngpus);
  add_flag_option(peek, F::Check, check);
  auto* json = add_flag_option(peek, F::Json, a.json_path);
  try {
    parse_app(app, args);
    a.rest = app.remaining();
    if (!args.empty()) a.rest.insert(a.rest.begin(), args[0]);
    parse_app(peek, a.rest);
  } catch (const UsageError& e) {
    throw Error(e.what());
  }
  a.ngpus = int_or(ngpus, 0);
  a.check = int_or(check, 1) != 0;
  if (workload->count() > 0 && a.workload.empty()) throw Error("--workload needs a file");
  if (!a.workload.empty()) a.workload = workload::find_workload(a.workload, workload::workload_dirs());
  for (const auto& p : params) a.params.push_back(workload::parse_override(p));
  if (gpu_memory->count() > 0) {
    try {
      a.gpu_memory = model::parse_bytes(memory);
    } catch (const Error& e) {
      throw Error("--gpu-memory: " + std::string(e.what()));
    }
    if (a.gpu_memory <= 0) throw Error("--gpu-memory: must be positive");
  }
  if ((a.validate || !params.empty() || gpu_memory->count() > 0) && a.workload.empty())
    throw Error("--validate, --param and --gpu-memory go with --workload FILE");
  if (a.validate && json->count() > 0 && a.json_path.empty())
    throw Error("--json: needs a file name (got an empty value)");
  return a;
}

}  // namespace cco::bench
