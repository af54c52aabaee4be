// cco tune: finds the best resource split for one workload and writes it as a plan.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "bench/flags.hpp"
#include "bench/options.hpp"
#include "bench/workload_bench.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/parse.hpp"
#include "cli/run_cmd.hpp"
#include "bench/report.hpp"
#include "workload/workload.hpp"
#include "tune/tune.hpp"
#include "tune/tune_workload.hpp"

namespace cco::cli {
namespace {

/// The plan as --plan (indented, with a line saying where) and --json (compact) ask, each whole
/// or not at all.
[[maybe_unused]] void write_plan(const nlohmann::json& plan, const std::string& plan_path,
                                 const std::string& json_path) {
  if (!plan_path.empty()) {
    write_output(plan_path, bench::json_text(plan, 2) + "\n");
    std::printf("# plan written to %s\n", plan_path.c_str());
  }
  write_output(json_path, bench::json_text(plan) + "\n");
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
    const auto reg = model::Control::Register;  // the control table's tune list and codec
    model::Controls c;
    try {
      model::set_control(c, reg, model::Spelling::TuneList, name);
    } catch (const model::Error& e) {
      throw Usage(model::spelling_name(reg, model::Spelling::TuneList) + ": " + e.what());
    }
    const int r = static_cast<int>(*c.nccl_reg);
    if (std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
  });
  return out;
}

std::vector<int> list_arg(const std::string& flag, const std::string& v, int lo, int hi) {
  std::vector<int> out;
  for_each_item(v, [&](const std::string& x) { out.push_back(int_arg(flag, x, lo, hi)); });
  return out;
}

/// cco tune's command line, parsed once with CLI11 for pairs and workloads: tune's own options
/// (the flag table's tune_own, declared here once for both tuners), --workload, --param and -n
/// (passed on to the step's or the pair's parser), and the bench options left as given.
struct TuneArgs {
  static constexpr std::size_t kN = static_cast<std::size_t>(bench::F::kCount);
  std::array<std::string, kN> text;  ///< a value option's value, by flag id
  std::array<bool, kN> set{};        ///< a switch's
  std::array<bool, kN> seen{};       ///< given on the command line (read off CLI11 while it lives)
  std::vector<std::string> params;
  std::vector<std::string> inner;  ///< for bench::parse_options or parse_step_options

  static std::size_t at(bench::F id) { return static_cast<std::size_t>(id); }
  bool given(bench::F id) const { return seen[at(id)]; }
  bool on(bench::F id) const { return set[at(id)]; }
  const std::string& operator[](bench::F id) const { return text[at(id)]; }
  bool workload() const { return given(bench::F::Workload); }
  /// `id`'s value (a long-only tune flag: its name is its spelling) into `out` when given.
  template <class T>
  void num(bench::F id, int lo, int hi, T& out) const {
    if (given(id)) out = int_arg(bench::flag(id).names, text[at(id)], lo, hi);
  }
  void list(bench::F id, int lo, int hi, std::vector<int>& out) const {
    if (given(id)) out = list_arg(bench::flag(id).names, text[at(id)], lo, hi);
  }
};

TuneArgs parse_tune_args(const std::vector<std::string>& args) {
  using bench::F;
  TuneArgs a;
  CLI::App app{"cco tune", "tune"};
  app.set_help_flag();  // help text comes from docs/cli/tune.md, handled by the CLI
  app.allow_extras();   // the bench options, for the bench's parsers
  std::array<CLI::Option*, TuneArgs::kN> opt{};  // owned by `app`: read before it goes
  for (const bench::FlagSpec& f : bench::flags()) {
    if (!f.tune_own && f.id != F::Workload && f.id != F::Iters) continue;
    const auto i = TuneArgs::at(f.id);
    opt[i] = f.value ? bench::add_flag_option(app, f.id, a.text[i])
                     : bench::add_flag_switch(app, f.id, a.set[i]);
    // The last of a repeated tune option counts (-n is the bench's: repeated, it is refused).
    if (f.id != F::Iters) opt[i]->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
  bench::add_flag_option(app, F::Param, a.params)->allow_extra_args(false);  // one NAME=VALUE each
  parse_cli(app, args);
  for (std::size_t i = 0; i < TuneArgs::kN; ++i) a.seen[i] = opt[i] && opt[i]->count() > 0;
  // A known flag that does not apply here: one line saying why (from the flag table).
  bench::refuse_out_of_scope(args, a.workload() ? bench::kTuneStep : bench::kTunePair);
  a.inner = {"bench"};
  if (a.workload()) a.inner.insert(a.inner.end(), {"--workload", a[F::Workload]});
  for (const auto& p : a.params) a.inner.insert(a.inner.end(), {"--param", p});
  if (a.given(F::Iters)) a.inner.insert(a.inner.end(), {"-n", a[F::Iters]});
  for (const auto& x : app.remaining()) a.inner.push_back(x);
  return a;
}

/// The options both tuners take (TuneOptions, WorkloadTuneOptions), from `a`.
template <class T>
void apply_common(T& t, const TuneArgs& a) {
  using bench::F;
  a.list(F::Ctas, -1, 64, t.space.ctas);
  a.list(F::BlocksPerSm, 1, 64, t.space.blocks_per_sm);
  a.list(F::GreenSms, 1, 100000, t.space.green_sms);
  a.num(F::ScreenIters, 1, 1000, t.screen_iters);
  a.num(F::Refine, 0, 100, t.space.refine);
  a.num(F::Rounds, 1, 20, t.space.rounds);
  a.num(F::Top, 1, 100, t.top);
  a.num(F::Budget, 5, 86400, t.budget_s);
  if (a.on(F::NoPriority)) t.space.priority = false;
  if (a.given(F::Cache)) t.cache_dir = a[F::Cache];
  if (a.on(F::NoCache)) t.use_cache = false;
  if (a.on(F::Retune)) t.retune = true;
  for (int c : t.space.ctas)
    if (c == 0)
      throw Usage("--ctas: 0 CTAs cannot run a collective (use 1..64, or -1 for NCCL's default)");
}

/// `cco tune --workload FILE`: a training step (docs/WORKLOADS.md) tuned like one pair.
int tune_workload_main(const std::vector<std::string>& args, const TuneArgs& a) {
  tune::WorkloadTuneOptions t;
  apply_common(t, a);
  // Every input is checked before any GPU is touched (and in a build without CUDA too): the
  // step's options (bench core), and the file itself when the ranks are known (-g).
  t.step = bench::parse_step_options(a.inner);
  t.step.common.argv = args;
  // Outputs that name the workload file are refused before the search, not after it.
  for (const auto f : {bench::F::Plan, bench::F::Json})
    refuse_input(f == bench::F::Plan ? "--plan" : "--json", a[f], {t.step.workload}, "cco tune");
  if (!a.given(bench::F::Iters)) t.step.common.iters = 30;  // the final round: 30 samples unless -n
  if (t.step.common.ngpus > 0) {
    workload::StepLoadOptions lo;
    lo.nranks = t.step.common.ngpus;
    lo.overrides = t.step.params;
    lo.check = t.step.common.check;
    (void)workload::load_step(t.step.workload, lo);
  } else {
    // The ranks are the GPUs found later: the file itself is checked now (it reached the GPU
    // check first, exit 1, on a machine without one: review).
    workload::check_readable_json(t.step.workload);
  }
#ifndef CCO_HAVE_CUDA
  throw std::runtime_error(kNoCudaBuild);
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
  write_plan(res.plan, a[bench::F::Plan], a[bench::F::Json]);
  return 0;
#endif
}

}  // namespace

int tune_main(const std::vector<std::string>& args) {
  // A program to tune (after "--"): online, in the program itself.
  if (std::find(args.begin(), args.end(), "--") != args.end()) return tune_program_main(args);
  const TuneArgs a = parse_tune_args(args);
  if (a.workload()) return tune_workload_main(args, a);
  tune::TuneOptions t;
  t.argv = args;
  apply_common(t, a);
  a.list(bench::F::SmBudgets, 0, 100000, t.space.sm_budgets);
  if (a.given(bench::F::Registers)) t.space.registers = register_list(a[bench::F::Registers]);
  t.plan_path = a[bench::F::Plan];
  t.bench = bench::parse_options(a.inner);
  // --nccl-cta-policy A,B,...: A is the run's own, the rest are a dimension of the search.
  t.space.cta_policies = t.bench.row_cta_policies;
  t.bench.row_cta_policies.clear();
  if (t.bench.max_bytes != t.bench.min_bytes)
    throw Usage("cco tune tunes one collective size: give -b only");
  if (bench::run_dtypes(t.bench).size() > 1)  // refused before any GPU probe, as the size is
    throw Usage("-d " + bench::dtypes_label(t.bench) + ": cco tune tunes one data type (give -d TYPE)");
  t.bench.iters = std::max(t.bench.iters, 30);  // the final round decides: at least 30 samples

#ifndef CCO_HAVE_CUDA
  throw std::runtime_error(kNoCudaBuild);
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
  write_plan(res.plan, t.plan_path, a[bench::F::Json]);
  return 0;
#endif
}

}  // namespace cco::cli
