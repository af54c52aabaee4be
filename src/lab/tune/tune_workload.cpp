#include "tune/tune_workload.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <ostream>
#include <stdexcept>

#include "bench/runner.hpp"
#include "bootstrap/bootstrap.hpp"
#include "runtime/device.hpp"
#include "tune/search.hpp"
#include "tune/space.hpp"
#include "tune/tune.hpp"

namespace cco::tune {

namespace fs = std::filesystem;
using bench::Mode;
using bench::RowSpec;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The GPUs a step is tuned on (-g, 0: every one), in this one process: a launcher's rank is
// refused (the rounds run a thread per GPU).
int workload_gpus(int asked) {
  if (const auto launch = boot::parse_launch_env(boot::current_environment());
      launch && launch->world_size > 1)
    throw bench::UsageError("cco tune --workload runs one process with a thread per GPU, but " +
                            launch->launcher + " started this one as rank " +
                            std::to_string(launch->rank) + " of " +
                            std::to_string(launch->world_size) +
                            ": run it once, without the launcher (-g N picks the GPUs)");
  std::string why;
  const int ndev = rt::device_count(&why);
  if (ndev == 0)
    throw bench::NoGpu("cco tune needs a CUDA GPU and none is usable here (" + why + ")");
  const int ngpus = asked == 0 ? ndev : asked;
  if (ngpus > ndev)
    throw bench::UsageError("-g " + std::to_string(ngpus) + ": only " + std::to_string(ndev) +
                            " GPU(s) visible");
  return ngpus;
}

// A final round with wrong elements writes no plan.
void refuse_wrong(const bench::StepReport& fin) {
  if (fin.wrong() == 0) return;
  std::string ops;
  for (const auto& op : fin.ops)
    if (op.wrong > 0) ops += (ops.empty() ? "" : ", ") + op.id;
  throw std::runtime_error(std::to_string(fin.wrong()) +
                           " wrong elements in the final round (ops: " + ops + "); no plan written");
}

}  // namespace

WorkloadTuneResult run_tune_workload(const WorkloadTuneOptions& o, std::ostream& progress) {
  const auto t0 = Clock::now();
  const bench::Options& common = o.step.common;
  const bool talk = !common.quiet;
  WorkloadTuneResult res;

  const int ngpus = workload_gpus(common.ngpus);

  // The cache key needs the expanded step, the devices and the versions: all known before
  // anything is measured.
  workload::StepLoadOptions lo;
  lo.nranks = ngpus;
  lo.overrides = o.step.params;
  lo.check = common.check;
  const workload::Step step = workload::load_step(o.step.workload, lo);
  int64_t memory = 0;
  const nlohmann::json devices = devices_json(ngpus, &memory);
  // The final round verifies: refuse what it would refuse (memory, reductions -c cannot check)
  // before screening anything.
  bench::check_step_runnable(step, memory, common.check);
  const std::string key =
      workload_cache_key(devices, versions_json(), ngpus, step, common, o.space);
  if (o.use_cache) {
    const std::string dir = resolve_cache_dir(o.cache_dir);
    res.cache_file = (fs::path(dir) / ("tune-workload-" + key + ".json")).string();
    res.from_cache =
        cache_hit(res.cache_file, key, o.retune, res.plan, res.table, talk ? &progress : nullptr);
    if (res.from_cache) return res;
  }

  // The search (tune/search.hpp) on this step: each round a run_step of its rows, unverified
  // (the final round verifies). The zero-CTA policy is a candidate where the step has an
  // all-gather or all-to-all: every round's executor then takes its arena from ncclMemAlloc and
  // runs all-to-alls as ncclAlltoAll (run_step decides that from the options' policies, on every
  // rank alike).
  const bool copy_engine = workload::has_collective(step, model::Collective::AllGather) ||
                           workload::has_collective(step, model::Collective::AllToAll);
  const std::vector<model::CtaPolicy> policies =
      cta_policies_to_try(common.row_cta_policies, copy_engine, common.nccl_cta_policy);
  bench::StepOptions screen_opts = o.step;
  screen_opts.common.row_cta_policies = policies;
  screen_opts.common.iters = o.screen_iters;
  screen_opts.common.warmup = std::min(common.warmup, 2);
  screen_opts.common.check = false;
  if (talk)
    progress << "# tune: workload " << step.name << " on " << ngpus << " GPU(s), "
             << step.ops.size() << " ops" << std::endl;
  WorkloadSpaceInput space_in;
  space_in.copy_engine = copy_engine;
  space_in.run_policy = common.nccl_cta_policy;
  space_in.cta_policies = policies;
  if (common.nccl_max_ctas) space_in.nccl_ctas = *common.nccl_max_ctas;
  Screening screening;
  auto screen_rows = [&](const bench::StepRowProvider& rows) {
    const auto rep = bench::run_step(screen_opts, rows, progress);
    // An iteration: every op alone, seq, then each row.
    screening.fixed_us = rep.t_seq.median();
    for (const auto& op : rep.ops) screening.fixed_us += op.alone.median();
    std::vector<Screened> out;
    for (const auto& r : rep.rows)
      if (r.spec.mode != Mode::Seq) out.push_back({r.spec, r.t.median()});
    return out;
  };
  auto space_of = [&](const bench::StepDeviceContext& d, std::vector<std::string>& notes) {
    space_in.limits = d.limits;
    space_in.kernels = d.kernels;
    return std::pair{build_workload_space(space_in, o.space, &notes), predict_workload(space_in)};
  };
  SearchSubject subject = screening_subject(screening, screen_rows, space_of, t0);
  subject.neighbours = [&](const RowSpec& r) { return workload_neighbours(space_in, r); };
  const SearchResult found =
      search(subject,
             search_options(o.top, o.space.refine, o.space.rounds, o.budget_s, common.warmup,
                            common.iters, o.screen_iters),
             talk ? &progress : nullptr);
  const auto& finalists = found.finalists;

  bench::StepOptions final_opts = o.step;
  final_opts.common.row_cta_policies = policies;
  final_opts.common.iters = found.final_iters;
  if (talk)
    progress << "# tune: final round, " << finalists.size() - 1 << " candidates x "
             << final_opts.common.iters << " samples" << (common.check ? ", verified" : "")
             << std::endl;
  const auto fin = bench::run_step(
      final_opts,
      [&](const bench::StepDeviceContext&, std::vector<std::string>&) { return finalists; },
      progress);
  refuse_wrong(fin);

  const auto tried = tried_from_step(fin, screening.predicted);
  const auto best = pick_best(tried);
  res.plan = workload_plan_json(fin, tried, best, key);
  for (const auto& n : screening.notes) res.plan["tuning"]["notes"].push_back(n);
  for (const auto& n : fin.notes) res.plan["tuning"]["notes"].push_back(n);
  res.plan["tuning"]["search"] = search_json(found, o.screen_iters, seconds_since(t0));
  res.table = format_step_tried(tried, best, fin.t_seq.median(), fin.t_ideal.median());
  if (o.use_cache) write_cache(res.cache_file, key, res.plan, res.table);
  return res;
}

}  // namespace cco::tune
