#include "tune/space.hpp"

#include <fmt/format.h>

#include "model/cta_policy.hpp"
#include "model/json_number.hpp"
#include "model/metrics.hpp"
#include "plan/plan.hpp"

#include <algorithm>
#include <cmath>
#include <set>

namespace cco::tune {

using bench::Mode;
using bench::RowSpec;
using bench::UsageError;

namespace {

std::vector<int> default_sm_budgets(const SpaceInput& in) {
  const int sms = in.limits.sm_count;
  std::vector<int> out = {-1};  // -1: the run's own setting (all SMs)
  for (int cut : {16, 24, 32, 40, 48, 56, 64})
    if (sms - cut >= sms / 2) out.push_back(sms - cut);
  return out;
}

/// NaN is not JSON: null instead.

}  // namespace

void validate_common(const model::DeviceLimits& limits, const std::vector<int>& ctas,
                     const std::vector<int>& blocks_per_sm, const std::vector<int>& green_sms) {
  for (int c : ctas)
    if (c == 0 || c < -1 || c > 64)
      throw UsageError("--ctas: " + std::to_string(c) + " is not within 1..64 (-1 = NCCL's default)");
  for (int k : blocks_per_sm)
    if (k < 1) throw UsageError("--blocks-per-sm: targets must be at least 1");
  for (int g : green_sms)
    if (g < 1 || g >= limits.sm_count)
      throw UsageError("--green-sms: " + std::to_string(g) + " is not within 1.." +
                       std::to_string(limits.sm_count - 1) + " SMs");
}

std::vector<RowSpec> screening_rows(const std::vector<RowSpec>& space, const RowSpec& predicted) {
  std::vector<RowSpec> rows = {{Mode::Seq}};
  for (const auto& r : space) add_unique(rows, r);
  add_unique(rows, predicted);
  return rows;
}

void validate(const SpaceInput& in, const SpaceOptions& opt) {
  for (int s : opt.sm_budgets)
    if (s < 0 || s > in.limits.sm_count)
      throw UsageError("--sm-budgets: " + std::to_string(s) + " is not within 1.." +
                       std::to_string(in.limits.sm_count) + " SMs (0 = all)");
  validate_common(in.limits, opt.ctas, opt.blocks_per_sm, opt.green_sms);
  if (!opt.sm_budgets.empty() && !in.vendor_gemm)
    throw UsageError("--sm-budgets applies to --compute cublaslt only");
  for (int r : opt.registers) {
    if (r < 0 || r > static_cast<int>(model::CommRegister::Window))
      throw UsageError("--registers: " + std::to_string(r) + " is not a registration (none, buffer, window)");
    if (std::find(in.registrations.begin(), in.registrations.end(), r) == in.registrations.end())
      throw UsageError(std::string("--registers: ") + model::to_string(static_cast<model::CommRegister>(r)) +
                       " is not available here (registration applies to collectives cco allocates: "
                       "pairs, not workloads)");
  }
}

std::vector<RowSpec> build_space(const SpaceInput& in, const SpaceOptions& opt,
                                 std::vector<std::string>* notes) {
  validate(in, opt);
  auto note = [&](const std::string& s) {
    if (notes) notes->push_back(s);
  };

  // Compute-side choices: plain, or each shape target that the model says is distinct.
  std::vector<RowSpec> compute_side;  // mode Concurrent (plain) or Shape with k
  compute_side.push_back({Mode::Concurrent});
  if (in.shapeable) {
    if (in.natural_bps <= 1) {
      note("shaping pruned: the kernel already runs at " + std::to_string(in.natural_bps) +
           " block per SM");
    } else {
      std::vector<int> ks = opt.blocks_per_sm;
      if (ks.empty())
        for (int k = in.natural_bps - 1; k >= 1; --k) ks.push_back(k);
      std::set<int> seen_bps;
      for (int k : ks) {
        if (k >= in.natural_bps) {
          note("k=" + std::to_string(k) + " pruned: the kernel already runs at " +
               std::to_string(in.natural_bps) + " blocks per SM");
          continue;
        }
        const auto p = model::plan_padding(in.limits, in.footprint, k);
        if (!p.reachable) {
          note("k=" + std::to_string(k) + " pruned: " + p.note);
          continue;
        }
        if (!seen_bps.insert(p.blocks_per_sm).second) {
          note("k=" + std::to_string(k) + " pruned: same blocks per SM as another target");
          continue;
        }
        RowSpec r{Mode::Shape, k};
        compute_side.push_back(r);
      }
    }
  } else if (!opt.blocks_per_sm.empty()) {
    note("shape targets pruned: the compute launches are not ours (cuBLASLt)");
  }

  std::vector<int> sms = {-1};
  if (in.vendor_gemm) sms = opt.sm_budgets.empty() ? default_sm_budgets(in) : opt.sm_budgets;
  std::vector<int> ctas = opt.ctas.empty() ? std::vector<int>{-1, 16, 32, 48} : opt.ctas;

  // Registrations: the run's own is the default variant (nullopt). By default the run's own and a
  // symmetric window (where rows may register): a window pays off only with enough CTAs, so it is
  // crossed with the CTA counts here rather than left to the one-step neighbour round.
  std::vector<std::optional<model::CommRegister>> regs;
  std::vector<int> wanted = opt.registers;
  if (wanted.empty()) {
    wanted.push_back(in.run_reg);
    const int window = static_cast<int>(model::CommRegister::Window);
    if (std::find(in.registrations.begin(), in.registrations.end(), window) != in.registrations.end())
      wanted.push_back(window);
  }
  for (int g : wanted) {
    const auto v = g == in.run_reg ? std::nullopt : model::comm_register_from_number(g);
    if (std::find(regs.begin(), regs.end(), v) == regs.end()) regs.push_back(v);
  }

  const int window = static_cast<int>(model::CommRegister::Window);
  std::vector<RowSpec> out = policy_rows(
      cta_policies_to_try(opt.cta_policies, in.copy_engine, in.run_policy), in.run_policy,
      in.copy_engine, in.run_reg == window ? std::nullopt : std::optional(model::CommRegister::Window),
      compute_side, sms, opt.priority,
      {"cta=zero pruned: this collective has no copy-engine path, or no symmetric window here",
       "cta=zero: one row (concurrent, symmetric window); SM budgets, CTA counts, shaping and "
       "priority pruned there: a collective on the copy engines uses no SMs"},
      notes);
  // Green partitions are a compute SM budget of their own: crossed with CTAs and priority only.
  std::vector<int> greens = {-1};
  for (int gs : opt.green_sms) greens.push_back(gs);
  for (const auto& reg : regs)
  for (int gs : greens)
  for (int s : sms)
    for (int c : ctas)
      for (const auto& base : compute_side)
        for (bool prio : {false, true}) {
          if (prio && !opt.priority) continue;
          RowSpec r = base;
          r.mode = bench::with_priority(base.mode, prio);
          // Budgets equal to the run's own setting are the default variant.
          r.controls.gemm_sms = s > 0 ? std::optional(s) : std::nullopt;  // 0 = all SMs = the run's own
          r.controls.nccl_ctas = bench::budget_from_number(c);
          r.controls.nccl_reg = reg;
          if (gs > 0) {
            if (s > 0 || bench::is_shape(r.mode)) continue;  // one compute budget at a time
            r.controls.green_sms = gs;
          }
          add_unique(out, r);
        }
  return out;
}

std::vector<model::CtaPolicy> cta_policies_to_try(const std::vector<model::CtaPolicy>& listed,
                                                  bool copy_engine,
                                                  std::optional<model::CtaPolicy> run_policy) {
  const auto zero = model::CtaPolicy::Zero;
  if (!listed.empty()) return listed;
  if (copy_engine && run_policy != zero) return {zero};
  return {};
}

std::vector<RowSpec> policy_rows(const std::vector<model::CtaPolicy>& policies,
                                 std::optional<model::CtaPolicy> run_policy, bool copy_engine,
                                 std::optional<model::CommRegister> zero_reg,
                                 const std::vector<RowSpec>& compute_side,
                                 const std::vector<int>& sms, bool priority, const ZeroRowText& text,
                                 std::vector<std::string>* notes) {
  auto note = [&](const std::string& s) {
    if (notes) notes->push_back(s);
  };
  std::vector<RowSpec> out;
  for (const model::CtaPolicy p : policies) {
    if (p == run_policy) continue;
    if (p == model::CtaPolicy::Zero) {
      if (!copy_engine) {
        note(text.pruned);
        continue;
      }
      RowSpec r{Mode::Concurrent};
      r.controls.cta_policy = p;
      r.controls.nccl_reg = zero_reg;
      out.push_back(r);
      note(text.kept);
      continue;
    }
    for (int s : sms)
      for (const auto& base : compute_side)
        for (bool prio : {false, true}) {
          if (prio && !priority) continue;
          RowSpec r = base;
          r.mode = bench::with_priority(base.mode, prio);
          r.controls.gemm_sms = s > 0 ? std::optional(s) : std::nullopt;
          r.controls.cta_policy = p;
          out.push_back(r);
        }
  }
  return out;
}

void add_unique(std::vector<RowSpec>& rows, const RowSpec& r) {
  if (std::find(rows.begin(), rows.end(), r) == rows.end()) rows.push_back(r);
}

nlohmann::json plan_base(const RowSpec& choice, int blocks_per_sm, const nlohmann::json& devices,
                         int nranks, const nlohmann::json& versions_in,
                         const std::string& description) {
  // A plan::Plan written by the plan module's own writer (one writer per format, issue 35): the
  // tuners add only what is theirs (generated_by here, tuning in each tuner).
  plan::Plan p;
  p.policy = "tuned";
  p.description = description;
  // Programs get the measured controls inside the communication window: in a pair the compute
  // part runs wholly beside the collective, so "overlap" is what was measured, and outside the
  // window a program's kernels keep every SM (never slower where no collective runs).
  if (bench::is_shape(choice.mode) && blocks_per_sm > 0) {
    p.shaping.target = {plan::TargetKind::Fixed, blocks_per_sm};
    p.shaping.when = plan::When::Overlap;
  }
  p.priority.nccl = bench::is_priority(choice.mode) ? plan::NcclPriority::High : plan::NcclPriority::Default;
  // The cuBLASLt SM target reaches programs' cuBLAS/cuBLASLt GEMMs through the preload library;
  // it follows the launch-order window (reproducible rounding, docs/PRELOAD.md).
  if (choice.controls.gemm_sms && *choice.controls.gemm_sms > 0) p.gemm = {*choice.controls.gemm_sms, plan::When::Overlap};
  if (choice.controls.nccl_ctas && *choice.controls.nccl_ctas > 0) p.nccl.min_ctas = p.nccl.max_ctas = *choice.controls.nccl_ctas;
  p.nccl.cta_policy = choice.controls.cta_policy;
  p.made_for.set = true;
  p.made_for.device = devices.empty() ? "" : devices[0].value("name", "");
  p.made_for.sms = devices.empty() ? 0 : devices[0].value("sms", 0);
  p.made_for.nranks = nranks;
  for (const char* k : {"cuda_driver", "cuda_runtime", "nccl", "cublaslt"})
    if (versions_in.contains(k))
      p.made_for.versions.emplace_back(k, versions_in[k].is_string() ? versions_in[k].get<std::string>()
                                                                     : versions_in[k].dump());
  nlohmann::json j = nlohmann::json::parse(plan::to_json(p));
  j["generated_by"] = "cco tune";
  return j;
}

bool run_applicable(const RowSpec& r) {
  // Zero needs the collective's buffers in a symmetric window, which a program's are not.
  return !r.controls.green_sms && !r.controls.nccl_reg && r.controls.cta_policy != model::CtaPolicy::Zero;
}

std::string applied_note(const RowSpec& choice, const RowSpec& applied, double applied_t_us) {
  if (choice == applied) return {};
  return "`cco run` applies '" + applied.label() + "' (" + fmt::format("{:.1f}", applied_t_us) +
         " us), the fastest candidate whose controls it can apply (priority, residency, the GEMMs' "
         "SM target, NCCL CTAs); the choice '" + choice.label() +
         "' also needs a green partition (a context of the program's own cannot be swapped for "
         "a partitioned one without changing the program) or registered buffers (NCCL registers "
         "buffers the program allocates; the library cannot move them into ncclMemAlloc memory), "
         "which apply only to what cco bench makes";
}

const std::vector<int>& cta_ladder() {
  static const std::vector<int> ladder = {4, 8, 12, 16, 24, 32, 48, 64};
  return ladder;
}

void common_neighbours(const RowSpec& r, int sms, int nccl_ctas, std::vector<RowSpec>& out) {
  auto add = [&](const RowSpec& n) { add_unique(out, n); };
  const bool shape = bench::is_shape(r.mode);
  const bool prio = bench::is_priority(r.mode);
  // Priority flipped.
  {
    RowSpec n = r;
    n.mode = shape ? (prio ? Mode::Shape : Mode::ShapePriority)
                   : (prio ? Mode::Concurrent : Mode::Priority);
    add(n);
  }
  // A green partition, +-8 SMs (the driver's granularity on sm_90).
  if (r.controls.green_sms && *r.controls.green_sms > 0)
    for (int g : {*r.controls.green_sms - 8, *r.controls.green_sms + 8})
      if (g >= 8 && g < sms) {
        RowSpec n = r;
        n.controls.green_sms = g;
        add(n);
      }
  // NCCL CTAs: the adjacent rungs of the ladder (a CTA policy picks its own).
  if (!r.controls.cta_policy) {
    const auto& ladder = cta_ladder();
    const int c = r.controls.nccl_ctas && *r.controls.nccl_ctas > 0 ? *r.controls.nccl_ctas : std::max(1, nccl_ctas);
    int below = -1, above = -1;
    for (int v : ladder) {
      if (v < c) below = v;
      if (v > c && above < 0) above = v;
    }
    for (int v : {below, above})
      if (v > 0) {
        RowSpec n = r;
        n.controls.nccl_ctas = v == nccl_ctas && !r.controls.nccl_ctas ? std::nullopt : std::optional(v);
        add(n);
      }
  }
}

std::vector<RowSpec> neighbours(const SpaceInput& in, const RowSpec& r) {
  const int sms = in.limits.sm_count;
  std::vector<RowSpec> out;
  // A collective on the copy engines: no SM control has a neighbour worth measuring.
  if (r.controls.cta_policy == model::CtaPolicy::Zero) return out;
  auto add = [&](const RowSpec& n) { add_unique(out, n); };
  const bool shape = bench::is_shape(r.mode);
  const bool prio = bench::is_priority(r.mode);
  common_neighbours(r, sms, in.nccl_ctas, out);
  // The cuBLASLt SM target, +-4 SMs (from all SMs: 4 and 8 fewer).
  if (in.vendor_gemm && (!r.controls.green_sms || *r.controls.green_sms <= 0)) {
    const int lo = std::max(1, sms / 4);
    std::vector<int> cand;
    if (!r.controls.gemm_sms || *r.controls.gemm_sms <= 0) cand = {sms - 4, sms - 8};
    else cand = {*r.controls.gemm_sms - 4, *r.controls.gemm_sms + 4};
    for (int s : cand) {
      if (s < lo || s > sms) continue;
      RowSpec n = r;
      n.controls.gemm_sms = s >= sms ? std::nullopt : std::optional(s);
      add(n);
    }
  }
  // The shape target, +-1 where the model reaches a distinct blocks-per-SM.
  if (shape && in.shapeable && in.natural_bps > 1) {
    const auto here = model::plan_padding(in.limits, in.footprint, r.k());
    for (int k : {r.k() - 1, r.k() + 1}) {
      if (k < 1) continue;
      RowSpec n = r;
      if (k >= in.natural_bps) {  // one step up from the top target: no shaping at all
        n.mode = prio ? Mode::Priority : Mode::Concurrent;
        n.set_k(0);
        add(n);
        continue;
      }
      const auto p = model::plan_padding(in.limits, in.footprint, k);
      if (!p.reachable || (here.reachable && p.blocks_per_sm == here.blocks_per_sm)) continue;
      n.set_k(k);
      add(n);
    }
  }
  // The collective's buffer registration: each other one.
  for (int v : in.registrations) {
      RowSpec n = r;
      n.controls.nccl_reg = v == in.run_reg ? std::nullopt : model::comm_register_from_number(v);
      add(n);
    }
  // Never the candidate itself.
  std::erase(out, r);
  return out;
}

RowSpec predict(const SpaceInput& in) {
  const int sms = std::max(1, in.limits.sm_count);
  const int ctas = std::max(1, in.nccl_ctas);
  RowSpec r;
  if (in.shapeable && in.natural_bps > 1) {
    const int cut = std::max(1, static_cast<int>(std::lround(2.0 * in.natural_bps * ctas / sms)));
    r.mode = Mode::ShapePriority;
    r.set_k(std::max(1, in.natural_bps - cut));
  } else if (in.vendor_gemm) {
    r.mode = Mode::Priority;
    r.controls.gemm_sms = std::max(1, sms - ctas);
  } else {
    r.mode = Mode::Priority;
  }
  return r;
}

std::string stable_hash(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64 offset basis
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;  // FNV-1a 64 prime
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string cache_key(const nlohmann::json& devices, const nlohmann::json& versions, int nranks,
                      const bench::Options& o, const SpaceOptions& space) {
  nlohmann::json k;
  nlohmann::json devs = nlohmann::json::array();
  for (const auto& d : devices) devs.push_back({d.value("name", ""), d.value("sms", 0)});
  k["devices"] = devs;
  k["versions"] = versions;
  k["nranks"] = nranks;
  auto cfg = bench::options_json(o);
  for (const char* volatile_key : {"iters", "warmup_iters", "check"}) cfg.erase(volatile_key);
  k["workload"] = cfg;
  k["space"] = {{"sm_budgets", space.sm_budgets},
                {"ctas", space.ctas},
                {"blocks_per_sm", space.blocks_per_sm},
                {"priority", space.priority},
                {"green_sms", space.green_sms},
                {"registers", space.registers},
                {"cta_policies", bench::policy_numbers(space.cta_policies)},
                {"refine", space.refine},
                {"rounds", space.rounds}};
  return stable_hash(k.dump());
}

double Tried::own_efficiency() const {
  if (!(comp_alone_us > 0) || !(comm_alone_us > 0)) return std::nan("");
  model::OverlapTimes t;
  t.t_comp = comp_alone_us;
  t.t_comm = comm_alone_us;
  t.t_seq = comp_alone_us + comm_alone_us;
  t.t = t_us;
  return model::overlap_efficiency(t);
}

std::vector<Tried> tried_from(const bench::Report& rep, const RowSpec& predicted) {
  std::vector<Tried> out;
  for (const auto& row : rep.rows) {
    if (row.spec.mode == Mode::Seq) continue;
    Tried t;
    t.spec = row.spec;
    const auto s = row.t.summary();
    t.t_us = s.median;
    t.p25_us = s.p25;
    t.p75_us = s.p75;
    t.efficiency_best = bench::efficiency_best(row, rep);
    const auto times = row.times();
    t.reduction = model::reduction(times);
    t.efficiency = model::overlap_efficiency(times);
    t.pad = row.pad;
    t.blocks_per_sm = row.blocks_per_sm;
    t.comp_alone_us = row.t_comp_alone.median();
    t.comm_alone_us = row.t_comm_alone.median();
    t.predicted = row.spec == predicted;
    out.push_back(t);
  }
  return out;
}

nlohmann::json plan_json(const bench::Report& rep, const std::vector<Tried>& tried, std::size_t best,
                         const std::string& key) {
  const auto& b = tried.at(best);
  // What `cco run` and the library can apply: residency, priority, NCCL's CTA budget, taken from
  // the fastest candidate that needs nothing else. The cuBLASLt SM target, green partitions and
  // registration apply to launches and buffers we make (cco bench); the choice records them.
  const auto& a = tried.at(applied_index(tried, best));
  nlohmann::json j = plan_base(a.spec, a.blocks_per_sm, rep.devices, rep.nranks, rep.versions,
                               "cco tune: " + b.spec.label() + " for " + rep.compute + " || " +
                                   rep.collective);
  nlohmann::json c = choice_json(b, bench::is_shape(b.spec.mode) ? b.blocks_per_sm : 0);
  c[model::json_field(model::Control::Pad)] = b.pad;
  c[model::json_field(model::Control::GemmSms)] = bench::budget_number(b.spec.controls.gemm_sms);
  c[model::json_field(model::Control::Register)] = model::comm_register_number(b.spec.controls.nccl_reg);
  c["comp_alone_us"] = b.comp_alone_us;
  c["comm_alone_us"] = b.comm_alone_us;
  c["own_efficiency"] = model::number_or_null(b.own_efficiency());
  c["efficiency_best"] = model::number_or_null(b.efficiency_best);
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& t : tried) {
    auto row = tried_json(t, t.blocks_per_sm);
    row["comp_alone_us"] = t.comp_alone_us;
    row["comm_alone_us"] = t.comm_alone_us;
    row["own_efficiency"] = model::number_or_null(t.own_efficiency());
    row["efficiency_best"] = model::number_or_null(t.efficiency_best);
    row[model::json_field(model::Control::Pad)] = t.pad;
    rows.push_back(std::move(row));
  }
  nlohmann::json notes = nlohmann::json::array();
  if (const auto n = applied_note(b.spec, a.spec, a.t_us); !n.empty()) notes.push_back(n);
  j["tuning"] = {{"date", rep.date}, {"cache_key", key}, {"workload", rep.config},
                 {"choice", c},      {"tried", rows},    {"notes", notes}};
  j["tuning"]["applied"] = {{"label", a.spec.label()},
                            {"t_us", a.t_us},
                            {"efficiency", a.efficiency},
                            {"efficiency_best", model::number_or_null(a.efficiency_best)}};
  if (!rep.rows.empty()) {
    const auto parts = bench::best_parts(rep, rep.rows.front().bytes);
    j["tuning"]["best_parts_us"] = {{"compute", parts.comp}, {"collective", parts.comm}};
  }
  return j;
}

}  // namespace cco::tune
