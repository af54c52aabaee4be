#include "tune/workload_space.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "model/cta_policy.hpp"
#include "model/metrics.hpp"
#include "model/occupancy.hpp"

namespace cco::tune {

using bench::Mode;
using bench::RowSpec;
using bench::UsageError;

namespace {

std::string occupancy_text(const WorkloadSpaceInput& in, const std::vector<int>& bps) {
  std::string s;
  for (std::size_t i = 0; i < bps.size(); ++i)
    s += (i ? ", " : "") + in.kernels[i].name + " " + std::to_string(bps[i]) + "/SM";
  return s;
}

double safe_ratio(double num, double den) {
  return den > 0 ? num / den : 0.0;
}

}  // namespace

void validate(const WorkloadSpaceInput& in, const WorkloadSpaceOptions& opt) {
  validate_common(in.limits, opt.ctas, opt.blocks_per_sm, opt.green_sms);
}

std::vector<int> shaped_occupancy(const WorkloadSpaceInput& in, int k, std::string* why) {
  std::vector<int> out;
  for (const auto& kern : in.kernels) {
    if (kern.natural_bps <= k) {
      out.push_back(kern.natural_bps);
      continue;
    }
    const auto p = model::plan_padding(in.limits, kern.footprint, k);
    if (!p.reachable) {
      if (why) *why = kern.name + ": " + p.note;
      return {};
    }
    out.push_back(p.blocks_per_sm);
  }
  return out;
}

std::vector<RowSpec> build_workload_space(const WorkloadSpaceInput& in,
                                          const WorkloadSpaceOptions& opt,
                                          std::vector<std::string>* notes) {
  validate(in, opt);
  auto note = [&](const std::string& s) {
    if (notes) notes->push_back(s);
  };

  // Compute-side choices: plain, or each shape target that changes some kernel's residency
  // differently from every earlier target.
  std::vector<RowSpec> compute_side = {{Mode::Concurrent}};
  int natural = 0;
  for (const auto& k : in.kernels) natural = std::max(natural, k.natural_bps);
  if (in.kernels.empty()) {
    if (!opt.blocks_per_sm.empty())
      note(
          "shape targets pruned: no op of the step launches a kernel of ours (cuBLASLt GEMMs "
          "only; --param gemm=builtin where the workload has it)");
  } else if (natural <= 1) {
    note("shaping pruned: every kernel of ours already runs at 1 block per SM");
  } else {
    std::vector<int> ks = opt.blocks_per_sm;
    if (ks.empty())
      for (int k = natural - 1; k >= 1; --k) ks.push_back(k);
    std::map<std::vector<int>, int> seen;  // residencies -> the first target giving them
    for (int k : ks) {
      if (k >= natural) {
        note("k=" + std::to_string(k) + " pruned: every kernel of ours already runs at " +
             std::to_string(k) + " blocks per SM or fewer (largest: " + std::to_string(natural) +
             ")");
        continue;
      }
      std::string why;
      const auto bps = shaped_occupancy(in, k, &why);
      if (bps.empty()) {
        note("k=" + std::to_string(k) + " pruned: " + why);
        continue;
      }
      const auto [it, fresh] = seen.emplace(bps, k);
      if (!fresh) {
        note("k=" + std::to_string(k) + " pruned: the same blocks per SM as k=" +
             std::to_string(it->second) + " (" + occupancy_text(in, bps) + ")");
        continue;
      }
      compute_side.push_back({Mode::Shape, k});
    }
  }

  const std::vector<int> ctas = opt.ctas.empty() ? std::vector<int>{-1, 16, 32} : opt.ctas;
  std::vector<int> greens = {-1};
  greens.insert(greens.end(), opt.green_sms.begin(), opt.green_sms.end());
  std::vector<RowSpec> out;
  for (int gs : greens)
    for (int c : ctas)
      for (const auto& base : compute_side)
        for (bool prio : {false, true}) {
          if (prio && !opt.priority) continue;
          if (gs > 0 && bench::is_shape(base.mode)) continue;  // one compute budget at a time
          RowSpec r = base;
          r.mode = bench::with_priority(base.mode, prio);
          r.controls.nccl_ctas = bench::budget_from_number(c);
          r.controls.green_sms = bench::budget_from_number(gs);
          out.push_back(r);
        }
  // CTA policies beyond the run's own (space.hpp: policy_rows), after the rest: zero as one row,
  // the step's arena a window; efficiency crossed with shaping and priority (its own CTAs).
  const auto more = policy_rows(
      cta_policies_to_try(in.cta_policies, in.copy_engine, in.run_policy), in.run_policy,
      in.copy_engine, model::CommRegister::Window, compute_side, {-1},
      opt.priority,
      {"cta=zero pruned: the step has no all-gather or all-to-all",
       "cta=zero: one row (concurrent; the step's all-gathers and all-to-alls on the copy "
       "engines, its arena a symmetric window)"},
      notes);
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

std::vector<RowSpec> workload_neighbours(const WorkloadSpaceInput& in, const RowSpec& r) {
  std::vector<RowSpec> out;
  if (r.controls.cta_policy == model::CtaPolicy::Zero) return out;
  common_neighbours(r, in.limits.sm_count, in.nccl_ctas, out);
  int natural = 0;
  for (const auto& k : in.kernels) natural = std::max(natural, k.natural_bps);
  if (bench::is_shape(r.mode) && natural > 1) {
    const bool prio = bench::is_priority(r.mode);
    const auto here = shaped_occupancy(in, r.k());
    for (int k : {r.k() - 1, r.k() + 1}) {
      if (k < 1) continue;
      RowSpec n = r;
      if (k >= natural) {  // one step above every kernel's own: no shaping at all
        n.mode = prio ? Mode::Priority : Mode::Concurrent;
        n.set_k(0);
        add_unique(out, n);
        continue;
      }
      const auto bps = shaped_occupancy(in, k);
      if (bps.empty() || bps == here) continue;
      n.set_k(k);
      add_unique(out, n);
    }
  }
  std::erase(out, r);
  return out;
}

RowSpec predict_workload(const WorkloadSpaceInput&) {
  RowSpec r;
  r.mode = Mode::Priority;
  return r;
}

std::string step_hash(const workload::Step& step) {
  auto j = workload::to_json(step);
  j.erase("file");
  return stable_hash(j.dump());
}

nlohmann::json workload_json(const workload::Step& step) {
  nlohmann::json params = nlohmann::json::object(), overrides = nlohmann::json::object();
  for (const auto& p : step.params) {
    const nlohmann::json v = p.is_string ? nlohmann::json(p.text) : nlohmann::json(p.value);
    params[p.name] = v;
    if (p.overridden) overrides[p.name] = v;
  }
  return {{"file", step.file},      {"name", step.name},    {"ranks", step.nranks},
          {"ops", step.ops.size()}, {"parameters", params}, {"overrides", overrides},
          {"hash", step_hash(step)}};
}

std::string workload_cache_key(const nlohmann::json& devices, const nlohmann::json& versions,
                               int nranks, const workload::Step& step, const bench::Options& o,
                               const WorkloadSpaceOptions& space) {
  nlohmann::json k;
  k["kind"] = "workload";
  nlohmann::json devs = nlohmann::json::array();
  for (const auto& d : devices) devs.push_back({d.value("name", ""), d.value("sms", 0)});
  k["devices"] = devs;
  k["versions"] = versions;
  k["nranks"] = nranks;
  k["step"] = step_hash(step);
  k["nccl"] = {bench::budget_number(o.nccl_min_ctas), bench::budget_number(o.nccl_max_ctas),
               model::cta_policy_number(o.nccl_cta_policy), bench::budget_number(o.nccl_cga_cluster)};
  k["cta_policies"] = bench::policy_numbers(o.row_cta_policies);
  k["check"] = o.check;
  k["space"] = {{"ctas", space.ctas},
                {"blocks_per_sm", space.blocks_per_sm},
                {"priority", space.priority},
                {"green_sms", space.green_sms},
                {"refine", space.refine},
                {"rounds", space.rounds}};
  return stable_hash(k.dump());
}

std::vector<StepTried> tried_from_step(const bench::StepReport& rep, const RowSpec& predicted) {
  model::OverlapTimes base;
  base.t_comp = rep.t_comp.median();
  base.t_comm = rep.t_comm.median();
  base.t_seq = rep.t_seq.median();
  const double t_ideal = rep.t_ideal.median();
  std::vector<StepTried> out;
  for (const auto& row : rep.rows) {
    if (row.spec.mode == Mode::Seq) continue;
    StepTried t;
    t.spec = row.spec;
    if (!row.t.samples.empty()) {
      const auto s = row.t.summary();
      t.t_us = s.median;
      t.p25_us = s.p25;
      t.p75_us = s.p75;
    }
    auto times = base;
    times.t = t.t_us;
    t.reduction = model::reduction(times);
    t.efficiency = model::overlap_efficiency(times);
    t.of_ideal = safe_ratio(base.t_seq - t.t_us, base.t_seq - t_ideal);
    t.shaping = row.shaping;
    t.wrong = row.wrong;
    t.predicted =
        row.spec.mode == predicted.mode && row.spec.k() == predicted.k() &&
        row.spec.controls.pad == predicted.controls.pad && row.spec.controls.gemm_sms == predicted.controls.gemm_sms &&
        row.spec.controls.nccl_ctas == predicted.controls.nccl_ctas && row.spec.controls.green_sms == predicted.controls.green_sms;
    out.push_back(t);
  }
  return out;
}

std::string format_step_tried(const std::vector<StepTried>& tried, std::size_t best, double t_seq,
                              double t_ideal) {
  const auto order = fastest_first(tried);
  std::string s = fmt::format("# T_seq {:.1f} us, T_ideal {:.1f} us (ideal reduction {:.1f}%)\n",
                              t_seq, t_ideal, t_seq > 0 ? 100 * (1 - t_ideal / t_seq) : 0.0);
  s += fmt::format("#{:>3} {:<36} {:>10} {:>7} {:>7} {:>6} {:>8}  {}\n", "", "candidate",
                   "time(us)", "spread", "reduct", "eff", "of_ideal", "");
  int rank = 0;
  for (auto i : order) {
    const auto& t = tried[i];
    std::string mark = i == best ? "<- chosen" : "";
    if (t.predicted) mark += mark.empty() ? "(model default)" : " (model default)";
    s +=
        fmt::format(" {:>3} {:<36} {:>10.1f} {:>6.1f}% {:>6.1f}% {:>6.2f} {:>7.1f}%  {}\n", ++rank,
                    t.spec.label(), t.t_us, t.t_us > 0 ? 100 * (t.p75_us - t.p25_us) / t.t_us : 0.0,
                    100 * t.reduction, t.efficiency, 100 * t.of_ideal, mark);
  }
  for (auto i : order)
    if (!tried[i].shaping.empty())
      s += "# " + tried[i].spec.label() + ": " + tried[i].shaping + "\n";
  return s;
}

nlohmann::json workload_plan_json(const bench::StepReport& rep, const std::vector<StepTried>& tried,
                                  std::size_t best, const std::string& key) {
  const auto& b = tried.at(best);
  const auto& a = tried.at(applied_index(tried, best));  // what `cco run` can apply
  const double t_seq = rep.t_seq.median(), t_ideal = rep.t_ideal.median();
  nlohmann::json j = plan_base(a.spec, a.spec.k(), rep.devices, rep.nranks, rep.versions,
                               "cco tune: " + b.spec.label() + " for workload " + rep.step.name +
                                   " (" + rep.step.file + ")");

  const auto shape_k = [](const StepTried& t) { return bench::is_shape(t.spec.mode) ? t.spec.k() : 0; };
  nlohmann::json c = choice_json(b, shape_k(b));
  c["shaping"] = b.shaping;
  c["of_ideal"] = b.of_ideal;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& t : tried) {
    auto row = tried_json(t, shape_k(t));
    row["of_ideal"] = t.of_ideal;
    row["shaping"] = t.shaping;
    row["wrong"] = t.wrong;
    rows.push_back(std::move(row));
  }
  nlohmann::json notes = nlohmann::json::array();
  if (!rep.checked) notes.push_back("results were not verified (-c 0)");
  if (bench::is_shape(a.spec.mode)) {
    bool vendor = false;
    for (const auto& op : rep.step.ops)
      vendor =
          vendor || (op.kind == workload::OpKind::Gemm && op.engine == workload::GemmEngine::CublasLt);
    if (vendor)
      notes.push_back("shape k=" + std::to_string(a.spec.k()) +
                      " was measured with only the step's own kernels padded (" + a.shaping +
                      "); cuBLASLt GEMMs ran unpadded, while `cco run` shapes every non-NCCL "
                      "kernel to k (add plan rules to leave GEMMs alone)");
  }
  if (const auto n = applied_note(b.spec, a.spec, a.t_us); !n.empty()) notes.push_back(n);
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& k : rep.kernels)
    kernels.push_back({{"name", k.name}, {"natural_blocks_per_sm", k.natural_bps}});
  j["tuning"] = {{"date", rep.date},
                 {"cache_key", key},
                 {"workload", workload_json(rep.step)},
                 {"kernels", kernels},
                 {"t_seq_us", t_seq},
                 {"t_ideal_us", t_ideal},
                 {"t_comp_us", rep.t_comp.median()},
                 {"t_comm_us", rep.t_comm.median()},
                 {"verified", rep.checked},
                 {"choice", c},
                 {"tried", rows},
                 {"notes", notes}};
  j["tuning"]["applied"] = {{"label", a.spec.label()}, {"t_us", a.t_us}, {"efficiency", a.efficiency}};
  return j;
}

}  // namespace cco::tune
