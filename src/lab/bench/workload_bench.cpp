#include "bench/workload_bench.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>

#include "bench/comm_path.hpp"
#include "bench/engine.hpp"
#include "bench/ranks.hpp"
#include "bench/nvtx.hpp"
#include "bench/runner.hpp"
#include "bench/workload_args.hpp"
#include "bootstrap/bootstrap.hpp"
#include "model/cta_policy.hpp"
#include "model/occupancy.hpp"
#include "runtime/check.hpp"
#include "runtime/comm.hpp"
#include "runtime/device.hpp"
#include "runtime/green.hpp"
#include "kernels/workload_exec.hpp"

namespace cco::bench {
namespace {

/// A shapeable kernel of the step: its footprint as launched and its occupancy.
struct Kernel {
  const void* fn = nullptr;
  std::string name;
  model::Footprint fp;
  int natural_bps = 0;
};

/// A row as planned: the padding of each shapeable kernel and the row's resources.
struct PlannedRow {
  RowSpec spec;
  std::vector<int64_t> pads;  // per Kernel
  std::string shaping;
  std::size_t comm = 0;   // index into the rank's communicators (0: the run's own)
  std::size_t green = 0;  // index into the rank's SM partitions (0: the whole device)
};

/// The step's kernels of ours that shape modes pad: one per distinct __global__ function, with
/// its footprint as launched and its own blocks per SM.
std::vector<Kernel> shapeable_kernels(const wl::StepExec& ex, const workload::Step& step,
                                      const model::DeviceLimits& lim) {
  std::vector<Kernel> kernels;
  for (std::size_t i = 0; i < step.ops.size(); ++i) {
    if (!ex.shapeable(i)) continue;
    const void* fn = ex.kernel(i);
    if (std::any_of(kernels.begin(), kernels.end(), [&](const Kernel& k) { return k.fn == fn; }))
      continue;
    Kernel k;
    k.fn = fn;
    const auto& op = step.ops[i];
    k.name = op.is_membound() ? std::string("membound")
                              : std::string("builtin gemm ") + model::to_string(op.dtype);
    k.fp = rt::footprint_of(fn, ex.threads(i), 0);
    k.natural_bps = model::occupancy(lim, k.fp).blocks_per_sm;
    kernels.push_back(k);
  }
  return kernels;
}

/// Realises each row on this device: refuses budgets a step cannot take, numbers its variants
/// (appending to `comm_keys` and `green_keys`, whose [0] is the run's own) and plans the padding
/// of every shapeable kernel for shape rows. Notes go to `notes` when given (rank 0's).
std::vector<PlannedRow> plan_step_rows(const std::vector<RowSpec>& specs,
                                       const std::vector<Kernel>& kernels,
                                       const model::DeviceLimits& lim,
                                       std::vector<std::string>* notes,
                                       std::vector<CommKey>& comm_keys,
                                       std::vector<std::optional<int>>& green_keys) {
  std::vector<PlannedRow> planned;
  for (const auto& s : specs) {
    if (s.controls.gemm_sms)
      throw UsageError("row '" + s.label() +
                       "': an SM-count target does not apply to a workload (its cuBLASLt GEMMs "
                       "use every SM)");
    if (s.mode == Mode::Seq && !s.default_variant())
      throw UsageError("row '" + s.label() +
                       "': seq is the baseline and runs with the run's own settings");
    if (s.controls.nccl_ctas && *s.controls.nccl_ctas < 1)
      throw UsageError("row '" + s.label() + "': NCCL CTAs must be at least 1");
    // A zero-CTA row's window is the step's whole arena (registered once per communicator).
    const bool zero_window = s.controls.cta_policy == model::CtaPolicy::Zero &&
                             s.controls.nccl_reg == model::CommRegister::Window;
    if (s.controls.nccl_reg && !zero_window)
      throw UsageError("row '" + s.label() +
                       "': buffer registration applies to cco bench pairs, not to workloads");
    if (s.controls.green_sms && (*s.controls.green_sms < 1 || *s.controls.green_sms >= lim.sm_count))
      throw UsageError("row '" + s.label() + "': a green partition holds 1.." +
                       std::to_string(lim.sm_count - 1) + " SMs");
    PlannedRow p{s, std::vector<int64_t>(kernels.size(), 0), {}};
    // The registration is not part of the key: a step registers its arena per communicator.
    p.comm = key_index(comm_keys, CommKey{s.controls.nccl_ctas, std::nullopt, s.controls.cta_policy});
    p.green = key_index(green_keys, s.controls.green_sms);
    if (is_shape(s.mode) && kernels.empty())
      throw UsageError("row '" + s.label() + "': shape rows need an op whose launches are ours");
    if (is_shape(s.mode)) {
      for (std::size_t ki = 0; ki < kernels.size(); ++ki) {
        const auto& k = kernels[ki];
        const PadPlan pp = plan_padding(lim, k.fp, k.fn, s.k(), s.controls.pad,
                                        "--pad " + model::format_bytes(s.controls.pad.value_or(-1)) + " for " + k.name);
        if (!pp.note.empty() && notes) notes->push_back(k.name + ": " + pp.note);
        if (pp.driver_bps != pp.model_bps && notes)
          notes->push_back(k.name + " pad " + std::to_string(pp.pad) + ": model says " +
                           std::to_string(pp.model_bps) + " blocks per SM, the driver " +
                           std::to_string(pp.driver_bps));
        p.pads[ki] = pp.pad;
        p.shaping += (p.shaping.empty() ? "" : ", ") + k.name + " +" + model::format_bytes(pp.pad) +
                     " (" + std::to_string(pp.driver_bps) + "/SM of " +
                     std::to_string(k.natural_bps) + ")";
      }
    }
    planned.push_back(std::move(p));
  }
  return planned;
}

/// Rank 0's report of one run, from the round-robin's samples: each op alone, T_comp, T_comm
/// and T_ideal per iteration (from the ops alone), seq, and each row. `w`: wrong elements summed
/// over ranks by (row, op) -- rows 0..planned.size()-1, then seq's verified run, then the
/// reference checks before the loop. `seq_row` is planned.size() when seq was not asked for.
void fill_step_report(StepReport& rep, const wl::StepExec& ex,
                      const std::vector<PlannedRow>& planned, std::size_t seq_row,
                      const std::vector<std::vector<double>>& alone,
                      const std::vector<std::vector<double>>& row_t,
                      const std::vector<double>& seq_t, const std::vector<double>& w) {
  const workload::Step& step = rep.step;
  const std::size_t nops = step.ops.size();
  auto wrong_at = [&](std::size_t r, std::size_t i) {
    return static_cast<unsigned long long>(w[r * nops + i]);
  };
  const std::size_t alone_base = planned.size() + 1;
  for (std::size_t i = 0; i < nops; ++i) {
    const auto& op = step.ops[i];
    StepOpResult x;
    x.id = op.id;
    x.kind = op.kind == workload::OpKind::Collective ? model::to_string(op.coll)
                                                  : workload::to_string(op.kind);
    x.stream = workload::to_string(op.stream);
    x.alone.samples = alone[i];
    x.flops = op.flops();
    x.traffic = op.traffic();
    x.shapeable = ex.shapeable(i);
    for (std::size_t r = 0; r <= planned.size(); ++r) x.wrong += wrong_at(r, i);
    x.wrong += wrong_at(alone_base, i);
    rep.ops.push_back(std::move(x));
  }
  rep.t_seq.samples = seq_t;
  const std::size_t ns = seq_t.size();
  for (std::size_t j = 0; j < ns; ++j) {
    std::vector<double> tj(nops);
    for (std::size_t i = 0; i < nops; ++i) tj[i] = alone[i][j];
    rep.t_comp.samples.push_back(workload::compute_time(step, tj));
    rep.t_comm.samples.push_back(workload::comm_time(step, tj));
    rep.t_ideal.samples.push_back(std::max(workload::ideal_time(step, tj), rep.t_mem_us));
  }
  for (std::size_t r = 0; r < planned.size(); ++r) {
    StepRow row;
    row.spec = planned[r].spec;
    row.shaping = planned[r].shaping;
    if (r == seq_row) {
      row.t = rep.t_seq;
      for (std::size_t i = 0; i < nops; ++i)
        row.wrong += wrong_at(planned.size(), i) + wrong_at(alone_base, i);
    } else {
      row.t.samples = row_t[r];
      for (std::size_t i = 0; i < nops; ++i) row.wrong += wrong_at(r, i);
    }
    rep.rows.push_back(std::move(row));
  }
  if (seq_row == planned.size()) {
    // seq was not asked for: its verified run and the reference checks still count somewhere.
    unsigned long long extra = 0;
    for (std::size_t i = 0; i < nops; ++i)
      extra += wrong_at(planned.size(), i) + wrong_at(alone_base, i);
    if (extra > 0) {
      if (rep.rows.empty()) rep.rows.push_back({});
      rep.rows.front().wrong += extra;
    }
  }
}

/// The registration every communicator gets for the arena (--nccl-register; None: only the
/// zero-CTA ones get a window).
model::CommRegister arena_registration(const Options& o) {
  return o.nccl_register_given ? o.nccl_register : model::CommRegister::None;
}

/// --gemm-sms on a step: it must have a cuBLASLt GEMM to act on, and fit the device.
void check_step_gemm_sms(const Options& o, const workload::Step& step, const rt::DeviceInfo& info) {
  if (o.gemm_sms <= 0) return;
  const bool any_lt = std::any_of(step.ops.begin(), step.ops.end(), [](const workload::StepOp& op) {
    return op.kind == workload::OpKind::Gemm && op.engine == workload::GemmEngine::CublasLt;
  });
  if (!any_lt)
    throw UsageError("--gemm-sms: workload '" + step.name +
                     "' has no cuBLASLt GEMM for an SM-count target to act on");
  if (o.gemm_sms > info.limits.sm_count)
    throw UsageError("--gemm-sms " + std::to_string(o.gemm_sms) + " exceeds the " +
                     std::to_string(info.limits.sm_count) + " SMs of " + info.name);
}

/// Whether the run or any row may use the zero-CTA policy (decided from the options, before the
/// executor is built, the same on every rank).
bool uses_zero_policy(const Options& o) {
  const auto zero = model::CtaPolicy::Zero;
  return o.nccl_cta_policy == zero ||
         std::find(o.row_cta_policies.begin(), o.row_cta_policies.end(), zero) != o.row_cta_policies.end();
}

/// Why a CTA policy cannot apply to this step, or "": the NCCL version and hosts as for pairs
/// (model::cta_policy_refusal), and zero needs at least one all-gather or all-to-all (the
/// collectives the copy engines carry; the step's others stay on SMs, as NCCL decides).
std::string step_policy_refusal(model::CtaPolicy p, const workload::Step& step, const CommFacts& f) {
  if (p != model::CtaPolicy::Zero)
    return model::cta_policy_refusal(p, model::Collective::AllReduce, f.nccl_version, f.one_host);
  for (auto c : {model::Collective::AllGather, model::Collective::AllToAll})
    if (workload::has_collective(step, c))
      return model::cta_policy_refusal(p, c, f.nccl_version, f.one_host);
  return "CTA policy zero: the step has no all-gather or all-to-all, the collectives NCCL carries "
         "on the copy engines; its collectives would run on SMs";
}

/// The rows whose policy applies to the step, each refused one named in `notes`; the run's own
/// policy must apply (UsageError). A kept zero row gets a note on what it changes.
std::vector<RowSpec> keep_step_policies(std::vector<RowSpec> specs, const Options& o,
                                        const workload::Step& step, const CommFacts& f,
                                        std::vector<std::string>& notes) {
  if (o.nccl_cta_policy)
    if (const auto why = step_policy_refusal(*o.nccl_cta_policy, step, f); !why.empty())
      throw UsageError("--nccl-cta-policy: " + why);
  std::vector<RowSpec> kept;
  bool zero_noted = false;
  for (auto& s : specs) {
    if (s.controls.cta_policy) {
      if (const auto why = step_policy_refusal(*s.controls.cta_policy, step, f); !why.empty()) {
        notes.push_back("row '" + s.label() + "' skipped: " + why);
        continue;
      }
      if (s.controls.cta_policy == model::CtaPolicy::Zero && !zero_noted) {
        notes.push_back("cta=zero rows: the step's all-gathers and all-to-alls may run on the copy "
                        "engines, its all-reduces and reduce-scatters stay on SMs (NCCL decides "
                        "per collective); the arena is one symmetric window");
        zero_noted = true;
      }
    }
    kept.push_back(std::move(s));
  }
  return kept;
}

/// Puts a row's communicator in the slot the executor reads (StepExec keeps a reference to one
/// rt::Comm and reads its handle at every enqueue), and puts the run's own back when it ends.
/// The swap happens between runs, with both streams idle, identically on every rank.
class CommSwap {
 public:
  CommSwap(rt::Comm& slot, rt::Comm* variant) : slot_(slot), variant_(variant) {
    if (variant_) std::swap(slot_, *variant_);
  }
  ~CommSwap() {
    if (variant_) std::swap(slot_, *variant_);
  }
  CommSwap(const CommSwap&) = delete;
  CommSwap& operator=(const CommSwap&) = delete;

 private:
  rt::Comm& slot_;
  rt::Comm* variant_;
};

/// One rank's runs of a step, as the engine's Subject (engine.hpp): slot i < nops is op i alone,
/// slot nops the seq run, slot nops + 1 + j the overlapped row overlap_rows()[j]. Ops alone and
/// seq run on one stream with the run's own communicator and no padding; an overlapped row runs
/// on its mode's streams (priority: low/high; a green row: its partition's), with its
/// communicator swapped in (CommSwap) and its padding set, from before() to after(). Each run
/// is timed with device events from its first enqueue to the join; it is an NVTX range, the
/// slot's last one a trace mark (RunRange).
class StepSubject final : public Subject {
 public:
  StepSubject(wl::StepExec& ex, rt::Comm& comm, std::vector<rt::Comm>& variants,
              const std::vector<PlannedRow>& planned, const std::vector<Kernel>& kernels,
              const std::vector<std::unique_ptr<rt::SmPartition>>& parts, trace::Session* tr,
              bool lead)
      : ex_(ex), comm_(comm), variants_(variants), planned_(planned), kernels_(kernels),
        parts_(parts), tr_(tr), lead_(lead), nops_(ex.step().ops.size()), seq_row_(planned.size()) {
    for (std::size_t r = 0; r < planned.size(); ++r) {
      if (planned[r].spec.mode == Mode::Seq) seq_row_ = r;
      else overlap_rows_.push_back(r);
    }
    for (const auto& op : ex.step().ops) names_.push_back(op.id + " alone");
    names_.push_back("seq");
    for (std::size_t r : overlap_rows_) names_.push_back(planned[r].spec.label());
  }

  std::size_t slots() const override { return nops_ + 1 + overlap_rows_.size(); }
  bool verified(std::size_t k) const override { return k >= nops_; }

  void before(std::size_t k, bool verify) override {
    if (k < nops_) return;
    cudaStream_t ps = plain_.get();
    if (k > nops_) {
      const auto& p = row(k);
      const bool prio = is_priority(p.spec.mode);
      // In a partition the compute stream is the partition's (least priority), as in cco bench.
      sc_ = p.green ? parts_[p.green]->stream() : prio ? low_.get() : plain_.get();
      sm_ = prio ? high_.get() : side_.get();
      row_comm_.emplace(comm_, p.comm ? &variants_[p.comm] : nullptr);
      if (is_shape(p.spec.mode)) set_pads(&p);
      ps = p.green ? plain_.get() : sc_;  // poisoned outside the partition, as cco bench
    }
    if (verify) {
      ex_.poison(ps);
      CCO_CUDA_CHECK(cudaStreamSynchronize(ps));
    }
  }

  RunTimes run(std::size_t k, int it, bool last) override {
    const RunRange range(tr_, lead_, names_[k], "", it, last);
    cudaStream_t s = k > nops_ ? sc_ : plain_.get();
    e0_.record(s);
    if (k < nops_) ex_.enqueue_op(k, s);
    else if (k == nops_) ex_.enqueue_seq(s);
    else ex_.enqueue_streams(sc_, sm_);
    e1_.record(s);
    e1_.synchronize();
    return {1e3 * static_cast<double>(e1_.elapsed_ms_since(e0_)), 0, 0};
  }

  std::vector<unsigned long long> after(std::size_t k, bool verify) override {
    if (k > nops_ && is_shape(row(k).spec.mode)) set_pads(nullptr);
    std::vector<unsigned long long> w;
    if (verify) w = ex_.verify(false, plain_.get());
    if (k > nops_) row_comm_.reset();
    return w;
  }

  /// The step computed once on one stream after a poison (every rank together), kept as the
  /// snapshot every verified run must reproduce; the wrong elements of its reference checks.
  std::vector<unsigned long long> reference(boot::Group& g) {
    ex_.poison(plain_.get());
    CCO_CUDA_CHECK(cudaStreamSynchronize(plain_.get()));
    g.barrier();
    ex_.enqueue_seq(plain_.get());
    CCO_CUDA_CHECK(cudaStreamSynchronize(plain_.get()));
    ex_.snapshot(plain_.get());
    return ex_.verify(true, plain_.get());
  }

  /// The stream ops alone and seq run on (also the path probe's).
  cudaStream_t stream() const { return plain_.get(); }
  void name_streams(trace::Session& tr) {
    bench::name_streams(tr, plain_.get(), side_.get(), low_.get(), high_.get());
  }
  /// The planned rows measured overlapped, in slot order.
  const std::vector<std::size_t>& overlap_rows() const { return overlap_rows_; }
  /// The seq row's index in the planned rows (planned.size() when seq was not asked for).
  std::size_t seq_row() const { return seq_row_; }

 private:
  const PlannedRow& row(std::size_t k) const { return planned_[overlap_rows_[k - nops_ - 1]]; }
  void set_pads(const PlannedRow* p) {
    for (std::size_t ki = 0; ki < kernels_.size(); ++ki)
      ex_.set_extra_smem_for_kernel(kernels_[ki].fn, p ? p->pads[ki] : 0);
  }

  wl::StepExec& ex_;
  rt::Comm& comm_;
  std::vector<rt::Comm>& variants_;
  const std::vector<PlannedRow>& planned_;
  const std::vector<Kernel>& kernels_;
  const std::vector<std::unique_ptr<rt::SmPartition>>& parts_;
  trace::Session* tr_;
  bool lead_;
  std::size_t nops_, seq_row_;
  std::vector<std::size_t> overlap_rows_;
  std::vector<std::string> names_;
  rt::Stream plain_{rt::Priority::Default}, side_{rt::Priority::Default}, low_{rt::Priority::Low},
      high_{rt::Priority::High};
  rt::Event e0_, e1_;
  cudaStream_t sc_ = nullptr, sm_ = nullptr;  // the overlapped row's streams, set in before()
  std::optional<CommSwap> row_comm_;         // its communicator, from before() to after()
};

/// Where NCCL ran the step's collectives on each communicator whose CTA policy was set
/// (`policies[i]` for communicator i: 0 the run's own, then the variants), per kind of
/// collective (a step's all-gathers may leave the SMs while its reduce-scatters stay): every op
/// of that kind once more, in issue order, under a kernel trace (PathProbe), with that
/// communicator swapped in. One {"communicator", "cta_policy", "collective", "path", ...} each
/// (empty when no policy was set), and one note each in `notes` (rank 0's; null elsewhere). A
/// collective of the group.
nlohmann::json probe_step_paths(PathProbe& probe, boot::Group& g, cudaStream_t st, wl::StepExec& ex,
                                rt::Comm& comm, std::vector<rt::Comm>& variants,
                                const std::vector<std::optional<model::CtaPolicy>>& policies,
                                std::vector<std::string>* notes) {
  std::vector<model::Collective> kinds;  // the step's kinds of collective, in first-issue order
  for (const auto& op : ex.step().ops)
    if (op.kind == workload::OpKind::Collective &&
        std::find(kinds.begin(), kinds.end(), op.coll) == kinds.end())
      kinds.push_back(op.coll);
  std::vector<PathProbe::Item> items;
  std::vector<std::pair<std::size_t, model::Collective>> probed;
  for (std::size_t i = 0; i < policies.size(); ++i) {
    if (!policies[i]) continue;
    for (const auto kind : kinds) {
      const std::string label =
          std::string("cta=") + model::to_string(*policies[i]) +
          (i == 0 ? " (the run's own)" : "") + ", the step's " + model::to_string(kind) + "s";
      items.push_back({label, [&ex, &comm, &variants, i, kind](cudaStream_t s) {
                         const CommSwap swap(comm, i ? &variants[i] : nullptr);
                         for (std::size_t k = 0; k < ex.step().ops.size(); ++k) {
                           const auto& op = ex.step().ops[k];
                           if (op.kind == workload::OpKind::Collective && op.coll == kind)
                             ex.enqueue_op(k, s);
                         }
                       }, false});
      probed.push_back({i, kind});
    }
  }
  nlohmann::json out = nlohmann::json::array();
  if (items.empty()) return out;
  const auto found = probe.probe(g, st, items);
  for (std::size_t j = 0; j < probed.size(); ++j) {
    const auto [i, kind] = probed[j];
    nlohmann::json p = found[j];
    p["communicator"] = i;
    p["cta_policy"] = model::to_string(*policies[i]);
    p["collective"] = model::to_string(kind);
    out.push_back(p);
    if (notes)
      notes->push_back(path_note(items[j].label, *policies[i], found[j], g.size(),
                                 model::copy_engine_collective(kind)));
  }
  return out;
}

/// The report of a step run before anything runs: the step loaded for the ranks, refused when
/// it does not fit the smallest GPU this process drives (every GPU it sees in process modes) or
/// has reductions -c cannot check; the run's description (argv, config, versions, ...).
StepReport prepare_step_report(const StepOptions& so, const Ranks& ranks) {
  const Options& o = so.common;
  const int ngpus = ranks.size();
  workload::StepLoadOptions lo;
  lo.nranks = ngpus;
  lo.overrides = so.params;
  lo.check = o.check;
  StepReport rep;
  rep.step = workload::load_step(so.workload, lo);
  const workload::Step& step = rep.step;

  // Refused before anything runs: memory on the smallest GPU this process drives (every GPU it
  // sees in process modes), reductions -c cannot check.
  int64_t mem = INT64_MAX;
  std::string mem_name;
  for (int d = 0; d < (ranks.threads ? ngpus : ranks.ndev); ++d) {
    const auto info = rt::device_info(d);
    if (info.total_mem < mem) {
      mem = info.total_mem;
      mem_name = info.name;
    }
  }
  check_step_runnable(step, mem, o.check);

  rep.argv = o.argv;
  rep.date = iso_now();
  rep.host = host_name();
  rep.nranks = ngpus;
  rep.checked = o.check;
  rep.memory_bytes = workload::layout_step(step, o.check).total;
  rep.config = {{"workload", so.workload},
                {"ngpus", ngpus},
                {"iters", o.iters},
                {"warmup", o.warmup},
                {"check", o.check},
                {"modes_given", o.modes_given},
                {"blocks_per_sm", o.blocks_per_sm},
                {"pads", o.pads},
                {"nccl_min_ctas", budget_number(o.nccl_min_ctas)},
                {"nccl_max_ctas", budget_number(o.nccl_max_ctas)},
                {"nccl_cta_policy", model::cta_policy_number(o.nccl_cta_policy)},
                {"nccl_cga_cluster_size", budget_number(o.nccl_cga_cluster)},
                {model::json_field(model::Control::GemmSms), o.gemm_sms},
                {model::json_field(model::Control::Register), model::to_string(arena_registration(o))}};
  {
    nlohmann::json modes = nlohmann::json::array();
    for (Mode m : o.modes) modes.push_back(to_string(m));
    rep.config["modes"] = modes;
    nlohmann::json params = nlohmann::json::object();
    for (const auto& [k, v] : so.params) params[k] = v;
    rep.config["params"] = params;
  }
  rep.versions = versions_json();
  rep.bootstrap = ranks.launcher->mode();
  rep.writer = ranks.launcher->first_rank() == 0;
  return rep;

}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------------------------

void check_step_runnable(const workload::Step& step, int64_t memory_bytes, bool check) {
  workload::check_memory(step, memory_bytes, check);
  if (!check) return;
  for (const auto& op : step.ops)
    if (op.kind == workload::OpKind::Collective &&
        (op.coll == model::Collective::AllReduce || op.coll == model::Collective::ReduceScatter) &&
        (op.redop == model::RedOp::Prod || op.redop == model::RedOp::Avg))
      throw workload::StepError(step.file, op.pos,
                             "-c 1 cannot verify reduction '" +
                                 std::string(model::to_string(op.redop)) + "' of collective '" +
                                 op.id + "' (checked: sum, min, max); use -c 0");
}

StepReport run_step(const StepOptions& so, std::ostream& progress) {
  const Options& o = so.common;
  return run_step(
      so,
      [&o](const StepDeviceContext& d, std::vector<std::string>& notes) {
        int natural = 0;
        for (const auto& k : d.kernels) natural = std::max(natural, k.natural_bps);
        if (d.kernels.empty())
          notes.push_back(
              "no op launches a kernel of ours (GEMMs on cuBLASLt, no memory-bound ops): "
              "shape modes left out; --param gemm=builtin where the workload has it");
        return expand_rows(o, !d.kernels.empty(), natural, &notes);
      },
      progress);
}

// The per-rank body is one closure because a rank's communicators, executor and subject live
// exactly as long as the rank's thread or process. It holds only what is the step's own: what
// both runners do on a rank is in ranks.hpp (enter_rank, rows_from_lead, open_variants,
// rounds_options, sum_over_ranks), the runs are a StepSubject driven by the engine (engine.hpp),
// and the report is prepared (prepare_step_report) and filled (fill_step_report) outside.
StepReport run_step(const StepOptions& so, const StepRowProvider& provide_rows,
                    std::ostream& progress) {
  const Options& o = so.common;
  // Tracing starts before the first CUDA call (--trace; ranks.hpp).
  const auto tr = start_trace(o.trace_path);
  // Ranks: threads in this process, or one process per GPU from torchrun, Slurm or MPI
  // (ranks.hpp). The ranks compare the options, the workload and its parameters when they meet.
  nlohmann::json job = options_json(o);
  job["workload"] = so.workload;
  for (const auto& [k, v] : so.params) job["params"][k] = v;
  Ranks ranks = launch_ranks(o, job.dump());
  StepReport rep = prepare_step_report(so, ranks);
  const workload::Step& step = rep.step;
  const rt::CommConfig cc = comm_config(o);

  const std::size_t nops = step.ops.size();
  PathProbe path_probe(tr.get());  // where NCCL ran the collectives of each policy's communicator

  ranks.launcher->run([&](boot::Group& g) {
    const RankSetup rs = enter_rank(g, ranks, tr.get(), rep.host);
    const bool lead = rs.lead;
    const auto& lim = rs.info.limits;
    if (lead) rep.devices = rs.devices;
    check_step_gemm_sms(o, step, rs.info);
    // The executor reads its communicator through this slot; rows with their own CTA count
    // swap theirs in for their run (CommSwap).
    rt::Comm comm = open_comm(g, cc);
    wl::StepExecOptions eo;
    eo.check = o.check;
    // Zero-CTA communicators need the collectives' buffers in a window: the whole arena, from
    // ncclMemAlloc, and all-to-alls as ncclAlltoAll (in every row alike, for a fair comparison).
    const bool zero = uses_zero_policy(o);
    const model::CommRegister reg = arena_registration(o);
    eo.nccl_arena = zero || reg != model::CommRegister::None;
    eo.sm_count_target = o.gemm_sms;
    eo.alltoall_call = zero && workload::has_collective(step, model::Collective::AllToAll);
    wl::StepExec ex(step, comm, eo);

    // Shapeable kernels (one per distinct __global__ function) and the rows, chosen on rank 0.
    const std::vector<Kernel> kernels = shapeable_kernels(ex, step, lim);
    std::vector<std::string> notes;
    const auto specs = keep_step_policies(rows_from_lead(g, [&] {
                                            StepDeviceContext ctx;
                                            ctx.limits = lim;
                                            ctx.nranks = g.size();
                                            ctx.step = &step;
                                            for (const auto& k : kernels)
                                              ctx.kernels.push_back({k.name, k.fp, k.natural_bps});
                                            rep.kernels = ctx.kernels;
                                            return provide_rows(ctx, notes);
                                          }),
                                          o, step, agree_comm_facts(g, rs.devices), notes);
    // Budget variants: one communicator per distinct (CTA count, CTA policy) and one SM
    // partition per distinct size, in the order the rows name them (the same on every rank).
    std::vector<CommKey> comm_keys = {CommKey{}};
    std::vector<std::optional<int>> green_keys = {std::nullopt};
    const std::vector<PlannedRow> planned =
        plan_step_rows(specs, kernels, lim, lead ? &notes : nullptr, comm_keys, green_keys);
    std::vector<rt::Comm> variants = open_variants(g, cc, comm_keys);  // [0]: empty, the run's is `comm`
    // The CTA policy each communicator runs with: a variant's own, else the run's (nullopt: NCCL's).
    std::vector<std::optional<model::CtaPolicy>> policies;
    for (const auto& k : comm_keys) policies.push_back(policy_of(k, cc));
    // The arena registered with every communicator (--nccl-register), else as a symmetric window
    // of every zero-CTA one (collective calls, in order); deregistered before the communicators
    // close (declared after them).
    std::vector<rt::Registration> regs;
    auto register_arena = [&](const rt::Comm& c, std::optional<model::CtaPolicy> policy) {
      const auto how = reg != model::CommRegister::None     ? reg
                       : policy == model::CtaPolicy::Zero ? model::CommRegister::Window
                                                            : model::CommRegister::None;
      const auto bytes = static_cast<std::size_t>(std::max<int64_t>(ex.arena_bytes(), 1));
      if (how != model::CommRegister::None) regs.emplace_back(c.get(), ex.arena(), bytes, how);
    };
    register_arena(comm, policies[0]);
    for (std::size_t i = 1; i < comm_keys.size(); ++i) register_arena(variants[i], policies[i]);
    if (lead && reg != model::CommRegister::None)
      notes.push_back(std::string("the arena (every buffer of the step) is registered with every "
                                  "communicator: ") + model::to_string(reg));
    if (lead && o.gemm_sms > 0)
      notes.push_back("every cuBLASLt GEMM runs with an SM-count target of " +
                      std::to_string(o.gemm_sms) + " in every run (alone, seq and each mode)");
    const auto parts = green_partitions(rs.device, green_keys, lead ? &notes : nullptr);
    StepSubject subject(ex, comm, variants, planned, kernels, parts, tr.get(), lead);
    if (tr) subject.name_streams(*tr);
    const nlohmann::json paths = probe_step_paths(path_probe, g, subject.stream(), ex, comm, variants,
                                                  policies, lead ? &notes : nullptr);
    // The answers computed on one stream: the snapshot every verified run must reproduce.
    std::vector<unsigned long long> wrong_alone(nops, 0);
    if (o.check) wrong_alone = subject.reference(g);
    const std::vector<SlotSamples> res = run_rounds(
        subject, g,
        rounds_options(o, lead, progress, [&] { return step.name; }, [&] {
          return std::to_string(nops) + " ops alone + " + std::to_string(planned.size()) + " modes each";
        }));

    // Samples per op alone, seq and row; wrong elements by (row, op): rows 0..planned.size()-1,
    // then seq's verified run, then the reference checks before the loop (summed over ranks).
    const std::size_t seq_slot = nops;
    const auto& overlap_rows = subject.overlap_rows();
    std::vector<std::vector<double>> alone(nops), row_t(planned.size());
    for (std::size_t i = 0; i < nops; ++i) alone[i] = res[i].total;
    const std::vector<double>& seq_t = res[seq_slot].total;
    std::vector<double> w((planned.size() + 2) * nops, 0.0);
    auto put = [&](std::size_t r, const std::vector<unsigned long long>& counts) {
      for (std::size_t i = 0; i < counts.size() && i < nops; ++i)
        w[r * nops + i] = static_cast<double>(counts[i]);
    };
    put(planned.size(), res[seq_slot].wrong);
    for (std::size_t j = 0; j < overlap_rows.size(); ++j) {
      row_t[overlap_rows[j]] = res[seq_slot + 1 + j].total;
      put(overlap_rows[j], res[seq_slot + 1 + j].wrong);
    }
    const std::vector<double> wa = sum_over_ranks(g, wrong_alone);
    for (std::size_t i = 0; i < wa.size() && i < nops; ++i) w[(planned.size() + 1) * nops + i] = wa[i];
    if (!lead) return;

    rep.notes = notes;
    rep.comm_paths = paths;
    if (lim.mem_bandwidth > 0) {  // the memory-traffic floor, before T_ideal is taken
      double bytes = 0;  // an op that fits in L2 may run from it: it counts nothing
      for (const auto& op : step.ops) {
        const double b = op.kind == workload::OpKind::Collective
                             ? model::collective_min_traffic(op.coll, op.traffic())
                             : op.traffic();
        bytes += model::dram_floor_bytes(b, b, static_cast<double>(lim.l2_bytes));
      }
      rep.t_mem_us = bytes / lim.mem_bandwidth * 1e6;
    }
    fill_step_report(rep, ex, planned, subject.seq_row(), alone, row_t, seq_t, w);
  });
  if (tr) finish_trace(*tr, o.trace_path, ranks, rep.notes);
  return rep;
}

}  // namespace cco::bench
