#include "report/results.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "model/schema.hpp"
#include "results/fields.hpp"

namespace cco::report {

using nlohmann::json;
using namespace results::fields;

const char* kind_name(ResultKind k) {
  switch (k) {
    case ResultKind::Step:
      return "step";
    case ResultKind::Tune:
      return "tune";
    case ResultKind::Bench:
      break;
  }
  return "bench";
}

std::optional<ResultKind> result_kind(const json& j) {
  if (!j.is_object()) return std::nullopt;
  const std::string s = str_of(j, "schema");
  if (s == model::kBenchSchema) return ResultKind::Bench;
  if (s == model::kStepBenchSchema) return ResultKind::Step;
  if (s == model::kPlanSchema) return ResultKind::Tune;
  return std::nullopt;
}

std::string ranks_text(int n) {
  return n == 1 ? std::string("1 rank") : fmt::format("{} ranks", n);
}

double row_spread(const SweepRow& r) {
  return r.t_us > 0 ? (r.t_p75_us - r.t_p25_us) / r.t_us : kNaN;
}

namespace {

// o[key] as a non-empty array (the rows).
const json& rows_of(const json& o, const char* key, const std::string& src, const std::string& w) {
  auto it = o.find(key);
  if (it == o.end()) fail(src, "missing \"" + w + "\"");
  if (!it->is_array()) fail(src, "\"" + w + "\" is not an array");
  if (it->empty()) fail(src, "\"" + w + "\" is empty: nothing to report");
  return *it;
}

std::string describe(const std::string& name, const std::string& file) {
  if (name.empty() || file.empty()) return name + file;
  return name + " (" + file + ")";
}

// An object's members as (name, value) sorted by name, strings unquoted, minus `skip`.
std::vector<std::pair<std::string, std::string>> params_of(const json& p,
                                                           const std::set<std::string>& skip) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!p.is_object()) return out;
  for (auto it = p.begin(); it != p.end(); ++it)
    if (!skip.count(it.key()))
      out.emplace_back(it.key(), it->is_string() ? it->get<std::string>() : it->dump());
  return out;
}

int nranks_of(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_number_integer() ? it->get<int>() : 0;
}

std::vector<std::string> notes_of(const json& o) {
  std::vector<std::string> out;
  if (auto n = o.find("notes"); n != o.end() && n->is_array())
    for (const auto& x : *n)
      if (x.is_string()) out.push_back(x.get<std::string>());
  return out;
}

// The fields step rows and tune rows share; label (or mode) required.
SweepRow common_row(const json& r, const std::string& src, const std::string& w) {
  if (!r.is_object()) fail(src, w + ": not an object");
  SweepRow row;
  row.label = str_of(r, "label");
  row.mode = str_of(r, "mode");
  if (row.label.empty() && row.mode.empty()) fail(src, w + ": missing \"label\"");
  if (row.label.empty()) row.label = row.mode;
  if (row.mode.empty()) row.mode = row.label.substr(0, row.label.find(' '));
  row.target_k = static_cast<int>(int_of(r, "blocks_per_sm", src, w, false));
  row.efficiency = num_or_nan(r, "efficiency", src, w);
  row.reduction = num_or_nan(r, "reduction", src, w);
  row.efficiency_best = num_or_nan(r, "efficiency_best", src, w);
  row.of_ideal = num_or_nan(r, "of_ideal", src, w);
  row.wrong = r.contains("wrong") && !r["wrong"].is_null() ? int_of(r, "wrong", src, w, true) : -1;
  return row;
}

void check_time(const SweepRow& row, const std::string& src, const std::string& w,
                const char* field) {
  if (std::isnan(row.t_us))
    fail(src, w + ": the row has no time (" + std::string(field) + " is null)");
  if (row.t_us < 0) fail(src, w + ": negative time");
}

}  // namespace

BenchSweep step_from_json(const json& j, const std::string& src) {
  check_schema(j, src, model::kStepBenchSchema, "step bench result", "step bench");
  BenchSweep s;
  s.kind = ResultKind::Step;
  s.source = src;
  s.date = str_of(j, "date");
  s.nranks = nranks_of(j, "nranks");
  if (auto d = j.find("devices");
      d != j.end() && d->is_array() && !d->empty() && (*d)[0].is_object())
    s.device = str_of((*d)[0], "name");
  if (auto w = j.find("workload"); w != j.end() && w->is_object()) {
    s.workload = describe(str_of(*w, "name"), str_of(*w, "file"));
    if (auto p = w->find("parameters"); p != w->end()) s.params = params_of(*p, {});
  }
  auto t = j.find("times_us");
  if (t == j.end()) fail(src, "missing \"times_us\"");
  if (!t->is_object()) fail(src, "\"times_us\" is not an object");
  s.t_seq_us = median_of(*t, "t_seq", src, "times_us", "median");
  s.t_ideal_us = median_of(*t, "t_ideal", src, "times_us", "median");
  s.t_comp_us = median_of(*t, "t_comp", src, "times_us", "median");
  s.t_comm_us = median_of(*t, "t_comm", src, "times_us", "median");
  s.notes = notes_of(j);
  const json& rows = rows_of(j, "rows", src, "rows");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string w = "rows[" + std::to_string(i) + "]";
    SweepRow row = common_row(rows[i], src, w);
    row.t_us = median_of(rows[i], "time_us", src, w, "median");
    row.t_p25_us = median_of(rows[i], "time_us", src, w, "p25");
    row.t_p75_us = median_of(rows[i], "time_us", src, w, "p75");
    check_time(row, src, w, "\"time_us\".\"median\"");
    row.t_seq_us = s.t_seq_us;
    row.t_ideal_us = s.t_ideal_us;
    row.t_comp_us = s.t_comp_us;
    row.t_comm_us = s.t_comm_us;
    s.rows.push_back(row);
  }
  return s;
}

namespace {

// What a tune ran: a step workload (its name, file and parameters) or a pair (its compute part,
// collective and settings).
void tune_workload(const json& tu, BenchSweep& s) {
  auto w = tu.find("workload");
  if (w == tu.end() || !w->is_object()) return;
  if (w->contains("file") || w->contains("name")) {
    s.workload = describe(str_of(*w, "name"), str_of(*w, "file"));
    if (auto p = w->find("parameters"); p != w->end()) s.params = params_of(*p, {});
    if (s.nranks == 0) s.nranks = nranks_of(*w, "ranks");
    return;
  }
  s.compute = str_of(*w, "compute");
  s.collective = str_of(*w, "collective");
  s.datatype = str_of(*w, "datatype");
  s.workload = s.compute + " || " + s.collective + " " + s.datatype;
  // How the tune measured (iterations, averaging, checking) and what it searched (modes, k, pads,
  // NCCL and SM settings: the rows) are no part of what ran; ranks are compared on their own.
  s.params = params_of(*w, {"compute", "collective", "datatype", "iters", "warmup_iters",
                            "average", "check", "bootstrap", "blocks_per_sm", "modes", "pad",
                            "nccl", "gemm_sms", "green_sms", "ngpus"});
}

std::string label_of(const json& tu, const char* key) {
  auto it = tu.find(key);
  return it != tu.end() && it->is_object() ? str_of(*it, "label") : std::string();
}

}  // namespace

BenchSweep tune_from_json(const json& j, const std::string& src) {
  check_schema(j, src, model::kPlanSchema, "tune result", "plan");
  auto tu = j.find("tuning");
  if (tu == j.end() || tu->is_null())
    fail(src, "not a tune result: the plan has no \"tuning\" section (cco tune --plan writes "
              "one, cco plan does not)");
  if (!tu->is_object()) fail(src, "\"tuning\" is not an object");
  BenchSweep s;
  s.kind = ResultKind::Tune;
  s.source = src;
  s.date = str_of(*tu, "date");
  if (auto m = j.find("made_for"); m != j.end() && m->is_object()) {
    s.device = str_of(*m, "device");
    s.nranks = nranks_of(*m, "nranks");
  }
  tune_workload(*tu, s);
  s.t_seq_us = num_or_nan(*tu, "t_seq_us", src, "tuning");
  s.t_ideal_us = num_or_nan(*tu, "t_ideal_us", src, "tuning");
  s.t_comp_us = num_or_nan(*tu, "t_comp_us", src, "tuning");
  s.t_comm_us = num_or_nan(*tu, "t_comm_us", src, "tuning");
  s.choice = label_of(*tu, "choice");
  s.applied = label_of(*tu, "applied");
  s.notes = notes_of(*tu);
  const json& rows = rows_of(*tu, "tried", src, "tuning.tried");
  const bool seq_recorded = !std::isnan(s.t_seq_us);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string w = "tuning.tried[" + std::to_string(i) + "]";
    SweepRow row = common_row(rows[i], src, w);
    if (!rows[i].contains("t_us")) fail(src, w + ": missing \"t_us\"");
    row.t_us = num_or_nan(rows[i], "t_us", src, w);
    row.t_p25_us = num_or_nan(rows[i], "p25_us", src, w);
    row.t_p75_us = num_or_nan(rows[i], "p75_us", src, w);
    check_time(row, src, w, "\"t_us\"");
    // A pair's parts alone are per row (an SM budget changes the compute part).
    row.t_comp_us = num_or_nan(rows[i], "comp_alone_us", src, w);
    row.t_comm_us = num_or_nan(rows[i], "comm_alone_us", src, w);
    if (std::isnan(row.t_comp_us)) row.t_comp_us = s.t_comp_us;
    if (std::isnan(row.t_comm_us)) row.t_comm_us = s.t_comm_us;
    row.t_ideal_us = !std::isnan(s.t_ideal_us) ? s.t_ideal_us : std::max(row.t_comp_us, row.t_comm_us);
    row.t_seq_us = seq_recorded                                 ? s.t_seq_us
                   : std::isfinite(row.reduction) && row.reduction < 1 ? row.t_us / (1 - row.reduction)
                                                                       : kNaN;
    s.rows.push_back(row);
  }
  if (!seq_recorded && !std::isnan(s.rows.front().t_seq_us)) {
    s.t_seq_us = s.rows.front().t_seq_us;
    s.notes.push_back("T_seq is time / (1 - reduction) of the rows: a pair tune records none");
  }
  return s;
}

BenchSweep result_from_json(const json& j, const std::string& src) {
  const auto k = result_kind(j);
  if (k == ResultKind::Step) return step_from_json(j, src);
  if (k == ResultKind::Tune) return tune_from_json(j, src);
  return sweep_from_json(j, src);
}

namespace {

std::string pick_of(const BenchSweep& s, const SweepRow& r) {
  if (s.kind != ResultKind::Tune) return {};
  const bool c = r.label == s.choice, a = r.label == s.applied;
  return c && a ? "choice+applied" : c ? "choice" : a ? "applied" : "";
}

std::string wrong_text(int64_t w, const char* none) {
  return w < 0 ? std::string(none) : std::to_string(w);
}

std::string result_csv(const BenchSweep& s) {
  auto v = [](double x) { return std::isfinite(x) ? fmt::format("{:.6g}", x) : std::string(); };
  std::string o =
      "label,mode,t_us,p25_us,p75_us,spread,t_seq_us,t_ideal_us,reduction,efficiency,"
      "efficiency_best,of_ideal,wrong,pick\n";
  for (const auto& r : s.rows)
    o += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", csv_field(r.label),
                     csv_field(r.mode), v(r.t_us), v(r.t_p25_us), v(r.t_p75_us), v(row_spread(r)),
                     v(r.t_seq_us), v(r.t_ideal_us), v(r.reduction), v(r.efficiency),
                     v(r.efficiency_best), v(r.of_ideal), wrong_text(r.wrong, ""), pick_of(s, r));
  return o;
}

std::string result_markdown(const BenchSweep& s) {
  const bool tune = s.kind == ResultKind::Tune;
  std::string o = fmt::format("`{}` ({} result: {}; {}, {}, {})\n\n", s.source,
                              kind_name(s.kind), s.device.empty() ? "?" : s.device, s.workload,
                              ranks_text(s.nranks), s.date);
  if (tune) o += fmt::format("choice: `{}`; applied: `{}`\n\n", s.choice, s.applied);
  o += "| row | time (us) | spread (%) | reduct (%) | eff | E_best | of_ideal (%) | wrong |";
  o += tune ? " pick |\n" : "\n";
  o += tune ? "|---|---|---|---|---|---|---|---|---|\n" : "|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : s.rows) {
    o += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |", r.label,
                     format_number(r.t_us, 1), format_number(100 * row_spread(r), 1),
                     format_number(100 * r.reduction, 1), format_number(r.efficiency, 2),
                     format_number(r.efficiency_best, 2), format_number(100 * r.of_ideal, 1),
                     wrong_text(r.wrong, "-"));
    o += tune ? fmt::format(" {} |\n", pick_of(s, r)) : std::string("\n");
  }
  return o;
}

std::string result_text(const BenchSweep& s) {
  const bool tune = s.kind == ResultKind::Tune;
  std::string o = fmt::format("# {} result: {} ({}; {}, {}, {})\n", kind_name(s.kind), s.source,
                              s.device.empty() ? "?" : s.device, s.workload, ranks_text(s.nranks),
                              s.date);
  if (!s.params.empty()) {
    o += "# parameters:";
    for (const auto& [k, v] : s.params) o += " " + k + "=" + v;
    o += "\n";
  }
  std::string times;
  for (const auto& [name, v] : {std::pair<const char*, double>{"T_seq", s.t_seq_us},
                                {"T_ideal", s.t_ideal_us},
                                {"T_comp", s.t_comp_us},
                                {"T_comm", s.t_comm_us}})
    if (std::isfinite(v)) times += fmt::format("{}{} {} us", times.empty() ? "" : ", ", name,
                                               format_number(v, 1));
  if (!times.empty()) o += "# " + times + "\n";
  if (tune)
    o += fmt::format("# choice: {} (the fastest row); applied: {} (what cco run applies)\n",
                     s.choice.empty() ? "?" : s.choice, s.applied.empty() ? "?" : s.applied);
  for (const auto& n : s.notes) o += "# note: " + n + "\n";
  o += "# spread = (p75 - p25) / time; reduct = 1 - time / T_seq; eff = (T_seq - time) / "
       "min(T_comp, T_comm); of_ideal = (T_seq - time) / (T_seq - T_ideal)\n";
  const auto line = [&](char lead, const std::string& label, const std::string& t,
                        const std::string& sp, const std::string& red, const std::string& e,
                        const std::string& eb, const std::string& oi, const std::string& w,
                        const std::string& pick) {
    std::string l = fmt::format("{} {:<32} {:>10} {:>7} {:>8} {:>6} {:>6} {:>8} {:>6}", lead,
                                label, t, sp, red, e, eb, oi, w);
    if (tune && !pick.empty()) l += fmt::format("  {}", pick);
    return l + "\n";
  };
  o += line('#', "row", "time", "spread", "reduct", "eff", "E_best", "of_ideal", "wrong",
            tune ? "pick" : "");
  o += line('#', "", "(us)", "(%)", "(%)", "", "", "(%)", "", "");
  for (const auto& r : s.rows)
    o += line(' ', r.label, format_number(r.t_us, 1), format_number(100 * row_spread(r), 1),
              format_number(100 * r.reduction, 1), format_number(r.efficiency, 2),
              format_number(r.efficiency_best, 2), format_number(100 * r.of_ideal, 1),
              wrong_text(r.wrong, "-"), pick_of(s, r));
  return o;
}

json val(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}

}  // namespace

std::string format_result(const BenchSweep& s, TableFormat f) {
  if (s.kind == ResultKind::Bench) return format_sweep(s, f);
  if (f == TableFormat::Csv) return result_csv(s);
  if (f == TableFormat::Markdown) return result_markdown(s);
  return result_text(s);
}

json result_json(const BenchSweep& s) {
  json j = {{"kind", kind_name(s.kind)},
            {"input", s.source},
            {"workload", s.workload},
            {"device", s.device},
            {"nranks", s.nranks},
            {"date", s.date},
            {"t_seq_us", val(s.t_seq_us)},
            {"t_ideal_us", val(s.t_ideal_us)},
            {"t_comp_us", val(s.t_comp_us)},
            {"t_comm_us", val(s.t_comm_us)},
            {"notes", s.notes}};
  model::stamp_schema(j, model::kResultReportSchema);
  json params = json::object();
  for (const auto& [k, v] : s.params) params[k] = v;
  j["parameters"] = params;
  if (s.kind == ResultKind::Tune) {
    j["choice"] = s.choice;
    j["applied"] = s.applied;
  }
  json rows = json::array();
  for (const auto& r : s.rows) {
    json x = {{"label", r.label},
              {"mode", r.mode},
              {"t_us", val(r.t_us)},
              {"p25_us", val(r.t_p25_us)},
              {"p75_us", val(r.t_p75_us)},
              {"spread", val(row_spread(r))},
              {"t_seq_us", val(r.t_seq_us)},
              {"reduction", val(r.reduction)},
              {"efficiency", val(r.efficiency)},
              {"efficiency_best", val(r.efficiency_best)},
              {"of_ideal", val(r.of_ideal)},
              {"wrong", r.wrong < 0 ? json(nullptr) : json(r.wrong)}};
    if (s.kind == ResultKind::Tune) x["pick"] = pick_of(s, r);
    rows.push_back(std::move(x));
  }
  j["rows"] = rows;
  return j;
}

}  // namespace cco::report
