#include "bench/report.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <sstream>

#include "model/cta_policy.hpp"
#include "model/occupancy.hpp"
#include "results/bench.hpp"

namespace cco::bench {

model::OverlapTimes Row::times() const {
  return {t_comp.median(), t_comm.median(), t_seq.median(), t.median(), t_mem_us};
}

const std::string& row_dtype(const Row& row, const Report& r) {
  return row.dtype.empty() ? r.dtype : row.dtype;
}

BestParts best_parts(const Report& r, int64_t bytes, const std::string& dtype) {
  BestParts b;
  auto take = [](double& best, const Timing& t) {
    if (t.samples.empty()) return;
    const double m = t.median();
    if (m > 0 && (best == 0 || m < best)) best = m;
  };
  for (const auto& row : r.rows) {
    if (row.bytes != bytes || (!dtype.empty() && row_dtype(row, r) != dtype)) continue;
    take(b.comp, row.t_comp);
    take(b.comp, row.t_comp_alone);
    take(b.comm, row.t_comm);
    take(b.comm, row.t_comm_alone);
  }
  return b;
}

double efficiency_best(const Row& row, const Report& r) {
  const auto b = best_parts(r, row.bytes, row.dtype);
  return model::efficiency_best(b.comp, b.comm, row.t.median());
}

namespace {

std::string num(double v, int prec) {
  if (std::isnan(v)) return "n/a";
  return fmt::format("{:.{}f}", v, prec);
}

/// The mode and budgets; the shape target and padding have columns of their own.
std::string mode_label(const Row& row) { return to_string(row.spec.mode) + row.spec.budgets(); }

std::string bps_label(const Row& row) {
  return row.blocks_per_sm > 0 ? std::to_string(row.blocks_per_sm) : "-";
}

results::BenchTiming timing_record(const Timing& t) {
  const auto s = t.summary();
  return {s.median, s.p25, s.p75, s.min, s.max, t.samples};
}

double tflops(const Row& r) {
  const double t = r.t_comp_part.median();
  return r.flops > 0 && t > 0 ? r.flops / (t * 1e-6) / 1e12 : std::nan("");
}

/// nccl-tests' algbw: the collective's size over its time in this row's run (GB/s).
double algbw(const Row& r) {
  const double t = r.t_comm_part.median();
  return t > 0 ? model::algbw_gbps(static_cast<double>(r.bytes), t * 1e-6) : std::nan("");
}

/// nccl-tests' busbw: algbw times the collective's factor for n ranks.
double busbw(const Row& r) { return algbw(r) * r.comm_busbw_factor; }

/// algbw of the collective alone: out of place (T_comm) or in place.
double alone_algbw(const Row& r, bool in_place) {
  const double t = (in_place ? r.t_comm_in_place : r.t_comm).median();
  return t > 0 ? model::algbw_gbps(static_cast<double>(r.bytes), t * 1e-6) : std::nan("");
}

/// Whether the rows ran more than one data type (-d all or a list).
bool several_dtypes(const Report& r) {
  for (const auto& row : r.rows)
    if (row_dtype(row, r) != row_dtype(r.rows.front(), r)) return true;
  return false;
}

bool any_in_place(const Report& r) {
  for (const auto& row : r.rows)
    if (row.in_place) return true;
  return false;
}

}  // namespace

std::string format_header(const Report& r) {
  std::ostringstream o;
  o << "# ccoverlap bench (schema " << kSchema << " " << kSchemaVersion << ")\n";
  o << "# argv:";
  for (const auto& a : r.argv) o << " " << a;
  o << "\n# date: " << r.date << "  host: " << r.host << "  bootstrap: " << r.bootstrap
    << "  ranks: " << r.nranks << "\n";
  for (const auto& [k, v] : r.versions.items())
    o << "# " << k << ": " << (v.is_string() ? v.get<std::string>() : v.dump()) << "\n";
  for (const auto& d : r.devices)
    o << "#  rank " << d.value("rank", 0) << " device " << d.value("device", 0) << " ["
      << d.value("pci_bus_id", std::string("?")) << "] " << d.value("name", std::string("?"))
      << " (" << d.value("sms", 0) << " SMs)\n";
  o << "# compute: " << r.compute << "\n";
  o << "# collective: " << r.collective << " " << r.dtype << " " << r.redop << "\n";
  const char* agg[] = {"rank 0's time", "the mean over ranks", "the min over ranks", "the max over ranks"};
  const int a = r.config.contains("average") ? r.config["average"].get<int>() : 3;
  o << "# times in us: median over samples, a sample being " << agg[a & 3] << "; spread = IQR/median\n";
  for (const auto& n : r.notes) o << "# note: " << n << "\n";
  return o.str();
}

std::string format_table_header() {
  std::string h1 = fmt::format(
      "#{:>11} {:>11} {:>9} {:>6} {:>15} {:>4} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6} "
      "{:>7} {:>7} {:>6} {:>6} {:>8} {:>7} {:>7} {:>7}\n",
      "size", "count", "type", "redop", "mode", "bps", "pad", "T_comp", "T_comm", "T_seq",
      "T_ideal", "Tc_mode", "time", "spread", "reduct", "ideal", "eff", "E_best", "TFLOP/s",
      "algbw", "busbw", "#wrong");
  std::string h2 = fmt::format(
      "#{:>11} {:>11} {:>9} {:>6} {:>15} {:>4} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6} "
      "{:>7} {:>7} {:>6} {:>6} {:>8} {:>7} {:>7} {:>7}\n",
      "(B)", "(elements)", "", "", "", "", "(B)", "(us)", "(us)", "(us)", "(us)", "(us)", "(us)",
      "(%)", "(%)", "(%)", "", "", "", "(GB/s)", "(GB/s)", "");
  return h1 + h2;
}

std::string format_row(const Row& row, const Report& r) {
  const auto t = row.times();
  const auto s = row.t.summary();
  return fmt::format(
      " {:>11} {:>11} {:>9} {:>6} {:>15} {:>4} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6} "
      "{:>7} {:>7} {:>6} {:>6} {:>8} {:>7} {:>7} {:>7}\n",
      row.bytes, row.count, row_dtype(row, r), r.redop, mode_label(row), bps_label(row),
      row.pad > 0 ? model::format_bytes(row.pad) : "0", num(t.t_comp, 1), num(t.t_comm, 1),
      num(t.t_seq, 1), num(model::ideal(t), 1), num(row.t_comp_alone.median(), 1), num(t.t, 1),
      num(100 * s.rel_iqr(), 1), num(100 * model::reduction(t), 1),
      num(100 * model::ideal_reduction(t), 1), num(model::overlap_efficiency(t), 2),
      num(efficiency_best(row, r), 2), num(tflops(row), 1), num(algbw(row), 1), num(busbw(row), 1),
      row.checked ? std::to_string(row.wrong) : "n/a");
}

Slowdown slowdown(const Row& row) {
  auto ratio = [](const Timing& a, const Timing& b) {
    const double x = a.median(), y = b.median();
    return y > 0 && !std::isnan(x) ? x / y : std::nan("");
  };
  return {ratio(row.t_comp_part, row.t_comp_alone), ratio(row.t_comm_part, row.t_comm_alone)};
}

std::string slowdown_verdict(const Row& row) {
  if (row.spec.mode == Mode::Seq) return {};
  const auto x = slowdown(row);
  if (std::isnan(x.comp) || std::isnan(x.comm)) return {};
  std::string s = "under overlap the compute part took " + num(x.comp, 2) +
                  "x its time alone, the collective " + num(x.comm, 2) + "x: ";
  const bool copy_engines =
      row.comm_path.is_object() && row.comm_path.value("path", std::string()) == "copy-engine";
  constexpr double kNoise = 1.05;
  if (x.comp <= kNoise && x.comm <= kNoise)
    return s + "neither slowed by more than 5%; what is left is the longer part itself";
  if (x.comm - 1 >= x.comp - 1)
    return s + (copy_engines
                    ? "the collective is slowed most; on the copy engines it shares memory "
                      "bandwidth, not SMs, with the compute part"
                    : "the collective is slowed most: it waits for SMs or memory bandwidth the "
                      "compute part holds (try priority, shaping, fewer GEMM SMs, or the copy "
                      "engines where the collective allows)");
  return s + (copy_engines
                  ? "the compute part is slowed most, by the collective's memory traffic (no "
                    "SMs are taken from it)"
                  : "the compute part is slowed most, by the collective's SMs or memory traffic "
                    "(try fewer NCCL CTAs, the efficiency policy, or the copy engines where the "
                    "collective allows)");
}

std::string format_footer(const Report& r) {
  std::ostringstream o;
  unsigned long long wrong = 0;
  bool checked = false;
  // Per size, and per type when several ran (in the order they ran).
  std::vector<std::pair<std::pair<std::string, int64_t>, const Row*>> best;
  const bool typed = several_dtypes(r);
  for (const auto& row : r.rows) {
    wrong += row.wrong;
    checked = checked || row.checked;
    if (row.spec.mode == Mode::Seq) continue;
    const std::pair<std::string, int64_t> key{typed ? row_dtype(row, r) : std::string(), row.bytes};
    auto it = std::find_if(best.begin(), best.end(), [&](const auto& b) { return b.first == key; });
    if (it == best.end()) {
      best.push_back({key, &row});
    } else if (row.t.median() < it->second->t.median()) {
      it->second = &row;
    }
  }
  if (!typed)  // one type: by size, as always
    std::sort(best.begin(), best.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
  o << "# Out of bounds values : " << (checked ? std::to_string(wrong) : "not checked")
    << (checked ? (wrong == 0 ? " OK" : " FAILED") : "") << "\n";
  // nccl-tests' summary line: the mean busbw over the sizes (and types), here of the collective
  // alone, out of place (what nccl-tests measures).
  double sum = 0;
  int n = 0;
  for (const auto& [key, row] : best)
    if (const double b = alone_algbw(*row, false) * row->comm_busbw_factor; std::isfinite(b)) {
      sum += b;
      ++n;
    }
  if (n > 0) o << "# Avg bus bandwidth    : " << num(sum / n, 2) << " (the collective alone, GB/s)\n";
  for (const auto& [key, row] : best) {
    const auto t = row->times();
    o << "# best at " << model::format_bytes(key.second) << (typed ? " " + key.first : "") << ": "
      << to_string(row->spec.mode);
    if (row->blocks_per_sm > 0 && is_shape(row->spec.mode)) o << " bps=" << row->blocks_per_sm;
    if (row->pad > 0) o << " pad=" << row->pad;
    o << row->spec.budgets();  // the row's SM, CTA, registration and policy settings, as labelled
    o << "  reduction " << num(100 * model::reduction(t), 1) << "% of an ideal "
      << num(100 * model::ideal_reduction(t), 1) << "%, efficiency "
      << num(model::overlap_efficiency(t), 2) << ", E_best " << num(efficiency_best(*row, r), 2)
      << "\n";
    if (const auto v = slowdown_verdict(*row); !v.empty()) o << "#   " << v << "\n";
    if (row->t_mem_us > 0)
      o << "#   memory-traffic floor " << num(row->t_mem_us, 1) << " us (the least bytes both parts "
        << "move, at the device's peak bandwidth)"
        << (row->t_mem_us > std::max(t.t_comp, t.t_comm) ? ": it, not max(C, M), is T_ideal here"
                                                          : ": below max(C, M), not binding")
        << "\n";
  }
  return o.str() + format_in_place(r);
}

std::string format_in_place(const Report& r) {
  std::string o;
  const bool typed = several_dtypes(r);
  const Row* last = nullptr;
  for (const auto& row : r.rows) {
    if (!row.in_place) continue;
    // The size's figures are in each of its rows: one line per size (and type).
    if (last && last->bytes == row.bytes && row_dtype(*last, r) == row_dtype(row, r)) continue;
    last = &row;
    const double f = row.comm_busbw_factor;
    o += fmt::format(
        "# collective alone at {}{}: out of place {} us (algbw {}, busbw {} GB/s), in place {} us "
        "(algbw {}, busbw {} GB/s), in-place #wrong {}\n",
        model::format_bytes(row.bytes), typed ? " " + row_dtype(row, r) : std::string(),
        num(row.t_comm.median(), 1), num(alone_algbw(row, false), 1),
        num(alone_algbw(row, false) * f, 1), num(row.t_comm_in_place.median(), 1),
        num(alone_algbw(row, true), 1), num(alone_algbw(row, true) * f, 1),
        row.checked ? std::to_string(row.in_place_wrong) : "n/a");
  }
  return o;
}

nlohmann::json rows_to_json(const std::vector<RowSpec>& rows) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& r : rows)
    j.push_back({static_cast<int>(r.mode), r.k(), r.controls.pad.value_or(-1), budget_number(r.controls.gemm_sms),
                 budget_number(r.controls.nccl_ctas), budget_number(r.controls.green_sms),
                 model::comm_register_number(r.controls.nccl_reg), model::cta_policy_number(r.controls.cta_policy)});
  return j;
}

std::vector<RowSpec> rows_from_json(const nlohmann::json& j) {
  std::vector<RowSpec> out;
  for (const auto& x : j) {
    RowSpec r;
    r.mode = static_cast<Mode>(x[0].get<int>());
    r.set_k(x[1].get<int>());
    if (const int64_t pad = x[2]; pad >= 0) r.controls.pad = pad;
    r.controls.gemm_sms = budget_from_number(x[3].get<int>());
    r.controls.nccl_ctas = budget_from_number(x[4].get<int>());
    r.controls.green_sms = budget_from_number(x[5].get<int>());
    if (x.size() > 6) r.controls.nccl_reg = model::comm_register_from_number(x[6].get<int>());
    if (x.size() > 7) r.controls.cta_policy = model::cta_policy_from_number(x[7].get<int>());
    out.push_back(r);
  }
  return out;
}

nlohmann::json policy_numbers(const std::vector<model::CtaPolicy>& policies) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto p : policies) j.push_back(model::cta_policy_number(p));
  return j;
}

std::string json_text(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string iso_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string host_name() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

nlohmann::json options_json(const Options& o) {
  nlohmann::json j;
  j["minbytes"] = o.min_bytes;
  j["maxbytes"] = o.max_bytes;
  j["stepfactor"] = o.step_factor;
  j["ngpus"] = o.ngpus;
  j["iters"] = o.iters;
  j["warmup_iters"] = o.warmup;
  j["check"] = o.check;
  j["average"] = o.average;
  j["bootstrap"] = o.bootstrap;
  j["datatype"] = o.dtypes.empty() ? std::string(model::to_string(o.dtype)) : dtypes_label(o);
  // Only when asked: the key of every other run is as it was.
  if (o.in_place) j["in_place"] = true;
  if (o.cudagraph > 0) j["cudagraph"] = o.cudagraph;
  j["op"] = model::to_string(o.op);
  j["collective"] = model::to_string(o.coll);
  j["compute"] = model::to_string(o.compute);
  j["gemm"] = {o.m, o.n, o.k};
  j["gemm_dtype"] = model::to_string(o.gemm_dtype);
  j["count"] = o.count;
  j["mem_bytes"] = o.mem_bytes;
  nlohmann::json modes = nlohmann::json::array();
  for (Mode m : o.modes) modes.push_back(to_string(m));
  j["modes"] = modes;
  j["blocks_per_sm"] = o.blocks_per_sm;
  j["pad"] = o.pads;
  j[model::json_field(model::Control::GemmSms)] = o.gemm_sms;
  j[model::json_field(model::Control::Green)] = o.green_sms;
  j["nccl"] = {{"min_ctas", budget_number(o.nccl_min_ctas)},
               {"max_ctas", budget_number(o.nccl_max_ctas)},
               {"cta_policy", model::cta_policy_number(o.nccl_cta_policy)},
               {"row_cta_policies", policy_numbers(o.row_cta_policies)},
               {"cga_cluster_size", budget_number(o.nccl_cga_cluster)},
               {"register", model::to_string(o.nccl_register)}};
  return j;
}

nlohmann::json to_json(const Report& r) {
  // The format's own writer (results/bench.hpp) writes what is filled here.
  results::BenchResult out;
  out.argv = r.argv;
  out.date = r.date;
  out.host = r.host;
  out.bootstrap = r.bootstrap;
  out.nranks = r.nranks;
  out.versions = r.versions;
  out.devices = r.devices;
  out.config = r.config;
  out.compute = r.compute;
  out.collective = r.collective;
  out.datatype = r.dtype;
  out.op = r.redop;
  out.notes = r.notes;
  out.in_place = r.in_place;
  for (const auto& row : r.rows) {
    const auto t = row.times();
    results::BenchRow rec;
    rec.size_bytes = row.bytes;
    rec.count = row.count;
    rec.dtype = row_dtype(row, r);
    rec.mode = to_string(row.spec.mode);
    rec.target_blocks_per_sm = row.spec.k();
    rec.pad_bytes = row.pad;
    rec.blocks_per_sm = row.blocks_per_sm;
    rec.t_comp = timing_record(row.t_comp);
    rec.t_comm = timing_record(row.t_comm);
    rec.t_seq = timing_record(row.t_seq);
    rec.t = timing_record(row.t);
    rec.t_comp_part = timing_record(row.t_comp_part);
    rec.t_comm_part = timing_record(row.t_comm_part);
    rec.t_comp_alone = timing_record(row.t_comp_alone);
    rec.t_comm_alone = timing_record(row.t_comm_alone);
    nlohmann::json& x = rec.controls;  // the row's controls, spelled by the control table
    x[model::json_field(model::Control::GemmSms)] = budget_number(row.spec.controls.gemm_sms);
    x[model::json_field(model::Control::NcclCtas)] = budget_number(row.spec.controls.nccl_ctas);
    x[model::json_field(model::Control::Green)] = budget_number(row.spec.controls.green_sms);
    x[model::json_field(model::Control::Register)] = model::comm_register_number(row.spec.controls.nccl_reg);
    model::Controls ran;  // the policy the row's communicator had, as the control table spells it
    ran.cta_policy = row.cta_policy;
    const auto cta = model::Control::CtaPolicy;
    const std::string policy = model::control_text(ran, cta, model::Spelling::Json);
    x[model::spelled(cta, model::Spelling::Json)] = policy.empty() ? nlohmann::json() : nlohmann::json(policy);
    rec.comm_path = row.comm_path;
    rec.label = row.spec.label();
    rec.t_ideal_us = model::ideal(t);
    rec.t_mem_us = row.t_mem_us;
    rec.reduction = model::reduction(t);
    rec.ideal_reduction = model::ideal_reduction(t);
    rec.efficiency = model::overlap_efficiency(t);
    const auto best = best_parts(r, row.bytes, row.dtype);
    rec.efficiency_best = model::efficiency_best(best.comp, best.comm, t.t);
    const auto slow = slowdown(row);
    rec.comp_slowdown = slow.comp;
    rec.comm_slowdown = slow.comm;
    rec.best_compute_us = best.comp;
    rec.best_collective_us = best.comm;
    rec.tflops = tflops(row);
    rec.algbw_gbps = algbw(row);
    rec.busbw_gbps = busbw(row);
    rec.checked = row.checked;
    rec.wrong = row.wrong;
    if (row.in_place) {  // the collective alone, out of place (T_comm) and in place
      const double f = row.comm_busbw_factor;
      rec.in_place = true;
      rec.comm_algbw_gbps = alone_algbw(row, false);
      rec.comm_busbw_gbps = alone_algbw(row, false) * f;
      rec.t_comm_in_place = timing_record(row.t_comm_in_place);
      rec.in_place_algbw_gbps = alone_algbw(row, true);
      rec.in_place_busbw_gbps = alone_algbw(row, true) * f;
      rec.in_place_wrong = row.in_place_wrong;
    }
    out.rows.push_back(std::move(rec));
  }
  return results::write_bench(out);
}

std::vector<std::string> csv_columns() {
  return {"size_bytes", "count", "type", "redop", "mode", "target_blocks_per_sm", "pad_bytes",
          "blocks_per_sm", "t_comp_us", "t_comm_us", "t_seq_us", "t_ideal_us", "t_comp_alone_us",
          "t_us", "t_p25_us", "t_p75_us", "reduction", "ideal_reduction", "efficiency", "tflops",
          "busbw_gbps", "checked", "wrong", "samples", "efficiency_best", "algbw_gbps", "variant",
          "comm_path", "comp_slowdown", "comm_slowdown"};
}

std::vector<std::string> csv_columns(const Report& r) {
  auto cols = csv_columns();
  if (any_in_place(r))
    cols.insert(cols.end(), {"comm_algbw_gbps", "comm_busbw_gbps", "t_comm_in_place_us",
                             "in_place_algbw_gbps", "in_place_busbw_gbps", "in_place_wrong"});
  return cols;
}

std::string to_csv(const Report& r) {
  std::ostringstream o;
  const auto cols = csv_columns(r);
  const bool in_place = any_in_place(r);
  for (std::size_t i = 0; i < cols.size(); ++i) o << (i ? "," : "") << cols[i];
  o << "\n";
  auto v = [](double x) { return std::isnan(x) ? std::string() : fmt::format("{:.6g}", x); };
  for (const auto& row : r.rows) {
    const auto t = row.times();
    const auto s = row.t.summary();
    const auto slow = slowdown(row);
    o << row.bytes << "," << row.count << "," << row_dtype(row, r) << "," << r.redop << ","
      << to_string(row.spec.mode) << "," << row.spec.k() << "," << row.pad << ","
      << row.blocks_per_sm << "," << v(t.t_comp) << "," << v(t.t_comm) << "," << v(t.t_seq) << ","
      << v(model::ideal(t)) << "," << v(row.t_comp_alone.median()) << "," << v(t.t) << ","
      << v(s.p25) << "," << v(s.p75) << "," << v(model::reduction(t)) << ","
      << v(model::ideal_reduction(t)) << "," << v(model::overlap_efficiency(t)) << ","
      << v(tflops(row)) << "," << v(busbw(row)) << "," << (row.checked ? 1 : 0) << "," << row.wrong
      << "," << row.t.samples.size() << "," << v(efficiency_best(row, r)) << "," << v(algbw(row))
      << "," << mode_label(row) << ","
      << (row.comm_path.is_object() ? row.comm_path.value("path", std::string()) : std::string())
      << "," << v(slow.comp) << "," << v(slow.comm);
    if (in_place) {
      const double f = row.comm_busbw_factor;
      o << ",";
      if (row.in_place)
        o << v(alone_algbw(row, false)) << "," << v(alone_algbw(row, false) * f) << ","
          << v(row.t_comm_in_place.median()) << "," << v(alone_algbw(row, true)) << ","
          << v(alone_algbw(row, true) * f) << "," << row.in_place_wrong;
      else
        o << ",,,,,";
    }
    o << "\n";
  }
  return o.str();
}

}  // namespace cco::bench
