#include "bench/runner.hpp"

#include "bench/engine.hpp"
#include "bench/nvtx.hpp"
#include "bench/pair.hpp"
#include "bench/ranks.hpp"

#include <nvtx3/nvToolsExt.h>  // header-only; NVTX loads a tool only when one is attached
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <ostream>

#include "bootstrap/bootstrap.hpp"
#include "bench/comm_path.hpp"
#include "model/cta_policy.hpp"
#include "model/metrics.hpp"
#include "model/occupancy.hpp"
#include "runtime/check.hpp"
#include "runtime/comm.hpp"
#include "runtime/device.hpp"
#include "runtime/green.hpp"
#include "trace/session.hpp"
#include "kernels/workload.hpp"

namespace cco::bench {
namespace {

using namespace pair;


/// Realises each row on this device: its variants' indices and, for shape rows, the padding
/// (ranks.hpp: plan_padding) with the driver's blocks per SM. Throws UsageError for a row that
/// cannot run here.
RowPlan plan_rows(const std::vector<RowSpec>& specs, const DeviceContext& ctx,
                  wl::ComputeOp& comp0, std::vector<std::string>& notes) {
  RowPlan plan;
  for (const auto& s : specs) {
    Planned p{s, 0, ctx.natural_bps};
    p.comp = key_index(plan.sms_keys, s.controls.gemm_sms);
    p.comm = key_index(plan.comm_keys, CommKey{s.controls.nccl_ctas, s.controls.nccl_reg, s.controls.cta_policy});
    p.green = key_index(plan.green_keys, s.controls.green_sms);
    if (is_shape(s.mode)) {
      if (!ctx.shapeable) throw UsageError("shape rows need a compute part whose launches are ours");
      const PadPlan pp = plan_padding(ctx.limits, ctx.footprint, comp0.kernel(), s.k(),
                                      s.controls.pad, "--pad " + model::format_bytes(s.controls.pad.value_or(-1)));
      if (!pp.note.empty()) notes.push_back(pp.note);
      p.pad = pp.pad;
      p.bps = pp.driver_bps;
      if (pp.driver_bps != pp.model_bps)
        notes.push_back("pad " + std::to_string(p.pad) + ": model says " +
                        std::to_string(pp.model_bps) + " blocks per SM, the driver " +
                        std::to_string(pp.driver_bps) + "; using the driver's");
      comp0.set_extra_smem(0);
    }
    plan.planned.push_back(p);
  }
  return plan;
}

/// The round-robin's slots for the planned rows: compute alone, collective alone and seq (the
/// size's baselines), then per row its overlapped run and, where the row has its own compute
/// part, padding or partition (or its own communicator), that part alone. Each named for traces.
/// Rows not `row_ok` (their communicator's buffers could not be registered) get no slot. With
/// `in_place`, the collective alone in place comes last (the other runs keep their order).
std::vector<Slot> make_slots(const std::vector<Planned>& planned, const std::vector<bool>& row_ok,
                             bool in_place) {
  std::vector<Slot> slots = {{Slot::Comp}, {Slot::Comm}, {Slot::Seq}};
  for (std::size_t r = 0; r < planned.size(); ++r) {
    if (!row_ok[r]) continue;
    if (planned[r].spec.mode != Mode::Seq) slots.push_back({Slot::Overlap, r});
    if (planned[r].pad > 0 || planned[r].comp != 0 || planned[r].green != 0)
      slots.push_back({Slot::CompAlone, r});
    if (planned[r].comm != 0) slots.push_back({Slot::CommAlone, r});
  }
  if (in_place) slots.push_back({Slot::CommInPlace});
  for (auto& slot : slots) {
    const char* alone = slot.kind == Slot::Comp          ? "compute alone"
                        : slot.kind == Slot::Comm        ? "collective alone"
                        : slot.kind == Slot::CommInPlace ? "collective alone in place"
                        : slot.kind == Slot::Seq         ? "seq"
                        : slot.kind == Slot::CompAlone   ? " (compute alone)"
                        : slot.kind == Slot::CommAlone   ? " (collective alone)"
                                                         : "";
    slot.name = slot.kind >= Slot::Overlap ? planned[slot.row].spec.label() : std::string();
    slot.name.append(alone);
  }
  return slots;
}

/// One size's rows of the report, from its slots' samples. `w`: wrong elements summed over
/// ranks, per planned row, then per compute part alone (the reference checks), then seq's.
/// `base` carries what every row of the size shares (bytes, count, flops, busbw factor).
void append_rows(Report& rep, const Row& base, const std::vector<Planned>& planned,
                 const std::vector<Slot>& slots, const std::vector<double>& w, std::size_t ncomps,
                 const std::vector<bool>& row_ok, const std::vector<nlohmann::json>& comm_paths,
                 const std::vector<std::optional<model::CtaPolicy>>& comm_policy) {
  std::vector<bool> charged(ncomps, false);  // alone errors count once per part
  for (std::size_t r = 0; r < planned.size(); ++r) {
    const auto& p = planned[r];
    if (!row_ok[r]) continue;
    Row row = base;
    row.cta_policy = comm_policy[p.comm];
    row.comm_path = comm_paths[p.comm];
    row.spec = p.spec;
    row.pad = p.pad;
    row.blocks_per_sm = p.bps;
    row.t_comp.samples = slots[0].total;
    row.t_comm.samples = slots[1].total;
    row.t_seq.samples = slots[2].total;
    row.t_comp_alone.samples = slots[0].total;
    row.t_comm_alone.samples = slots[1].total;
    // Wrong answers of a compute part computed alone count in the first row that uses it.
    if (!charged[p.comp]) {
      row.wrong = static_cast<unsigned long long>(w[planned.size() + p.comp]);
      charged[p.comp] = true;
    }
    if (p.spec.mode == Mode::Seq) {
      row.t = row.t_seq;
      row.t_comp_part.samples = slots[2].comp;
      row.t_comm_part.samples = slots[2].comm;
      row.wrong += static_cast<unsigned long long>(w.back());
    } else {
      row.wrong += static_cast<unsigned long long>(w[r]);
    }
    for (const auto& slot : slots) {
      if (slot.kind < Slot::Overlap || slot.row != r) continue;
      if (slot.kind == Slot::Overlap) {
        row.t.samples = slot.total;
        row.t_comp_part.samples = slot.comp;
        row.t_comm_part.samples = slot.comm;
      } else if (slot.kind == Slot::CompAlone) {
        row.t_comp_alone.samples = slot.total;
      } else {
        row.t_comm_alone.samples = slot.total;
      }
    }
    rep.rows.push_back(std::move(row));
  }
}

/// The rounds' samples into their slots, and the wrong elements (already summed over ranks) as
/// append_rows reads them: per row, then per compute part alone (the reference checks before the
/// loop, summed here over ranks), then seq's; the in-place run's into `in_place`.
std::vector<double> take_samples(std::vector<Slot>& slots, const std::vector<SlotSamples>& res,
                                 std::size_t nrows, const std::vector<unsigned long long>& alone,
                                 boot::Group& g, unsigned long long& in_place) {
  std::vector<double> w(nrows, 0);
  double seq = 0;
  for (std::size_t k = 0; k < slots.size(); ++k) {
    slots[k].total = res[k].total;
    slots[k].comp = res[k].comp;
    slots[k].comm = res[k].comm;
    const unsigned long long n = res[k].wrong.empty() ? 0 : res[k].wrong[0];
    if (slots[k].kind == Slot::Seq)
      seq += static_cast<double>(n);
    else if (slots[k].kind == Slot::Overlap)
      w[slots[k].row] += static_cast<double>(n);
    else if (slots[k].kind == Slot::CommInPlace)
      in_place += n;
  }
  std::vector<double> wa(alone.begin(), alone.end());
  g.allreduce(wa, boot::Group::Op::Sum);
  w.insert(w.end(), wa.begin(), wa.end());
  w.push_back(seq);
  return w;
}

/// The size's collective alone in place (its slot's samples and wrong elements) into every row
/// appended from `first`; the wrong elements count once, in the size's first row.
void add_in_place(Report& rep, std::size_t first, const std::vector<Slot>& slots,
                  unsigned long long wrong) {
  for (const auto& slot : slots) {
    if (slot.kind != Slot::CommInPlace) continue;
    for (std::size_t i = first; i < rep.rows.size(); ++i) {
      auto& row = rep.rows[i];
      row.in_place = true;
      row.t_comm_in_place.samples = slot.total;
      row.in_place_wrong = wrong;
      if (i == first) row.wrong += wrong;
    }
  }
}

/// Per type: whether -c 1 can check the collective exactly on `nranks` ranks. A type it cannot is
/// run unchecked with a note (its rows say n/a), never silently.
std::vector<bool> exact_checks(const Options& o, int nranks, std::vector<std::string>& notes) {
  std::vector<bool> ok;
  for (const auto t : run_dtypes(o)) {
    wl::CommSpec probe;
    probe.coll = o.coll;
    probe.op = o.op;
    probe.dtype = t;
    const auto why = o.check ? wl::CommOp::unchecked_reason(probe, nranks) : std::string();
    if (!why.empty())
      notes.push_back(std::string("-c 1: ") + model::to_string(t) + " not checked (" + why +
                      "); its rows say n/a");
    ok.push_back(o.check && why.empty());
  }
  return ok;
}

/// The rows whose CTA policy can apply here (model::cta_policy_refusal, from facts every rank
/// agreed on), each refused one named in `notes`. The run's own policy must apply: its refusal
/// is a UsageError (the baselines run under it).
std::vector<RowSpec> keep_applicable(std::vector<RowSpec> specs, const Options& o,
                                     const CommFacts& f, std::vector<std::string>& notes) {
  if (o.nccl_cta_policy) {
    const auto why = model::cta_policy_refusal(*o.nccl_cta_policy, o.coll, f.nccl_version, f.one_host);
    if (!why.empty()) throw UsageError("--nccl-cta-policy: " + why);
  }
  std::vector<RowSpec> kept;
  for (auto& s : specs) {
    if (s.controls.cta_policy) {
      const auto why = model::cta_policy_refusal(*s.controls.cta_policy, o.coll, f.nccl_version, f.one_host,
                                                 /*split=*/true);
      if (!why.empty()) {
        notes.push_back("row '" + s.label() + "' skipped: " + why);
        continue;
      }
    }
    kept.push_back(std::move(s));
  }
  return kept;
}

/// Whether the run or any row asks for the zero-CTA policy.
bool uses_zero(const Options& o, const std::vector<RowSpec>& specs) {
  const auto zero = model::CtaPolicy::Zero;
  if (o.nccl_cta_policy == zero) return true;
  return std::any_of(specs.begin(), specs.end(), [&](const RowSpec& s) { return s.controls.cta_policy == zero; });
}

/// "cta=zero reg=window ctas=4": a communicator variant, for notes and probe marks.
std::string comm_label(const CommKey& key, model::CtaPolicy policy) {
  std::string s = "cta=" + std::string(model::to_string(policy));
  if (key.reg) s += std::string(" reg=") + model::to_string(*key.reg);
  if (key.ctas) s += " ctas=" + std::to_string(*key.ctas);
  return s;
}

/// Where NCCL ran the collective of each communicator whose CTA policy was set (null for the
/// others), one note each in `notes` (rank 0's; null elsewhere). `what`: the size (and type).
std::vector<nlohmann::json> probe_paths(PathProbe& probe, boot::Group& g, cudaStream_t st,
                                        const std::vector<std::unique_ptr<wl::CommOp>>& mops,
                                        const std::vector<CommKey>& keys,
                                        const std::vector<std::optional<model::CtaPolicy>>& policy,
                                        const std::string& what,
                                        std::vector<std::string>* notes) {
  std::vector<nlohmann::json> paths(mops.size());
  std::vector<PathProbe::Item> items;
  std::vector<std::size_t> probed;
  for (std::size_t i = 0; i < mops.size(); ++i) {
    if (!policy[i] || !mops[i]) continue;
    auto* m = mops[i].get();
    items.push_back({comm_label(keys[i], *policy[i]) + ", " + what,
                     [m](cudaStream_t s) { m->enqueue(s); }, m->spec().allgather_comm != nullptr});
    probed.push_back(i);
  }
  if (items.empty()) return paths;
  const auto found = probe.probe(g, st, items);
  for (std::size_t j = 0; j < probed.size(); ++j) {
    paths[probed[j]] = found[j];
    if (notes) notes->push_back(path_note(items[j].label, *policy[probed[j]], found[j], g.size()));
  }
  return paths;
}

/// The collective of each communicator variant (with the variant's buffer registration). A
/// variant whose buffers NCCL refused on any rank is null on every rank (agreed), and the run
/// goes on without it; the run's own (index 0) must work.
/// An all-reduce under a zero-CTA communicator runs split: the reduce-scatter on the run's own
/// communicator (SMs), the in-place all-gather on the zero one (model::zero_splits).
std::vector<std::unique_ptr<wl::CommOp>> make_collectives(
    boot::Group& g, const wl::CommSpec& ms, const std::vector<rt::Comm>& comms,
    const std::vector<CommKey>& keys, const std::vector<std::optional<model::CtaPolicy>>& policy) {
  std::vector<std::unique_ptr<wl::CommOp>> mops;
  std::vector<double> failed(comms.size(), 0);
  std::string first_error;
  for (std::size_t i = 0; i < comms.size(); ++i) {
    auto spec = ms;
    spec.in_place = ms.in_place && i == 0;  // in place: the run's own communicator only
    if (keys[i].reg) spec.reg = *keys[i].reg;
    const bool split = i > 0 && policy[i] && model::zero_splits(*policy[i], ms.coll);
    if (split) spec.allgather_comm = &comms[i];
    try {
      mops.push_back(std::make_unique<wl::CommOp>(spec, split ? comms[0] : comms[i]));
    } catch (const std::exception& e) {
      if (i == 0) throw;
      mops.push_back(nullptr);
      failed[i] = 1;
      if (first_error.empty()) first_error = e.what();
    }
  }
  g.allreduce(failed, boot::Group::Op::Max);
  for (std::size_t i = 1; i < comms.size(); ++i)
    if (failed[i] > 0) mops[i].reset();
  if (!first_error.empty())
    std::fprintf(stderr, "cco bench: rank %d: %s\n", g.rank(), first_error.c_str());
  return mops;
}

/// The report of a pair run before anything runs (argv, config, versions, ...); refuses a
/// reduction -c 1 cannot verify. `in_place_why`: why --in-place cannot apply ("" when it can).
Report prepare_pair_report(const Options& o, const Ranks& ranks, const std::string& in_place_why) {
  if (o.check) {
    wl::CommSpec probe;
    probe.coll = o.coll;
    probe.op = o.op;
    if (!wl::CommOp::checkable(probe))
      throw UsageError(std::string("-c 1 cannot verify reduction '") + model::to_string(o.op) +
                       "' (checked: sum, min, max); use -c 0");
  }
  Report rep;
  rep.argv = o.argv;
  rep.date = iso_now();
  rep.host = host_name();
  rep.nranks = ranks.size();
  rep.config = options_json(o);
  rep.collective = model::to_string(o.coll);
  rep.dtype = dtypes_label(o);
  rep.redop = model::to_string(o.op);
  if (o.in_place) rep.in_place = in_place_why.empty() ? "measured" : in_place_why;
  rep.versions = versions_json();
  rep.bootstrap = ranks.launcher->mode();
  rep.writer = ranks.launcher->first_rank() == 0;
  return rep;
}

/// The run's compute part (--compute, --gemm, --gemm-dtype, --count, --mem-bytes, --gemm-sms).
wl::ComputeSpec compute_spec(const Options& o) {
  wl::ComputeSpec cs;
  cs.kind = o.compute;
  cs.dtype = o.gemm_dtype;
  cs.m = o.m;
  cs.n = o.n;
  cs.k = o.k;
  cs.count = o.count;
  cs.mem_bytes = o.mem_bytes;
  cs.sm_count_target = o.gemm_sms;
  return cs;
}

/// What rank 0 chooses rows from: the device, the ranks and the compute kernel's footprint and
/// occupancy as launched (said in a note) when its launches are ours.
DeviceContext device_context(const wl::ComputeOp& comp, const model::DeviceLimits& lim, int nranks,
                             std::vector<std::string>& notes) {
  DeviceContext ctx;
  ctx.limits = lim;
  ctx.shapeable = comp.shapeable();
  ctx.nranks = nranks;
  if (ctx.shapeable) {
    ctx.footprint = comp.footprint();
    ctx.natural_bps = model::occupancy(lim, ctx.footprint).blocks_per_sm;
    notes.push_back("compute kernel: " + std::to_string(ctx.footprint.threads) + " threads, " +
                    std::to_string(ctx.footprint.regs) + " registers, " +
                    std::to_string(ctx.footprint.static_smem) + " B static shared memory: " +
                    std::to_string(ctx.natural_bps) + " blocks per SM as launched");
  }
  return ctx;
}

/// The forms the zero-CTA policy gives the collective, said in `notes`: an all-reduce runs split
/// in its zero rows, an all-to-all is one ncclAlltoAll call in every row (returned: true).
bool zero_forms(const Options& o, const std::vector<RowSpec>& specs, std::vector<std::string>& notes) {
  const bool zero = uses_zero(o, specs);
  if (o.coll == model::Collective::AllReduce && zero)
    notes.push_back("allreduce under cta=zero runs split: a reduce-scatter on the run's own "
                    "communicator (SMs), then an in-place all-gather on the zero-CTA one (the "
                    "copy engines), its buffer a symmetric window");
  const bool alltoall_call = o.coll == model::Collective::AllToAll && zero;
  if (alltoall_call)
    notes.push_back("alltoall: one ncclAlltoAll call in every row (the form NCCL can carry on the "
                    "copy engines), not nccl-tests' grouped send/receive");
  return alltoall_call;
}

/// One compute part per SM-count target after the first (sms_keys[0] is the run's own), cuBLASLt
/// only and within the device's SMs.
void add_compute_variants(std::vector<std::unique_ptr<wl::ComputeOp>>& comps,
                          const wl::ComputeSpec& cs, const std::vector<std::optional<int>>& sms_keys,
                          const rt::DeviceInfo& info) {
  for (std::size_t i = 1; i < sms_keys.size(); ++i) {
    if (cs.kind != model::ComputeKind::CublasLt)
      throw UsageError("an SM-count target applies to cuBLASLt GEMMs only");
    const int target = sms_keys[i].value();  // only [0] is the run's own
    if (target > info.limits.sm_count)
      throw UsageError("SM-count target " + std::to_string(target) + " exceeds the " +
                       std::to_string(info.limits.sm_count) + " SMs of " + info.name);
    auto spec = cs;
    spec.sm_count_target = target;
    comps.push_back(wl::make_compute(spec));
  }
}

/// The run's communicator (`run`) and one per (CTAs, registration, policy) variant after it, in
/// the same order on every rank; `policy` gets the CTA policy each runs with (nullopt: NCCL's).
std::vector<rt::Comm> open_comm_variants(boot::Group& g, const rt::CommConfig& cc,
                                         const std::vector<CommKey>& keys, rt::Comm run,
                                         std::vector<std::optional<model::CtaPolicy>>& policy) {
  policy.clear();
  for (const auto& k : keys) policy.push_back(policy_of(k, cc));
  std::vector<rt::Comm> comms = open_variants(g, cc, keys);
  comms[0] = std::move(run);
  return comms;
}

/// The collective at one (type, size): the size rounded down to whole elements per rank of that
/// type (UsageError below one), the run's reduction and registration, its zero-CTA and in-place
/// forms.
wl::CommSpec comm_spec(const Options& o, model::DType type, int64_t size, int nranks,
                       bool alltoall_call, bool in_place) {
  wl::CommSpec ms;
  ms.coll = o.coll;
  ms.dtype = type;
  ms.op = o.op;
  const int64_t gran = wl::CommOp::granule(ms, nranks);
  ms.bytes = size / gran * gran;
  if (ms.bytes == 0)
    throw UsageError("size " + std::to_string(size) + " B is below one element per rank (" +
                     std::to_string(gran) + " B of " + model::to_string(ms.dtype) + ")");
  ms.reg = o.nccl_register;
  ms.alltoall_call = alltoall_call;
  ms.in_place = in_place;
  return ms;
}

/// Which rows run at this size: not those whose communicator's buffers NCCL refused (their
/// collective is null on every rank, agreed), each named in `notes` (rank 0's; null elsewhere).
std::vector<bool> rows_with_buffers(const std::vector<Planned>& planned,
                                    const std::vector<std::unique_ptr<wl::CommOp>>& mops,
                                    const std::string& what, std::vector<std::string>* notes) {
  std::vector<bool> ok(planned.size(), true);
  for (std::size_t r = 0; r < planned.size(); ++r) {
    if (mops[planned[r].comm]) continue;
    ok[r] = false;
    if (notes)
      notes->push_back("size " + what + ": row '" + planned[r].spec.label() +
                       "' skipped: its buffers could not be registered");
  }
  return ok;
}


Report run_pairs(const Options& o, const RowProvider& provide_rows, const SizeDone& on_size_done,
                 std::ostream& progress);

}  // namespace

Report run(const Options& o, const SizeDone& on_size_done, std::ostream& progress) {
  return run_pairs(
      o,
      [&o](const DeviceContext& d, std::vector<std::string>& notes) {
        return expand_rows(o, d.shapeable, d.natural_bps, &notes);
      },
      on_size_done, progress);
}

Report run(const Options& o, const RowProvider& provide_rows, const SizeDone& on_size_done,
           std::ostream& progress) {
  // cco tune: one type, out of place (its rows and plan are for one collective as programs run it).
  if (run_dtypes(o).size() > 1)
    throw UsageError("-d " + dtypes_label(o) + ": cco tune tunes one data type (give -d TYPE)");
  if (o.in_place) throw UsageError("--in-place applies to cco bench");
  return run_pairs(o, provide_rows, on_size_done, progress);
}

namespace {

// The per-rank body is one closure because a rank's communicators, compute parts and streams
// live exactly as long as the rank's thread or process. It holds only what is the pair's own:
// what both runners do on a rank is in ranks.hpp (enter_rank, rows_from_lead, open_variants,
// rounds_options), the runs at each (type, size) are a PairSubject driven by the engine
// (engine.hpp), and the rows, slots and report rows are planned and filled outside.
Report run_pairs(const Options& o, const RowProvider& provide_rows, const SizeDone& on_size_done,
                 std::ostream& progress) {
  // Tracing starts before the first CUDA call; off, it costs nothing (no session exists).
  const auto tr = start_trace(o.trace_path);
  // Ranks: threads in this process, or one process per rank from a launcher (ranks.hpp). Every
  // rank must run the same workload and the same number of rounds: the options are the job key
  // the ranks compare when they meet.
  Ranks ranks = launch_ranks(o, options_json(o).dump());
  auto& launcher = ranks.launcher;

  // In place where the collective allows (nccl-tests' in-place columns), else said once.
  const std::string in_place_why = o.in_place ? in_place_refusal(o.coll) : std::string();
  const bool in_place = o.in_place && in_place_why.empty();
  Report rep = prepare_pair_report(o, ranks, in_place_why);
  const wl::ComputeSpec cs = compute_spec(o);
  const rt::CommConfig cc = comm_config(o);

  // Every size of the first type, then of the next (-d all or a list): (type, size) pairs.
  const auto all_sizes = sizes(o);
  const auto types = run_dtypes(o);
  const std::size_t pairs = types.size() * all_sizes.size();
  const bool typed = types.size() > 1;

  // Where NCCL ran each communicator whose CTA policy was set (one per process).
  PathProbe path_probe(tr.get());
  launcher->run([&](boot::Group& g) {
    const RankSetup rs = enter_rank(g, ranks, tr.get(), rep.host);
    const bool lead = rs.lead;
    const auto& lim = rs.info.limits;
    if (lead) rep.devices = rs.devices;
    rt::Comm run_comm = open_comm(g, cc);
    std::vector<std::unique_ptr<wl::ComputeOp>> comps;
    comps.push_back(wl::make_compute(cs));
    auto& comp0 = *comps[0];

    // Rows are chosen on rank 0 from its device and sent to all ranks, so every rank runs the
    // same rows in the same order even if devices differed.
    std::vector<std::string> notes;
    const DeviceContext ctx = device_context(comp0, lim, g.size(), notes);
    const auto specs = keep_applicable(rows_from_lead(g, [&] { return provide_rows(ctx, notes); }),
                                       o, agree_comm_facts(g, rs.devices), notes);
    const bool alltoall_call = zero_forms(o, specs, notes);

    // Budget variants: one compute part per distinct SM target, one communicator per distinct
    // (CTA count, registration) and one partition per green size, in the same order on every rank.
    const RowPlan plan = plan_rows(specs, ctx, comp0, notes);
    const auto& planned = plan.planned;
    const auto& sms_keys = plan.sms_keys;
    const auto& comm_keys = plan.comm_keys;
    const auto& green_keys = plan.green_keys;
    add_compute_variants(comps, cs, sms_keys, rs.info);
    // The CTA policy each communicator runs with (nullopt: NCCL's default).
    std::vector<std::optional<model::CtaPolicy>> comm_policy;
    std::vector<rt::Comm> comms = open_comm_variants(g, cc, comm_keys, std::move(run_comm), comm_policy);
    const auto parts = green_partitions(rs.device, green_keys, &notes);
    const auto checks = exact_checks(o, g.size(), notes);  // -c 1 per type
    if (o.in_place)
      notes.push_back(in_place ? "--in-place 1: the collective alone is also timed in place on the "
                                 "run's own communicator (footer, JSON, CSV)"
                               : "--in-place 1 skipped: " + in_place_why);
    if (o.cudagraph > 0)
      notes.push_back("-G " + std::to_string(o.cudagraph) +
                      ": each run is captured once as a CUDA graph and timed over " +
                      std::to_string(o.cudagraph) +
                      " replays (launch overheads out, as nccl-tests -G); parts from the last replay");
    if (lead) {
      rep.compute = comp0.describe();
      rep.notes = notes;
    }
    RankBench rb;
    if (tr) rb.name_streams(*tr);

    for (std::size_t si = 0; si < pairs; ++si) {
      const std::size_t ti = si / all_sizes.size();
      const int64_t size = all_sizes[si % all_sizes.size()];
      const bool check = checks[ti];
      const wl::CommSpec ms = comm_spec(o, types[ti], size, g.size(), alltoall_call, in_place);
      // "256M", or "256M half" when several types run: in notes, progress and NVTX ranges.
      const std::string what = model::format_bytes(ms.bytes) +
                               (typed ? " " + std::string(model::to_string(ms.dtype)) : "");
      auto mops = make_collectives(g, ms, comms, comm_keys, comm_policy);
      auto& mop0 = *mops[0];
      const std::vector<bool> row_ok = rows_with_buffers(planned, mops, what, lead ? &rep.notes : nullptr);
      // Where NCCL ran the collective of each communicator with a CTA policy set.
      const auto comm_paths = probe_paths(path_probe, g, rb.stream(), mops, comm_keys, comm_policy,
                                          what, lead ? &rep.notes : nullptr);

      // The round-robin (engine.hpp) over the slots: every slot per iteration, each run after a
      // barrier of all ranks; seq and the overlapped rows verified in the last iteration; samples
      // after the warm-up, combined over ranks per iteration (-a; max by default). The NVTX
      // ranges name the size too when there are several (and the type).
      std::vector<Slot> slots = make_slots(planned, row_ok, in_place);
      PairSubject subject(rb, slots, planned, comps, mops, parts, tr.get(), lead,
                          pairs > 1 ? ", " + what : std::string(), o.cudagraph);
      // Answers computed alone: the references every overlapped run must reproduce exactly.
      std::vector<unsigned long long> wrong_alone(comps.size(), 0);
      if (check) wrong_alone = subject.reference(g);
      RoundsOptions rounds = rounds_options(
          o, lead, progress,
          [&] { return "size " + std::to_string(si + 1) + "/" + std::to_string(pairs) + " " + what; },
          [&] { return std::to_string(slots.size()) + " runs each"; });
      rounds.check = check;  // -c 1, where this type's answers are exact
      const std::vector<SlotSamples> res = run_rounds(subject, g, rounds);

      unsigned long long wrong_in_place = 0;
      const auto w = take_samples(slots, res, planned.size(), wrong_alone, g, wrong_in_place);

      if (!lead) continue;
      const std::size_t first = rep.rows.size();
      Row base;  // what every row of this (type, size) shares
      base.bytes = ms.bytes;
      base.count = static_cast<int64_t>(mop0.count());
      base.flops = comp0.flops();
      // The memory-traffic floor: what both parts move at least, at the device's peak bandwidth.
      // Parts whose one pass fits in L2 may run from it: they count nothing (a floor, not an
      // estimate).
      if (lim.mem_bandwidth > 0) {
        const double l2 = static_cast<double>(lim.l2_bytes);
        const double comm = model::collective_min_traffic(o.coll, static_cast<double>(ms.bytes));
        base.t_mem_us = (model::dram_floor_bytes(comp0.bytes(), comp0.bytes() / std::max(1, o.count), l2) +
                         model::dram_floor_bytes(comm, comm, l2)) /
                        lim.mem_bandwidth * 1e6;
      }
      base.comm_busbw_factor = model::busbw_factor(o.coll, g.size());
      base.checked = check;
      base.dtype = model::to_string(ms.dtype);
      append_rows(rep, base, planned, slots, w, comps.size(), row_ok, comm_paths, comm_policy);
      add_in_place(rep, first, slots, wrong_in_place);
      on_size_done(rep, first);
    }
  });
  if (tr) finish_trace(*tr, o.trace_path, ranks, rep.notes);
  return rep;
}

}  // namespace
}  // namespace cco::bench
