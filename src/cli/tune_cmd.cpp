// cco tune: finds the best resource split for one workload and writes it as a plan.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>

#include "bench/flags.hpp"
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

/// A tune flag's value: after '=' (--ctas=16,32), or the next argument (advancing i). Returns
/// the flag's name as given, for messages.
std::string own_value(const std::vector<std::string>& args, std::size_t& i,
                      const bench::FlagSpec& f, std::string* v) {
  const std::string& x = args[i];
  const auto eq = x.find('=');
  const std::string name = x.substr(0, eq);
  if (!f.value) {
    if (eq != std::string::npos) throw Usage(name + " takes no value");
    return name;
  }
  if (eq != std::string::npos) {
    *v = x.substr(eq + 1);
  } else {
    if (i + 1 >= args.size()) throw Usage(x + " needs a value");
    *v = args[++i];
  }
  return name;
}

/// `cco tune --workload FILE`: a training step (docs/WORKLOADS.md) tuned like one pair.
int tune_workload_main(const std::vector<std::string>& args) {
  tune::WorkloadTuneOptions t;
  std::vector<std::string> step_args = {"bench"};
  std::string plan_path, json_path;
  bench::refuse_out_of_scope(args, bench::kTuneStep);  // with the reason, from the flag table
  bool iters_given = false;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& x = args[i];
    if (x == "--workload" || x == "--param") {  // their values go to the step's parser as they are
      if (i + 1 >= args.size()) throw Usage(x + " needs a value");
      step_args.push_back(x);
      step_args.push_back(args[++i]);
      continue;
    }
    const bench::FlagSpec* f = bench::find_flag(x);
    if (!f || !f->tune_own) {  // the step's, as for cco bench
      if (f && f->id == bench::F::Iters) iters_given = true;
      step_args.push_back(x);
      continue;
    }
    std::string v;
    const std::string name = own_value(args, i, *f, &v);
    switch (f->id) {
      case bench::F::Ctas: t.space.ctas = list_arg(name, v, -1, 64); break;
      case bench::F::BlocksPerSm: t.space.blocks_per_sm = list_arg(name, v, 1, 64); break;
      case bench::F::GreenSms: t.space.green_sms = list_arg(name, v, 1, 100000); break;
      case bench::F::NoPriority: t.space.priority = false; break;
      case bench::F::ScreenIters: t.screen_iters = int_arg(name, v, 1, 1000); break;
      case bench::F::Refine: t.space.refine = int_arg(name, v, 0, 100); break;
      case bench::F::Rounds: t.space.rounds = int_arg(name, v, 1, 20); break;
      case bench::F::Top: t.top = int_arg(name, v, 1, 100); break;
      case bench::F::Budget: t.budget_s = int_arg(name, v, 5, 86400); break;
      case bench::F::Plan: plan_path = v; break;
      case bench::F::Json: json_path = v; break;
      case bench::F::Cache: t.cache_dir = v; break;
      case bench::F::NoCache: t.use_cache = false; break;
      case bench::F::Retune: t.retune = true; break;
      default: throw Usage(name + " does not apply to --workload");  // refused above; kept safe
    }
  }
  for (int c : t.space.ctas)
    if (c == 0)
      throw Usage("--ctas: 0 CTAs cannot run a collective (use 1..64, or -1 for NCCL's default)");
  // Every input is checked before any GPU is touched (and in a build without CUDA too): the
  // step's options (bench core), and the file itself when the ranks are known (-g).
  t.step = bench::parse_step_options(step_args);
  t.step.common.argv = args;
  if (!iters_given) t.step.common.iters = 30;  // the final round decides: 30 samples unless -n
  if (t.step.common.ngpus > 0) {
    workload::StepLoadOptions lo;
    lo.nranks = t.step.common.ngpus;
    lo.overrides = t.step.params;
    lo.check = t.step.common.check;
    (void)workload::load_step(t.step.workload, lo);
  }
#ifndef CCO_HAVE_CUDA
  throw std::runtime_error("this cco was built without CUDA (CCO_ENABLE_CUDA=OFF)");
#else
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
  // Tune's own flags (the flag table's tune_own) are taken out; the rest describe the workload,
  // as for cco bench. Bench flags that tune decides itself are refused with the reason.
  bench::refuse_out_of_scope(args, bench::kTunePair);
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& x = args[i];
    const bench::FlagSpec* f = bench::find_flag(x);
    if (!f || !f->tune_own) {
      bench_args.push_back(x);
      continue;
    }
    std::string v;
    const std::string name = own_value(args, i, *f, &v);
    switch (f->id) {
      case bench::F::SmBudgets: t.space.sm_budgets = list_arg(name, v, 0, 100000); break;
      case bench::F::Ctas: t.space.ctas = list_arg(name, v, -1, 64); break;
      case bench::F::BlocksPerSm: t.space.blocks_per_sm = list_arg(name, v, 1, 64); break;
      case bench::F::NoPriority: t.space.priority = false; break;
      case bench::F::ScreenIters: t.screen_iters = int_arg(name, v, 1, 1000); break;
      case bench::F::Refine: t.space.refine = int_arg(name, v, 0, 100); break;
      case bench::F::Rounds: t.space.rounds = int_arg(name, v, 1, 20); break;
      case bench::F::Top: t.top = int_arg(name, v, 1, 100); break;
      case bench::F::Budget: t.budget_s = int_arg(name, v, 5, 86400); break;
      case bench::F::Plan: t.plan_path = v; break;
      case bench::F::Cache: t.cache_dir = v; break;
      case bench::F::NoCache: t.use_cache = false; break;
      case bench::F::Retune: t.retune = true; break;
      case bench::F::Json: json_path = v; break;
      case bench::F::GreenSms: t.space.green_sms = list_arg(name, v, 1, 100000); break;
      case bench::F::Registers: t.space.registers = register_list(v); break;
      default: bench_args.push_back(x); break;
    }
  }
  for (int c : t.space.ctas)
    if (c == 0) throw Usage("--ctas: 0 CTAs cannot run a collective (use 1..64, or -1 for NCCL's default)");
  t.bench = bench::parse_options(bench_args);
  // --nccl-cta-policy A,B,...: A is the run's own, the rest are a dimension of the search.
  t.space.cta_policies = t.bench.row_cta_policies;
  t.bench.row_cta_policies.clear();
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
