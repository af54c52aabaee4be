// The GPU-free half of `cco bench --workload` (workload_bench.hpp): its options and its report
// renderings -- the table, JSON (schema ccoverlap.step_bench) and CSV. In cco.bench_core, so
// their tests run without CUDA; run_step (workload_bench.cpp) needs the GPU.
#include "bench/workload_bench.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "bench/flags.hpp"
#include "bench/workload_args.hpp"

namespace cco::bench {
namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

nlohmann::json timing_json(const Timing& t) {
  const auto s = t.summary();
  return {{"median", s.median},  {"p25", s.p25}, {"p75", s.p75},
          {"min", s.min},        {"max", s.max}, {"spread", s.n ? s.rel_iqr() : 0.0},
          {"samples", t.samples}};
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------

StepOptions parse_step_options(const std::vector<std::string>& args) {
  bench::StepArgs sa;
  try {
    sa = bench::split_step_args(args);
  } catch (const model::Error& e) {
    throw UsageError(e.what());
  }
  if (sa.workload.empty()) throw UsageError("--workload FILE is missing");
  if (sa.validate)
    throw UsageError("--validate checks the file without running it (workload::load_step)");
  if (sa.gpu_memory > 0)
    throw UsageError("--gpu-memory goes with --validate (a run checks the GPUs' own memory)");
  refuse_out_of_scope(sa.rest, kStep);  // pair-only flags, with the reason
  StepOptions so;
  so.workload = sa.workload;
  so.params = sa.params;
  Options& o = so.common;
  o.argv = args;
  CLI::App app{"cco bench --workload", "bench"};
  app.set_help_flag();
  app.allow_extras(false);
  SharedText shared;
  add_shared_options(app, o, shared);  // a step takes only the options a pair shares with it
  // Run-wide budgets, as for pairs: every cuBLASLt GEMM's SM target, the arena's registration.
  std::string reg;
  add_flag_option(app, F::GemmSms, o.gemm_sms);
  add_flag_option(app, F::NcclRegister, reg);
  parse_app(app, sa.rest);
  check_counts(o, shared.check);
  parse_shape_options(o, shared.modes, shared.bps, shared.pads);
  if (!reg.empty()) {
    o.nccl_register = *flag_value(model::Control::Register, model::Spelling::Flag, reg).nccl_reg;
    o.nccl_register_given = true;
  }
  if (o.gemm_sms < 0) throw UsageError("--gemm-sms: must be positive");
  parse_cta_policies(o, shared.cta_policy, shared.cta_option->count() > 0);
  check_nccl_and_outputs(o, shared);
  return so;
}

// ---------------------------------------------------------------------------------------------
// Report helpers
// ---------------------------------------------------------------------------------------------

unsigned long long StepReport::wrong() const {
  unsigned long long w = 0;
  for (const auto& r : rows) w += r.wrong;
  return w;
}

model::OverlapTimes StepReport::times(const StepRow& row) const {
  model::OverlapTimes t;
  t.t_comp = t_comp.median();
  t.t_comm = t_comm.median();
  t.t_seq = t_seq.median();
  t.t = row.t.median();
  return t;
}

// ---------------------------------------------------------------------------------------------
// Renderings
// ---------------------------------------------------------------------------------------------

std::string format_step_report(const StepReport& r) {
  std::ostringstream out;
  const auto& s = r.step;
  out << "# ccoverlap step bench: workload " << s.name << " (" << s.file << ") on " << r.nranks
      << " rank" << (r.nranks == 1 ? "" : "s") << " (" << r.bootstrap << "), " << r.date << "\n";
  out << "# parameters:";
  for (const auto& p : s.params)
    out << " " << p.name << "=" << p.value_text() << (p.overridden ? "*" : "");
  out << "\n";
  int gemms = 0, mems = 0, colls = 0;
  for (const auto& op : s.ops) {
    if (op.kind == workload::OpKind::Gemm)
      ++gemms;
    else if (op.is_membound())
      ++mems;
    else
      ++colls;
  }
  out << "# ops: " << s.ops.size() << " (" << gemms << " GEMMs, " << mems << " memory-bound, "
      << colls << " collectives); device memory per rank "
      << fmt("%.2f", static_cast<double>(r.memory_bytes) / (1 << 30)) << " GiB\n";
  for (const auto& d : r.devices)
    out << "# rank " << d.value("rank", 0) << ": device " << d.value("device", 0) << " "
        << d.value("name", "") << " (" << d.value("pci_bus_id", "") << ", " << d.value("sms", 0)
        << " SMs) on " << d.value("host", "") << "\n";
  out << "# versions:";
  for (auto it = r.versions.begin(); it != r.versions.end(); ++it)
    out << " " << it.key() << " " << it.value().get<std::string>();
  out << "\n";
  const double tc = r.t_comp.median(), tm = r.t_comm.median(), ts = r.t_seq.median(),
               ti = r.t_ideal.median();
  out << "# T_comp  " << fmt("%12.1f", tc) << " us  (sum of compute ops alone)\n";
  out << "# T_comm  " << fmt("%12.1f", tm) << " us  (sum of collectives alone)\n";
  out << "# T_seq   " << fmt("%12.1f", ts) << " us  (every op on one stream, issue order)\n";
  out << "# T_ideal " << fmt("%12.1f", ti)
      << " us  (critical path of the graph, ops alone; ideal reduction "
      << fmt("%.2f", ts > 0 ? 100.0 * (1 - ti / ts) : 0.0) << "%)\n";
  if (r.t_mem_us > 0)
    out << "# T_mem   " << fmt("%12.1f", r.t_mem_us)
        << " us  (memory-traffic floor: the ops' least bytes at peak bandwidth; "
        << (r.t_mem_us >= ti ? "it is T_ideal here" : "below T_ideal, not binding") << ")\n";
  out << "#\n";
  out << "#                    mode       time   spread   reduct    ideal      eff  of_ideal   "
         "#wrong\n";
  out << "#                               (us)\n";
  for (const auto& row : r.rows) {
    const auto t = r.times(row);
    const double t_ideal_red = ts > 0 ? 1 - ti / ts : 0;
    const double possible = ts - ti;
    char buf[256];
    std::snprintf(buf, sizeof buf, " %24s %10.1f %7.2f%% %7.2f%% %7.2f%% %8.3f %8.1f%% %8llu\n",
                  row.spec.label().c_str(), t.t, 100.0 * row.t.summary().rel_iqr(),
                  100.0 * model::reduction(t), 100.0 * t_ideal_red, model::overlap_efficiency(t),
                  possible > 0 ? 100.0 * (ts - t.t) / possible : 0.0,
                  static_cast<unsigned long long>(row.wrong));
    out << buf;
  }
  for (const auto& row : r.rows)
    if (!row.shaping.empty()) out << "# " << row.spec.label() << ": " << row.shaping << "\n";
  // A row below T_ideal is possible and says something: its ops ran faster than alone.
  for (const auto& row : r.rows)
    if (ti > 0 && row.t.median() < ti)
      out << "# " << row.spec.label() << " ran below T_ideal: its ops took less than their time "
          << "alone" << (row.spec.label().find("cta=zero") != std::string::npos
                             ? " (its all-gathers and all-to-alls ran on the copy engines, not as "
                               "timed alone: a faster collective, not better overlap)"
                             : " (back-to-back ops share launch and ramp-up costs that ops timed "
                               "alone pay each)")
          << "\n";
  for (const auto& n : r.notes) out << "# note: " << n << "\n";
  std::vector<std::string> bad;
  for (const auto& op : r.ops)
    if (op.wrong > 0) bad.push_back(op.id + " (" + std::to_string(op.wrong) + ")");
  if (!bad.empty()) {
    out << "# wrong elements in ops:";
    for (const auto& b : bad) out << " " << b;
    out << "\n";
  }
  out << "# Out of bounds values : " << r.wrong() << (r.wrong() == 0 ? " OK" : " FAILED")
      << (r.checked ? "" : " (not checked: -c 0)") << "\n";
  const StepRow* best = nullptr;
  for (const auto& row : r.rows)
    if (!best || row.t.median() < best->t.median()) best = &row;
  if (best) {
    const auto t = r.times(*best);
    out << "# best: " << best->spec.label() << " " << fmt("%.1f", t.t) << " us, reduction "
        << fmt("%.2f", 100.0 * model::reduction(t)) << "% of T_seq (ideal "
        << fmt("%.2f", ts > 0 ? 100.0 * (1 - ti / ts) : 0.0) << "%)\n";
  }
  return out.str();
}

nlohmann::json step_report_json(const StepReport& r) {
  nlohmann::json j;
  j["schema"] = kStepSchema;
  j["schema_version"] = kStepSchemaVersion;
  j["argv"] = r.argv;
  j["date"] = r.date;
  j["host"] = r.host;
  j["bootstrap"] = r.bootstrap;
  j["nranks"] = r.nranks;
  j["versions"] = r.versions;
  j["devices"] = r.devices;
  j["config"] = r.config;
  j["workload"] = workload::to_json(r.step);
  j["memory_bytes"] = r.memory_bytes;
  j["checked"] = r.checked;
  j["times_us"] = {{"t_comp", timing_json(r.t_comp)},
                   {"t_comm", timing_json(r.t_comm)},
                   {"t_seq", timing_json(r.t_seq)},
                   {"t_ideal", timing_json(r.t_ideal)}};
  j["t_mem_us"] = r.t_mem_us > 0 ? nlohmann::json(r.t_mem_us) : nlohmann::json();
  j["ops"] = nlohmann::json::array();
  for (const auto& op : r.ops)
    j["ops"].push_back({{"id", op.id},
                        {"kind", op.kind},
                        {"stream", op.stream},
                        {"alone_us", timing_json(op.alone)},
                        {"flops", op.flops},
                        {"traffic_bytes", op.traffic},
                        {"shapeable", op.shapeable},
                        {"wrong", op.wrong}});
  j["rows"] = nlohmann::json::array();
  const double ts = r.t_seq.median(), ti = r.t_ideal.median();
  for (const auto& row : r.rows) {
    const auto t = r.times(row);
    j["rows"].push_back({{"mode", to_string(row.spec.mode)},
                         {"label", row.spec.label()},
                         {"blocks_per_sm", row.spec.k()},
                         {"pad", row.spec.controls.pad.value_or(-1)},
                         {"shaping", row.shaping},
                         {"time_us", timing_json(row.t)},
                         {"reduction", model::reduction(t)},
                         {"ideal_reduction", ts > 0 ? 1 - ti / ts : 0.0},
                         {"efficiency", model::overlap_efficiency(t)},
                         {"of_ideal", ts - ti > 0 ? (ts - t.t) / (ts - ti) : 0.0},
                         {"wrong", row.wrong}});
  }
  j["notes"] = r.notes;
  if (!r.comm_paths.empty()) j["comm_paths"] = r.comm_paths;
  j["wrong"] = r.wrong();
  return j;
}

std::vector<std::string> step_csv_columns() {
  return {"workload",  "nranks",          "mode",       "k",          "pad",       "shaping",
          "time_us",   "spread",          "t_seq_us",   "t_ideal_us", "t_comp_us", "t_comm_us",
          "reduction", "ideal_reduction", "efficiency", "of_ideal",   "wrong"};
}

std::string step_report_csv(const StepReport& r) {
  std::ostringstream out;
  const auto cols = step_csv_columns();
  for (std::size_t i = 0; i < cols.size(); ++i) out << (i ? "," : "") << cols[i];
  out << "\n";
  const double ts = r.t_seq.median(), ti = r.t_ideal.median();
  for (const auto& row : r.rows) {
    const auto t = r.times(row);
    std::string shaping = row.shaping;
    std::replace(shaping.begin(), shaping.end(), ',', ';');
    out << r.step.name << "," << r.nranks << "," << to_string(row.spec.mode) << ","
        << row.spec.k() << "," << row.spec.controls.pad.value_or(-1) << "," << shaping << ","
        << fmt("%.3f", t.t) << "," << fmt("%.5f", row.t.summary().rel_iqr()) << ","
        << fmt("%.3f", ts) << "," << fmt("%.3f", ti) << "," << fmt("%.3f", t.t_comp) << ","
        << fmt("%.3f", t.t_comm) << "," << fmt("%.5f", model::reduction(t)) << ","
        << fmt("%.5f", ts > 0 ? 1 - ti / ts : 0.0) << ","
        << fmt("%.5f", model::overlap_efficiency(t)) << ","
        << fmt("%.5f", ts - ti > 0 ? (ts - t.t) / (ts - ti) : 0.0) << "," << row.wrong << "\n";
  }
  return out.str();
}

}  // namespace cco::bench
