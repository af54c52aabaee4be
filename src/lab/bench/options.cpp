#include "bench/options.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <cmath>
#include <sstream>

#include "bench/flags.hpp"
#include "model/controls.hpp"
#include "model/cta_policy.hpp"
#include "model/limits.hpp"
#include "model/occupancy.hpp"

namespace cco::bench {
namespace {

constexpr int64_t kMaxCollBytes = int64_t{64} << 30;  // beyond any GPU's memory today
constexpr int kMaxSizes = 1000;  // sizes one sweep may have (-b, -e, -f)
constexpr int64_t kMaxGemmDim = 131072;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}

int64_t bytes_arg(const std::string& text, const char* flag) {
  try {
    return model::parse_bytes(text);
  } catch (const model::Error& e) {
    throw UsageError(std::string(flag) + ": " + e.what());
  }
}

template <class F>
auto model_arg(F&& f, const char* flag) {
  try {
    return f();
  } catch (const model::Error& e) {
    throw UsageError(std::string(flag) + ": " + e.what());
  }
}

}  // namespace

const char* to_string(Mode m) {
  switch (m) {
    case Mode::Seq: return "seq";
    case Mode::Concurrent: return "concurrent";
    case Mode::Priority: return "priority";
    case Mode::Shape: return "shape";
    case Mode::ShapePriority: return "shape+priority";
  }
  return "?";
}

Mode parse_mode(const std::string& s) {
  for (Mode m : {Mode::Seq, Mode::Concurrent, Mode::Priority, Mode::Shape, Mode::ShapePriority})
    if (s == to_string(m)) return m;
  throw UsageError("--modes: unknown mode '" + s +
                   "' (known: seq, concurrent, priority, shape, shape+priority)");
}

model::Controls RowSpec::label_controls() const {
  model::Controls c = controls;
  if (!is_shape(mode)) {
    c.blocks_per_sm.reset();
    c.pad.reset();
  }
  return c;
}

model::Controls RowSpec::budget_controls() const {
  model::Controls c = controls;
  c.blocks_per_sm.reset();
  c.pad.reset();
  c.shape_model = false;
  c.when.reset();
  return c;
}

std::string RowSpec::label() const { return to_string(mode) + model::label_tokens(label_controls()); }

std::string RowSpec::budgets() const { return model::label_tokens(budget_controls()); }

int budget_number(std::optional<int> v) { return v ? *v : -1; }

std::optional<int> budget_from_number(int n) {
  if (n < -1) throw UsageError("a budget of " + std::to_string(n) + " (expected a count, or -1 for none)");
  if (n == -1) return std::nullopt;
  return n;
}

bool is_shape(Mode m) { return m == Mode::Shape || m == Mode::ShapePriority; }
bool is_priority(Mode m) { return m == Mode::Priority || m == Mode::ShapePriority; }
Mode with_priority(Mode base, bool priority) {
  if (is_shape(base)) return priority ? Mode::ShapePriority : Mode::Shape;
  return priority ? Mode::Priority : Mode::Concurrent;
}

std::vector<int> parse_int_list(const std::string& s, const std::string& what) {
  std::vector<int> out;
  for (const auto& item : split(s, ',')) {
    std::size_t pos = 0;
    int v = 0;
    try {
      v = std::stoi(item, &pos);
    } catch (...) {
      pos = 0;
    }
    if (item.empty() || pos != item.size() || v < 1)
      throw UsageError(what + ": '" + item + "' is not a positive integer (expected a list like 1,2,4)");
    out.push_back(v);
  }
  if (out.empty()) throw UsageError(what + ": empty list");
  return out;
}

model::Controls flag_value(model::Control c, model::Spelling s, const std::string& text) {
  model::Controls v;
  const std::string flag = model::spelling_name(c, s);
  model_arg([&] { model::set_control(v, c, s, text); }, flag.c_str());
  return v;
}

void check_counts(Options& o, int check) {
  if (o.ngpus < 0) throw UsageError("-g: number of GPUs must be positive");
  if (o.iters < 1 || o.iters > 100000) throw UsageError("-n: iterations must be 1..100000");
  if (o.warmup < 0 || o.warmup > 100000) throw UsageError("-w: warm-up iterations must be 0..100000");
  if (check != 0 && check != 1) throw UsageError("-c: expected 0 or 1");
  o.check = check == 1;
  if (o.average < 0 || o.average > 3)
    throw UsageError("-a: expected 0 (rank 0), 1 (mean), 2 (min) or 3 (max)");
}

void parse_shape_options(Options& o, const std::string& modes, const std::string& bps,
                         const std::string& pads) {
  if (!modes.empty()) {
    o.modes_given = true;
    for (const auto& m : split(modes, ',')) {
      const Mode md = parse_mode(m);
      if (std::find(o.modes.begin(), o.modes.end(), md) == o.modes.end()) o.modes.push_back(md);
    }
  }
  if (!bps.empty() && !pads.empty())
    throw UsageError("--blocks-per-sm and --pad conflict: give one of them");
  if (!bps.empty()) o.blocks_per_sm = parse_int_list(bps, "--blocks-per-sm");
  if (!pads.empty())
    for (const auto& p : split(pads, ','))  // the control table's codec: "16K", "4096"
      o.pads.push_back(*flag_value(model::Control::Pad, model::Spelling::Flag, p).pad);
  const bool any_shape = std::any_of(o.modes.begin(), o.modes.end(), is_shape);
  if ((!o.blocks_per_sm.empty() || !o.pads.empty()) && o.modes_given && !any_shape)
    throw UsageError("--blocks-per-sm/--pad need a shape mode in --modes (shape or shape+priority)");
}

void parse_cta_policies(Options& o, const std::string& text, bool given) {
  o.nccl_cta_policy.reset();
  o.row_cta_policies.clear();
  const auto cta = model::Control::CtaPolicy;
  const std::string flag = model::spelled(cta, model::Spelling::Flag);
  if (given && text.empty()) throw UsageError(flag + ": needs a policy (got an empty value)");
  if (text.empty()) return;
  std::vector<model::CtaPolicy> seen;
  for (const auto& item : split(text, ',')) {
    model::Controls c;  // the control table's codec (model/controls.hpp)
    model_arg([&] { model::set_control(c, cta, model::Spelling::Flag, item); }, flag.c_str());
    if (std::find(seen.begin(), seen.end(), *c.cta_policy) != seen.end())
      throw UsageError(flag + ": '" + item + "' is given twice");
    seen.push_back(*c.cta_policy);
  }
  o.nccl_cta_policy = seen[0];
  o.row_cta_policies.assign(seen.begin() + 1, seen.end());
  // The copy engines need the collective's buffers in a symmetric window: give them one unless
  // the user chose the registration (then the path probe says where NCCL ran).
  if (o.nccl_cta_policy == model::CtaPolicy::Zero && !o.nccl_register_given)
    o.nccl_register = model::CommRegister::Window;
}

void check_nccl_and_outputs(Options& o, const SharedText& t) {
  if (o.bootstrap != "auto" && o.bootstrap != "threads" && o.bootstrap != "env" && o.bootstrap != "mpi")
    throw UsageError("--bootstrap: expected auto, threads, env or mpi, got '" + o.bootstrap + "'");
  if (!(o.bootstrap_timeout >= 0) || o.bootstrap_timeout > 86400)
    throw UsageError("--bootstrap-timeout: expected seconds in 0..86400");
  for (const int* v : {&t.min_ctas, &t.max_ctas})
    if (*v == 0 || *v < -1 || *v > 64) throw UsageError("--nccl-min-ctas/--nccl-max-ctas: must be 1..64");
  if (t.min_ctas > 0 && t.max_ctas > 0 && t.min_ctas > t.max_ctas)
    throw UsageError("--nccl-min-ctas must not exceed --nccl-max-ctas");
  if (t.cga_cluster < -1 || t.cga_cluster > 8)
    throw UsageError("--nccl-cga-cluster-size: must be 0..8");
  o.nccl_min_ctas = budget_from_number(t.min_ctas);
  o.nccl_max_ctas = budget_from_number(t.max_ctas);
  o.nccl_cga_cluster = budget_from_number(t.cga_cluster);
  if (!o.json_path.empty() && o.json_path == o.csv_path && o.json_path != "-")
    throw UsageError("--json and --csv name the same file");
  if (!o.trace_path.empty() && (o.trace_path == o.json_path || o.trace_path == o.csv_path))
    throw UsageError("--trace names the same file as --json or --csv");
  if (o.trace_path == "-") throw UsageError("--trace needs a file name");
  if (o.json_path == "-" && o.csv_path == "-")
    throw UsageError("--json - and --csv - both want standard output: give one a file");
}

void add_shared_options(CLI::App& app, Options& o, SharedText& t) {
  add_flag_option(app, F::Ngpus, o.ngpus);
  add_flag_option(app, F::Iters, o.iters);
  add_flag_option(app, F::Warmup, o.warmup);
  add_flag_option(app, F::Bootstrap, o.bootstrap);
  add_flag_option(app, F::BootstrapTimeout, o.bootstrap_timeout);
  add_flag_option(app, F::Check, t.check);
  add_flag_option(app, F::Average, o.average);
  add_flag_option(app, F::Modes, t.modes);
  add_flag_option(app, F::BlocksPerSm, t.bps);
  add_flag_option(app, F::Pad, t.pads);
  add_flag_option(app, F::NcclMinCtas, t.min_ctas);
  add_flag_option(app, F::NcclMaxCtas, t.max_ctas);
  t.cta_option = add_flag_option(app, F::NcclCtaPolicy, t.cta_policy);
  add_flag_option(app, F::NcclCgaClusterSize, t.cga_cluster);
  add_flag_option(app, F::Json, o.json_path);
  add_flag_option(app, F::Csv, o.csv_path);
  add_flag_option(app, F::Trace, o.trace_path);
  add_flag_switch(app, F::Quiet, o.quiet);
}

std::string cli_error_text(const std::string& what, const CLI::App* app) {
  static const std::regex missing(R"(^(\S+): \d+ required \S+ missing$)");
  static const std::regex extras(R"(^The following arguments? (?:was|were) not expected: (\S+).*$)");
  static const std::regex convert(R"(^Could not convert: (\S+) = (.*)$)");
  static const std::regex repeated(R"(^(\S+): At Most (\d+) required but received (\d+)$)");
  std::smatch m;
  if (std::regex_match(what, m, repeated))
    return m[1].str() + " given " + m[3].str() + " times (" +
           (m[2].str() == "1" ? std::string("once at most") : "at most " + m[2].str() + " times") + ")";
  if (std::regex_match(what, m, missing)) return m[1].str() + " needs a value";
  if (std::regex_match(what, m, extras)) {
    const std::string a = m[1].str();
    if (a.size() > 1 && a[0] == '-')
      return "unknown option '" + a + "'" + (app ? did_you_mean(*app, a) : std::string());
    return "unexpected argument '" + a + "'";
  }
  if (std::regex_match(what, m, convert)) {
    const CLI::Option* o = app ? app->get_option_no_throw(m[1].str()) : nullptr;
    if (o && o->get_items_expected_max() == 0)  // a flag given "=VALUE"
      return m[1].str() + " takes no value (got '" + m[2].str() + "')";
    return m[1].str() + ": expected a number, got '" + m[2].str() + "'";
  }
  return what;
}

namespace {

// Edits between a and b, a swap of two neighbours counting one (optimal string alignment).
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1,
                          d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

bool is_number(const std::string& a) {
  char* end = nullptr;
  std::strtod(a.c_str(), &end);
  return end && *end == '\0' && end != a.c_str();
}

}  // namespace

std::string did_you_mean(const CLI::App& app, const std::string& given) {
  std::string name = given.substr(0, given.find('='));
  while (!name.empty() && name[0] == '-') name.erase(0, 1);
  if (name.size() < 2) return "";
  std::string best;
  std::size_t best_d = std::string::npos;
  for (const CLI::Option* o : app.get_options()) {
    for (const auto& l : o->get_lnames()) {
      const std::size_t d = edit_distance(name, l);
      if (d < best_d) {
        best_d = d;
        best = l;
      }
    }
  }
  if (best.empty() || best_d == 0 || best_d > std::max<std::size_t>(2, best.size() / 3)) return "";
  return " (did you mean --" + best + "?)";
}

std::string unknown_option(const CLI::App& app, const std::vector<std::string>& args) {
  bool value_next = false;  // the argument after an option that takes a value is its value
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") break;
    if (value_next) {
      value_next = false;
      continue;
    }
    if (a.size() < 2 || a[0] != '-' || is_number(a)) {
      if (app.get_prefix_command()) break;  // the program's command starts here
      continue;
    }
    const bool long_form = a.compare(0, 2, "--") == 0;
    const std::string name = long_form ? a.substr(0, a.find('=')) : a.substr(0, 2);
    const CLI::Option* o = app.get_option_no_throw(name);
    if (!o) {
      // nccl-tests' habits: -t is its threads per process, where cco runs a rank per GPU.
      if (name == "-t" && app.get_option_no_throw("-g"))
        return "unknown option '-t' (nccl-tests' threads per process: cco runs one rank per "
               "GPU; give the GPU count with -g)";
      return "unknown option '" + name + "'" + did_you_mean(app, name);
    }
    // "--name value" or "-x value" (not "--name=value", "-xvalue"): skip the value.
    const bool attached = long_form ? a.find('=') != std::string::npos : a.size() > 2;
    value_next = o->get_items_expected_max() > 0 && !attached;
  }
  return "";
}

void refuse_empty_assignments(const std::vector<std::string>& args, std::size_t end) {
  for (std::size_t i = 1; i < std::min(end, args.size()) && args[i] != "--"; ++i) {
    const auto& a = args[i];
    if (a.size() > 3 && a.compare(0, 2, "--") == 0 && a.back() == '=')
      throw UsageError(a.substr(0, a.size() - 1) + " needs a value");
  }
}

// Whole numbers are decimal: CLI11 reads integers with base 0, so 010 was eight, 0x20 thirty-two
// and -n 0200001 slipped under the 100000 limit as 65537 (review). Checked on every option CLI11
// converts to an integer, in every parser (bench, tune, plan, run, report, doctor).
const CLI::Validator& decimal_integer() {
  static const CLI::Validator v(
      [](std::string& text) -> std::string {
        std::size_t i = !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
        bool digits = i < text.size();
        for (std::size_t j = i; j < text.size(); ++j) digits = digits && text[j] >= '0' && text[j] <= '9';
        if (!digits) return "expected a whole number, got '" + text + "'";
        if (text.size() - i > 1 && text[i] == '0')
          return "expected a whole number in decimal, got '" + text + "' (a leading 0 is not octal here: write " +
                 text.substr(0, i) + text.substr(text.find_first_not_of('0', i) == std::string::npos
                                                      ? text.size() - 1
                                                      : text.find_first_not_of('0', i)) +
                 ")";
        return "";
      },
      "", "decimal");
  return v;
}

// "--name ''": an empty value, refused as "--name=" is (--modes '' ran every mode, and -f ''
// or --json '' reached the GPU check before their own: review). Stops where the program's own
// arguments begin (a "--", or the first positional of a prefix command such as cco run's).
void refuse_empty_values(const CLI::App& app, const std::vector<std::string>& args) {
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") return;
    if (a.size() < 2 || a[0] != '-') {
      if (app.get_prefix_command()) return;
      continue;
    }
    if (a.find('=') != std::string::npos) continue;
    const CLI::Option* o = app.get_option_no_throw(a);
    if (!o || o->get_items_expected_max() == 0) continue;
    if (i + 1 < args.size() && args[i + 1].empty())
      throw UsageError(a + " needs a value (got an empty one)");
    ++i;  // its value
  }
}

void parse_app(CLI::App& app, const std::vector<std::string>& args) {
  // CLI11 reads "--name=" as "--name" and takes the next argument as the value.
  if (!app.get_prefix_command()) refuse_empty_assignments(args, args.size());
  refuse_empty_values(app, args);
  for (CLI::Option* o : app.get_options())
    if (const std::string t = o->get_type_name(); t == "INT" || t == "UINT") o->check(decimal_integer());
  std::vector<std::string> rest(args.begin() + (args.empty() ? 0 : 1), args.end());
  std::reverse(rest.begin(), rest.end());  // CLI11 takes arguments in reverse order
  try {
    app.parse(rest);
  } catch (const CLI::ParseError& err) {
    // An unknown option is named as such (CLI11 may blame the value after it), with a suggestion.
    // (Not for a parser that leaves other options to a later one: allow_extras.)
    if (!app.get_allow_extras())
      if (const std::string u = unknown_option(app, args); !u.empty()) throw UsageError(u);
    throw UsageError(cli_error_text(err.what(), &app));
  }
}

Options parse_options(const std::vector<std::string>& args) {
  Options o;
  o.argv = args;
  CLI::App app{"cco bench", "bench"};
  app.set_help_flag();  // help text comes from docs/cli/bench.md, handled by the CLI
  app.allow_extras(false);

  std::string b, e, d = "float", op = "sum", coll = "allreduce", compute = "cublaslt", gemm,
                    gemm_dtype = "bf16", mem = "1G";
  SharedText shared;
  add_shared_options(app, o, shared);
  auto* opt_b = add_flag_option(app, F::MinBytes, b);
  auto* opt_e = add_flag_option(app, F::MaxBytes, e);
  add_flag_option(app, F::StepFactor, o.step_factor);
  add_flag_option(app, F::Datatype, d);
  add_flag_option(app, F::Op, op);
  add_flag_option(app, F::Collective, coll);
  add_flag_option(app, F::Compute, compute);
  add_flag_option(app, F::Gemm, gemm);
  add_flag_option(app, F::GemmDtype, gemm_dtype);
  add_flag_option(app, F::Count, o.count);
  add_flag_option(app, F::MemBytes, mem);
  add_flag_option(app, F::GemmSms, o.gemm_sms);
  add_flag_option(app, F::GreenSms, o.green_sms);
  std::string reg;
  add_flag_option(app, F::NcclRegister, reg);
  int in_place = 0;
  add_flag_option(app, F::InPlace, in_place);
  add_flag_option(app, F::CudaGraph, o.cudagraph);

  refuse_out_of_scope(args, kPair);  // a known flag of another command: one line saying why
  parse_app(app, args);

  // An empty value is a mistake (an unset shell variable), not "the default".
  if (opt_b->count() > 0 && b.empty()) throw UsageError("-b: needs a size (got an empty value)");
  if (opt_e->count() > 0 && e.empty()) throw UsageError("-e: needs a size (got an empty value)");
  if (!b.empty()) o.min_bytes = bytes_arg(b, "-b");
  o.max_bytes = e.empty() ? o.min_bytes : bytes_arg(e, "-e");
  if (o.min_bytes < 1 || o.min_bytes > kMaxCollBytes)
    throw UsageError("-b: size must be between 1 and 64G bytes");
  if (o.max_bytes > kMaxCollBytes) throw UsageError("-e: size must be at most 64G bytes");
  if (o.max_bytes < o.min_bytes) throw UsageError("-e must not be below -b");
  if (!(o.step_factor > 1))  // checked with or without -e: -f -2 or nan is wrong either way
    throw UsageError("-f: step factor must be greater than 1, got " + fmt::format("{}", o.step_factor));
  if (o.max_bytes > o.min_bytes) {
    // Bounded: a factor barely above 1 would expand into millions of sizes.
    const double n = std::floor(std::log(static_cast<double>(o.max_bytes) /
                                         static_cast<double>(o.min_bytes)) /
                                std::log(o.step_factor) + 1e-9) + 1;
    if (!(n <= static_cast<double>(kMaxSizes)))
      throw UsageError("-f " + fmt::format("{}", o.step_factor) + " from -b " +
                       std::to_string(o.min_bytes) + " to -e " + std::to_string(o.max_bytes) +
                       " gives " + fmt::format("{:.0f}", n) + " sizes; at most " +
                       std::to_string(kMaxSizes) + " (raise -f or narrow -b/-e)");
  }
  check_counts(o, shared.check);
  parse_dtypes(o, d);
  if (in_place != 0 && in_place != 1) throw UsageError("--in-place: expected 0 or 1");
  o.in_place = in_place == 1;
  o.op = model_arg([&] { return model::parse_redop(op); }, "-o");
  o.coll = model_arg([&] { return model::parse_collective(coll); }, "--collective");
  o.compute = model_arg([&] { return model::parse_compute(compute); }, "--compute");
  if (!reg.empty()) {
    o.nccl_register = *flag_value(model::Control::Register, model::Spelling::Flag, reg).nccl_reg;
    o.nccl_register_given = true;
  }
  parse_cta_policies(o, shared.cta_policy, shared.cta_option->count() > 0);
  check_cudagraph(o);
  o.gemm_dtype = model_arg([&] { return model::parse_dtype(gemm_dtype); }, "--gemm-dtype");
  o.mem_bytes = bytes_arg(mem, "--mem-bytes");
  if (o.mem_bytes < 4096 || o.mem_bytes > kMaxCollBytes)
    throw UsageError("--mem-bytes: must be between 4K and 64G");
  if (o.count < 1 || o.count > 10000) throw UsageError("--count: must be 1..10000");

  if (!gemm.empty()) {
    const auto dims = split(gemm, ',');
    if (dims.size() != 1 && dims.size() != 3)
      throw UsageError("--gemm: expected M or M,N,K, got '" + gemm + "'");
    std::vector<int64_t> v;
    for (const auto& x : dims) {
      std::size_t pos = 0;
      long long val = 0;
      try {
        val = std::stoll(x, &pos);
      } catch (...) {
        pos = 0;
      }
      if (x.empty() || pos != x.size() || val < 1 || val > kMaxGemmDim)
        throw UsageError("--gemm: dimension '" + x + "' must be an integer in 1..131072");
      v.push_back(val);
    }
    o.m = v[0];
    o.n = v.size() == 3 ? v[1] : v[0];
    o.k = v.size() == 3 ? v[2] : v[0];
  }

  parse_shape_options(o, shared.modes, shared.bps, shared.pads);
  const bool any_shape = std::any_of(o.modes.begin(), o.modes.end(), is_shape);
  if (o.compute == model::ComputeKind::CublasLt) {
    if (any_shape || !o.blocks_per_sm.empty() || !o.pads.empty())
      throw UsageError(
          "shape modes pad launches we control: use --compute builtin or membound (cuBLASLt "
          "kernels are shaped by `cco run`, through the preload library)");
  } else if (o.gemm_sms > 0) {
    throw UsageError("--gemm-sms applies to --compute cublaslt only");
  }
  if (o.gemm_sms < 0) throw UsageError("--gemm-sms: must be positive");
  if (o.green_sms < 0 || o.green_sms > 100000) throw UsageError("--green-sms: must be positive");
  check_nccl_and_outputs(o, shared);
  return o;
}

std::string rank_path(const std::string& path, int rank) {
  const std::string r = std::to_string(rank);
  if (const auto p = path.find("%r"); p != std::string::npos) return path.substr(0, p) + r + path.substr(p + 2);
  const auto dot = path.rfind('.');
  const auto slash = path.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + ".rank" + r;
  return path.substr(0, dot) + ".rank" + r + path.substr(dot);
}

std::vector<int64_t> sizes(const Options& o) {
  std::vector<int64_t> out;
  for (double s = static_cast<double>(o.min_bytes); s <= static_cast<double>(o.max_bytes) * (1 + 1e-12);
       s *= o.step_factor) {
    out.push_back(static_cast<int64_t>(std::llround(s)));
    if (o.max_bytes == o.min_bytes) break;
  }
  return out;
}

void parse_dtypes(Options& o, const std::string& text) {
  o.dtypes.clear();
  o.dtype_all = false;
  const auto items = split(text, ',');
  if (std::find(items.begin(), items.end(), "all") != items.end()) {
    if (items.size() != 1)
      throw UsageError("-d: 'all' stands alone (it runs float, half and bfloat16), got '" + text +
                       "'");
    o.dtype_all = true;
    o.dtypes = {model::DType::F32, model::DType::F16, model::DType::BF16};
    o.dtype = o.dtypes[0];
    return;
  }
  std::vector<model::DType> types;
  for (const auto& item : items) {
    if (item.empty()) throw UsageError("-d: empty type in '" + text + "'");
    const auto t = model_arg([&] { return model::parse_dtype(item); }, "-d");
    if (std::find(types.begin(), types.end(), t) != types.end())
      throw UsageError("-d: " + std::string(model::to_string(t)) + " is given twice in '" + text +
                       "'");
    types.push_back(t);
  }
  if (types.empty()) throw UsageError("-d: needs a type (got an empty value)");
  o.dtype = types[0];
  if (types.size() > 1) o.dtypes = types;
}

std::vector<model::DType> run_dtypes(const Options& o) {
  return o.dtypes.empty() ? std::vector<model::DType>{o.dtype} : o.dtypes;
}

std::string dtypes_label(const Options& o) {
  if (o.dtype_all) return "all";
  std::string s;
  for (const auto t : run_dtypes(o)) s += (s.empty() ? "" : ",") + std::string(model::to_string(t));
  return s;
}

std::string in_place_refusal(model::Collective c) {
  using model::Collective;
  switch (c) {
    case Collective::AllReduce:
    case Collective::Broadcast:
    case Collective::Reduce:
    case Collective::AllGather:
    case Collective::ReduceScatter:
      return {};
    case Collective::AllToAll:
    case Collective::SendRecv:
      return std::string(model::to_string(c)) +
             " has no in-place form in NCCL (nccl-tests times send == recv but cannot check it)";
    case Collective::Gather:
    case Collective::Scatter:
      return std::string(model::to_string(c)) +
             " is not timed in place (cco bench does allreduce, allgather, reducescatter, "
             "broadcast and reduce)";
  }
  return "unknown collective";
}

namespace {
/// The rows of the modes on the run's own communicator.
std::vector<RowSpec> mode_rows(const Options& o, const std::vector<Mode>& modes, bool shapeable,
                               int natural_bps, std::vector<std::string>* notes) {
  std::vector<RowSpec> rows;
  const std::optional<int> green = o.green_sms > 0 ? std::optional(o.green_sms) : std::nullopt;
  const auto row = [&](Mode m, int k, std::optional<int64_t> pad) {
    RowSpec r{m};
    r.set_k(k);
    r.controls.pad = pad;
    if (m != Mode::Seq) r.controls.green_sms = green;
    rows.push_back(r);
  };
  for (Mode m : modes) {
    if (!is_shape(m)) {
      row(m, 0, std::nullopt);
      continue;
    }
    if (!shapeable)
      throw UsageError(std::string("mode ") + to_string(m) + " needs a compute part whose launches are ours");
    if (!o.pads.empty()) {
      for (int64_t p : o.pads) row(m, 0, p);
    } else if (!o.blocks_per_sm.empty()) {
      for (int k : o.blocks_per_sm) row(m, k, std::nullopt);
    } else {
      if (natural_bps <= 1 && notes)
        notes->push_back(std::string("mode ") + to_string(m) +
                         ": the kernel already runs at 1 block per SM; nothing to shape");
      for (int k = natural_bps - 1; k >= 1; --k) row(m, k, std::nullopt);
    }
  }
  return rows;
}
}  // namespace

void check_cudagraph(const Options& o) {
  if (o.cudagraph < 0 || o.cudagraph > kMaxGraphReplays)
    throw UsageError("-G: expected a number of graph replays from 0 to " +
                     std::to_string(kMaxGraphReplays) + ", got " + std::to_string(o.cudagraph));
  if (o.cudagraph == 0) return;
  if (o.in_place)
    throw UsageError("-G with --in-place 1: a replayed in-place collective reduces its own output "
                     "again, so its answer cannot be checked (time it with -G 0)");
  if (o.green_sms > 0)
    throw UsageError("-G with --green-sms: a green context's stream cannot join the collective's "
                     "stream in one captured graph (time partitions with -G 0)");
  const bool zero = o.nccl_cta_policy == model::CtaPolicy::Zero ||
                    std::find(o.row_cta_policies.begin(), o.row_cta_policies.end(),
                              model::CtaPolicy::Zero) != o.row_cta_policies.end();
  if (zero)
    throw UsageError("-G with --nccl-cta-policy zero: its rows run one collective on two "
                     "communicators, which one thread must not replay in one graph (NCCL's "
                     "graph-mixing rule; time them with -G 0)");
}

std::vector<RowSpec> expand_rows(const Options& o, bool shapeable, int natural_bps,
                                 std::vector<std::string>* notes) {
  std::vector<Mode> modes = o.modes;
  if (!o.modes_given) {
    modes = {Mode::Seq, Mode::Concurrent, Mode::Priority};
    if (shapeable) {
      modes.push_back(Mode::Shape);
      modes.push_back(Mode::ShapePriority);
    } else if (notes) {
      notes->push_back("shape modes left out: the compute launches are not ours (cuBLASLt); "
                       "`cco run` shapes them through the preload library");
    }
  }
  std::vector<RowSpec> rows = mode_rows(o, modes, shapeable, natural_bps, notes);
  // Each further CTA policy repeats the overlapped rows on a communicator of its own (zero with
  // its buffers in a symmetric window, unless the run registers them already or the user chose).
  const std::size_t base = rows.size();
  for (const model::CtaPolicy p : o.row_cta_policies) {
    for (std::size_t i = 0; i < base; ++i) {
      if (rows[i].mode == Mode::Seq) continue;
      RowSpec r = rows[i];
      r.controls.cta_policy = p;
      if (p == model::CtaPolicy::Zero && !o.nccl_register_given &&
          o.nccl_register != model::CommRegister::Window)
        r.controls.nccl_reg = model::CommRegister::Window;
      rows.push_back(r);
    }
  }
  return rows;
}


}  // namespace cco::bench
