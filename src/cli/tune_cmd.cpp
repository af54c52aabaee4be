// cco tune: finds the best resource split for one workload and writes it as a plan.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>

#include "bench/options.hpp"
#include "bench/step_bench.hpp"
#include "cli/commands.hpp"
#include "cli/run_cmd.hpp"
#include "bench/report.hpp"
#include "workload/workload.hpp"
#include "tune/tune.hpp"
#include "tune/tune_workload.hpp"

namespace cco::cli {
namespace {

/// The plan as --plan (indented, with a line saying where) and --json (compact) ask.
[[maybe_unused]] void write_plan(const nlohmann::json& plan, const std::string& plan_path,
                                 const std::string& json_path) {
  if (!plan_path.empty()) {
    std::ofstream f(plan_path);
    if (!f) throw std::runtime_error("cannot write plan '" + plan_path + "'");
    f << bench::json_text(plan, 2) << "\n";
    std::printf("# plan written to %s\n", plan_path.c_str());
  }
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    if (!f) throw std::runtime_error("cannot write '" + json_path + "'");
    f << bench::json_text(plan) << "\n";
  }
}

int int_arg(const std::string& flag, const std::string& v, int lo, int hi) {
  std::size_t pos = 0;
  int x = 0;
  try {
    x = std::stoi(v, &pos);
  } catch (...) {
    pos = 0;
  }
  if (v.empty() || pos != v.size() || x < lo || x > hi)
    throw Usage(flag + ": expected an integer in " + std::to_string(lo) + ".." + std::to_string(hi) +
                ", got '" + v + "'");
  return x;
}

/// The comma-separated items of v ("a,,b" has an empty middle item), each through `item`.
template <class F>
void for_each_item(const std::string& v, F item) {
  std::size_t start = 0;
  while (true) {
    const auto end = v.find(',', start);
    item(v.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return;
    start = end + 1;
  }
}

/// "none,window" -> model::CommRegister values, for --registers.
std::vector<int> register_list(const std::string& v) {
  std::vector<int> out;
  for_each_item(v, [&](const std::string& name) {
    try {
      const int r = static_cast<int>(model::parse_register(name));
      if (std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
    } catch (const model::Error& e) {
      throw Usage(std::string("--registers: ") + e.what());
    }
  });
  return out;
}

std::vector<int> list_arg(const std::string& flag, const std::string& v, int lo, int hi) {
  std::vector<int> out;
  for_each_item(v, [&](const std::string& x) { out.push_back(int_arg(flag, x, lo, hi)); });
  return out;
}

bool is_workload(const std::vector<std::string>& args) {
  for (std::size_t i = 1; i < args.size(); ++i)
    if (args[i] == "--workload" || args[i].rfind("--workload=", 0) == 0) return true;
  return false;
}

/// Flags that do not apply to `cco tune --workload`: nullptr, or why (and the flag in `flag`).
const char* not_for_workloads(const std::string& arg, std::string& flag) {
  static const std::map<std::string, const char*> why = {
      {"-b", "the workload file sets sizes and types (use --param NAME=VALUE)"},
      {"--minbytes", "the workload file sets sizes and types (use --param NAME=VALUE)"},
      {"-e", "the workload file sets sizes and types (use --param NAME=VALUE)"},
      {"--maxbytes", "the workload file sets sizes and types (use --param NAME=VALUE)"},
      {"-f", "the workload file sets sizes and types (use --param NAME=VALUE)"},
      {"--stepfactor", "the workload file sets sizes and types (use --param NAME=VALUE)"},
      {"-d", "the workload file sets sizes and types (use --param NAME=VALUE)"},
      {"--datatype", "the workload file sets sizes and types (use --param NAME=VALUE)"},
      {"-o", "the workload file sets sizes and types (use --param NAME=VALUE)"},
      {"--op", "the workload file sets sizes and types (use --param NAME=VALUE)"},
      {"--collective", "the workload file sets sizes and types (use --param NAME=VALUE)"},
      {"--compute", "the workload file sets sizes and types (use --param NAME=VALUE)"},
      {"--gemm", "the workload file sets sizes and types (use --param NAME=VALUE)"},
      {"--gemm-dtype", "the workload file sets sizes and types (use --param NAME=VALUE)"},
      {"--count", "the workload file sets sizes and types (use --param NAME=VALUE)"},
      {"--mem-bytes", "the workload file sets sizes and types (use --param NAME=VALUE)"},
      {"--sm-budgets", "a step's cuBLASLt GEMMs run on every SM"},
      {"--registers", "buffer registration applies to pairs, whose buffers cco allocates"},
      {"--refine", "a step is tuned in two rounds (screening, final)"},
      {"--rounds", "a step is tuned in two rounds (screening, final)"},
      {"--nccl-register", "buffer registration applies to pairs, whose buffers cco allocates"},
      {"--gemm-sms", "a step's cuBLASLt GEMMs run on every SM"},
      {"--modes", "cco tune chooses the modes itself"},
      {"--pad", "cco tune chooses the modes itself (--blocks-per-sm LIST sets the targets)"},
      {"--csv", "cco tune writes a plan (--plan, --json)"},
      {"--trace", "cco tune writes a plan (--plan, --json)"},
      {"-a", "a step's sample is the max over ranks"},
      {"--average", "a step's sample is the max over ranks"},
      {"--bootstrap", "a workload runs in one process with a thread per GPU"},
      {"--bootstrap-timeout", "a workload runs in one process with a thread per GPU"},
      {"--validate", "it belongs to cco bench --workload FILE --validate"},
      {"--gpu-memory", "it belongs to cco bench --workload FILE --validate"}};
  flag = arg.substr(0, arg.find('='));
  if (const auto it = why.find(flag); it != why.end()) return it->second;
  flag = arg.substr(0, 2);  // -b1M
  if (arg.size() > 2 && arg[0] == '-' && arg[1] != '-')
    if (const auto it = why.find(flag); it != why.end()) return it->second;
  return nullptr;
}

/// `cco tune --workload FILE`: a training step (docs/WORKLOADS.md) tuned like one pair.
int tune_workload_main(const std::vector<std::string>& args) {
  tune::WorkloadTuneOptions t;
  std::vector<std::string> step_args = {"bench"};
  std::string plan_path, json_path;
  const std::map<std::string, bool> own = {
      {"--ctas", true},         {"--blocks-per-sm", true}, {"--green-sms", true},
      {"--no-priority", false}, {"--screen-iters", true},  {"--top", true},
      {"--budget", true},       {"--plan", true},          {"--json", true},
      {"--cache", true},        {"--no-cache", false},     {"--retune", false}};
  bool iters_given = false;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& x = args[i];
    if (x == "--workload" || x == "--param") {  // their values go to the step's parser as they are
      if (i + 1 >= args.size()) throw Usage(x + " needs a value");
      step_args.push_back(x);
      step_args.push_back(args[++i]);
      continue;
    }
    std::string flag;
    if (const char* why = not_for_workloads(x, flag))
      throw Usage(flag + " does not apply to --workload: " + why);
    const auto it = own.find(x);
    if (it == own.end()) {
      if (x == "-n" || x == "--iters" || x.rfind("--iters=", 0) == 0 ||
          (x.size() > 2 && x.rfind("-n", 0) == 0 && x[2] != '-'))
        iters_given = true;
      step_args.push_back(x);
      continue;
    }
    std::string v;
    if (it->second) {
      if (i + 1 >= args.size()) throw Usage(x + " needs a value");
      v = args[++i];
    }
    const auto& f = it->first;
    if (f == "--ctas") t.space.ctas = list_arg(f, v, -1, 64);
    else if (f == "--blocks-per-sm") t.space.blocks_per_sm = list_arg(f, v, 1, 64);
    else if (f == "--green-sms") t.space.green_sms = list_arg(f, v, 1, 100000);
    else if (f == "--no-priority") t.space.priority = false;
    else if (f == "--screen-iters") t.screen_iters = int_arg(f, v, 1, 1000);
    else if (f == "--top") t.top = int_arg(f, v, 1, 100);
    else if (f == "--budget") t.budget_s = int_arg(f, v, 5, 86400);
    else if (f == "--plan") plan_path = v;
    else if (f == "--json") json_path = v;
    else if (f == "--cache") t.cache_dir = v;
    else if (f == "--no-cache") t.use_cache = false;
    else if (f == "--retune") t.retune = true;
  }
  for (int c : t.space.ctas)
    if (c == 0)
      throw Usage("--ctas: 0 CTAs cannot run a collective (use 1..64, or -1 for NCCL's default)");
#ifndef CCO_HAVE_CUDA
  // parse_step_options lives with the step's runner (cco.bench), built with CUDA only.
  (void)iters_given;
  throw std::runtime_error("this cco was built without CUDA (CCO_ENABLE_CUDA=OFF)");
#else
  t.step = bench::parse_step_options(step_args);
  t.step.common.argv = args;
  if (!iters_given) t.step.common.iters = 30;  // the final round decides: 30 samples unless -n
  if (t.step.common.ngpus > 0) {
    // The file is judged before any GPU is touched when the ranks are known (-g).
    workload::StepLoadOptions lo;
    lo.nranks = t.step.common.ngpus;
    lo.overrides = t.step.params;
    lo.check = t.step.common.check;
    (void)workload::load_step(t.step.workload, lo);
  }
  const auto res = tune::run_tune_workload(t, std::cerr);
  std::printf("# cco tune: workload %s%s%s\n",
              res.plan["tuning"]["workload"].value("name", std::string("?")).c_str(),
              res.from_cache ? ", from the cache " : res.cache_file.empty() ? "" : ", cached in ",
              res.cache_file.c_str());
  std::fputs(res.table.c_str(), stdout);
  const auto& c = res.plan["tuning"]["choice"];
  std::printf("# chosen: %s  (%.1f us, reduction %.1f%%, %.1f%% of the ideal saving)\n",
              c.value("label", std::string("?")).c_str(), c.value("t_us", 0.0),
              100 * c.value("reduction", 0.0), 100 * c.value("of_ideal", 0.0));
  write_plan(res.plan, plan_path, json_path);
  return 0;
#endif
}

}  // namespace

int tune_main(const std::vector<std::string>& args) {
  // A program to tune (after "--"): online, in the program itself.
  if (std::find(args.begin(), args.end(), "--") != args.end()) return tune_program_main(args);
  if (is_workload(args)) return tune_workload_main(args);
  tune::TuneOptions t;
  t.argv = args;
  std::vector<std::string> bench_args = {"bench"};
  std::string json_path;
  // Tune's own flags are taken out; the rest describe the workload, as for cco bench.
  const std::map<std::string, bool> own = {
      {"--sm-budgets", true}, {"--ctas", true},    {"--blocks-per-sm", true}, {"--no-priority", false},
      {"--screen-iters", true}, {"--top", true},   {"--budget", true},        {"--plan", true},
      {"--cache", true},      {"--no-cache", false}, {"--retune", false},    {"--json", true},
      {"--green-sms", true},  {"--refine", true},    {"--registers", true},
      {"--rounds", true}};
  for (std::size_t i = 1; i < args.size(); ++i) {
    const auto it = own.find(args[i]);
    if (it == own.end()) {
      if (args[i] == "--modes" || args[i] == "--pad" || args[i] == "--csv")
        throw Usage(args[i] + " is a cco bench option; cco tune chooses the modes itself");
      bench_args.push_back(args[i]);
      continue;
    }
    std::string v;
    if (it->second) {
      if (i + 1 >= args.size()) throw Usage(args[i] + " needs a value");
      v = args[++i];
    }
    const auto& f = it->first;
    if (f == "--sm-budgets") t.space.sm_budgets = list_arg(f, v, 0, 100000);
    else if (f == "--ctas") t.space.ctas = list_arg(f, v, -1, 64);
    else if (f == "--blocks-per-sm") t.space.blocks_per_sm = list_arg(f, v, 1, 64);
    else if (f == "--no-priority") t.space.priority = false;
    else if (f == "--screen-iters") t.screen_iters = int_arg(f, v, 1, 1000);
    else if (f == "--refine") t.space.refine = int_arg(f, v, 0, 100);
    else if (f == "--rounds") t.space.rounds = int_arg(f, v, 1, 20);
    else if (f == "--top") t.top = int_arg(f, v, 1, 100);
    else if (f == "--budget") t.budget_s = int_arg(f, v, 5, 86400);
    else if (f == "--plan") t.plan_path = v;
    else if (f == "--cache") t.cache_dir = v;
    else if (f == "--no-cache") t.use_cache = false;
    else if (f == "--retune") t.retune = true;
    else if (f == "--json") json_path = v;
    else if (f == "--green-sms") t.space.green_sms = list_arg(f, v, 1, 100000);
    else if (f == "--registers") t.space.registers = register_list(v);
  }
  for (int c : t.space.ctas)
    if (c == 0) throw Usage("--ctas: 0 CTAs cannot run a collective (use 1..64, or -1 for NCCL's default)");
  t.bench = bench::parse_options(bench_args);
  if (t.bench.max_bytes != t.bench.min_bytes)
    throw Usage("cco tune tunes one collective size: give -b only");
  t.bench.iters = std::max(t.bench.iters, 30);  // the final round decides: at least 30 samples

#ifndef CCO_HAVE_CUDA
  throw std::runtime_error("this cco was built without CUDA (CCO_ENABLE_CUDA=OFF)");
#else
  const auto res = tune::run_tune(t, std::cerr);
  if (!res.writer) return 0;  // rank 0 prints and writes
  std::printf("# cco tune: %s%s\n", res.from_cache ? "from the cache " : "",
              res.cache_file.empty() ? "" : res.cache_file.c_str());
  std::fputs(res.table.c_str(), stdout);
  const auto& c = res.plan["tuning"]["choice"];
  std::printf("# chosen: %s  (%.1f us, reduction %.1f%%, efficiency %.2f, against its own parts %.2f)\n",
              c.value("label", std::string("?")).c_str(), c.value("t_us", 0.0),
              100 * c.value("reduction", 0.0), c.value("efficiency", 0.0),
              c.contains("own_efficiency") && c["own_efficiency"].is_number()
                  ? c["own_efficiency"].get<double>()
                  : std::nan(""));
  write_plan(res.plan, t.plan_path, json_path);
  return 0;
#endif
}

}  // namespace cco::cli
