#include "tune/tune_workload.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <ostream>
#include <stdexcept>

#include "bench/runner.hpp"
#include "bootstrap/bootstrap.hpp"
#include "runtime/device.hpp"
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

/// Microseconds one round-robin iteration of a run_step takes: every op alone, seq, then `rows`
/// (their screened medians).
double iteration_us(const bench::StepReport& screen, const std::vector<RowSpec>& rows) {
  double t = screen.t_seq.median();
  for (const auto& op : screen.ops) t += op.alone.median();
  for (const auto& r : rows) {
    if (r.mode == Mode::Seq) continue;
    for (const auto& row : screen.rows)
      if (row.spec == r) {
        t += row.t.median();
        break;
      }
  }
  return t;
}

}  // namespace

WorkloadTuneResult run_tune_workload(const WorkloadTuneOptions& o, std::ostream& progress) {
  const auto t0 = Clock::now();
  const bench::Options& common = o.step.common;
  const bool talk = !common.quiet;
  WorkloadTuneResult res;

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
  const int ngpus = common.ngpus == 0 ? ndev : common.ngpus;
  if (ngpus > ndev)
    throw bench::UsageError("-g " + std::to_string(ngpus) + ": only " + std::to_string(ndev) +
                            " GPU(s) visible");

  // The cache key needs the expanded step, the devices and the versions: all known before
  // anything is measured.
  workload::StepLoadOptions lo;
  lo.nranks = ngpus;
  lo.overrides = o.step.params;
  lo.check = common.check;
  const workload::Step step = workload::load_step(o.step.workload, lo);
  nlohmann::json devices = nlohmann::json::array();
  int64_t memory = INT64_MAX;
  for (int i = 0; i < ngpus; ++i) {
    const auto info = rt::device_info(i);
    devices.push_back({{"name", info.name}, {"sms", info.limits.sm_count}});
    memory = std::min(memory, info.total_mem);
  }
  // The final round verifies: refuse what it would refuse (memory, reductions -c cannot check)
  // before screening anything.
  bench::check_step_runnable(step, memory, common.check);
  const auto v = rt::versions();
  const nlohmann::json versions = {{"cuda_driver", v.driver},
                                   {"cuda_runtime", v.runtime},
                                   {"nccl", v.nccl},
                                   {"cublaslt", v.cublas}};
  const std::string key = workload_cache_key(devices, versions, ngpus, step, common, o.space);
  if (o.use_cache) {
    const std::string dir = resolve_cache_dir(o.cache_dir);
    res.cache_file = (fs::path(dir) / ("tune-workload-" + key + ".json")).string();
    if (!o.retune) {
      const auto got = read_cache(res.cache_file, key, res.plan, res.table);
      if (got == CacheRead::Hit) {
        res.from_cache = true;
        return res;
      }
      if (got != CacheRead::Absent && talk)
        progress << "# tune: ignoring an unreadable cache entry " << res.cache_file << std::endl;
    }
  }

  // Round 1: every candidate, a few samples each, unverified (the final round verifies).
  RowSpec predicted;
  std::size_t space_size = 0;
  std::vector<std::string> space_notes;
  // The zero-CTA policy is a candidate where the step has an all-gather or all-to-all: every
  // round's executor then takes its arena from ncclMemAlloc and runs all-to-alls as
  // ncclAlltoAll (bench::run_step decides that from the options' policies, on every rank alike).
  const bool copy_engine = workload::has_collective(step, model::Collective::AllGather) ||
                           workload::has_collective(step, model::Collective::AllToAll);
  const std::vector<int> policies =
      cta_policies_to_try(common.row_cta_policies, copy_engine, common.nccl_cta_policy);
  bench::StepOptions screen_opts = o.step;
  screen_opts.common.row_cta_policies = policies;
  screen_opts.common.iters = o.screen_iters;
  screen_opts.common.warmup = std::min(common.warmup, 2);
  screen_opts.common.check = false;
  if (talk)
    progress << "# tune: workload " << step.name << " on " << ngpus << " GPU(s), "
             << step.ops.size() << " ops; screening the search space (" << o.screen_iters
             << " samples each)..." << std::endl;
  const auto screen = bench::run_step(
      screen_opts,
      [&](const bench::StepDeviceContext& d, std::vector<std::string>& notes) {
        WorkloadSpaceInput in;
        in.limits = d.limits;
        in.kernels = d.kernels;
        in.copy_engine = copy_engine;
        in.run_policy = common.nccl_cta_policy;
        in.cta_policies = policies;
        const auto space = build_workload_space(in, o.space, &notes);
        predicted = predict_workload(in);
        const auto rows = screening_rows(space, predicted);
        space_size = rows.size() - 1;
        space_notes = notes;
        return rows;
      },
      progress);
  const double screen_s = seconds_since(t0);
  if (talk)
    progress << "# tune: screened " << space_size << " candidates in "
             << fmt::format("{:.1f}", screen_s) << " s" << std::endl;

  // Round 2: the best few, the references and the model's default, side by side.
  std::vector<const bench::StepRow*> ranked;
  for (const auto& r : screen.rows)
    if (r.spec.mode != Mode::Seq) ranked.push_back(&r);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](auto* a, auto* b) { return a->t.median() < b->t.median(); });
  std::vector<RowSpec> finalists = {{Mode::Seq}, {Mode::Concurrent}, {Mode::Priority}};
  for (std::size_t i = 0;
       i < ranked.size() && finalists.size() < 3 + static_cast<std::size_t>(o.top); ++i)
    add_unique(finalists, ranked[i]->spec);
  // The paper's controls alone: the best shape and shape+priority rows on NCCL's own CTAs.
  for (Mode m : {Mode::Shape, Mode::ShapePriority})
    for (const auto* r : ranked)
      if (r->spec.mode == m && r->spec.default_variant()) {
        add_unique(finalists, r->spec);
        break;
      }
  add_unique(finalists, predicted);
  // The best that `cco run` can apply whole: the plan hands it to programs (tuning.applied).
  for (const auto* r : ranked)
    if (run_applicable(r->spec)) {
      add_unique(finalists, r->spec);
      break;
    }

  // The budget: the final round's samples shrink to what the time left holds, estimated from the
  // screened times (every op alone, seq and each finalist per iteration), never below 5.
  bench::StepOptions final_opts = o.step;
  final_opts.common.row_cta_policies = policies;
  const double per_iter_s = 1.25e-6 * iteration_us(screen, finalists);
  const double left = o.budget_s - screen_s;
  if (per_iter_s > 0 && (common.warmup + common.iters) * per_iter_s > left) {
    const int fit = static_cast<int>(left / per_iter_s) - common.warmup;
    final_opts.common.iters = std::max(std::min(fit, common.iters), std::min(5, common.iters));
    if (talk)
      progress << "# tune: " << fmt::format("{:.0f}", std::max(0.0, left))
               << " s of the budget left; final round with " << final_opts.common.iters
               << " samples instead of " << common.iters << std::endl;
  }
  if (talk)
    progress << "# tune: final round, " << finalists.size() - 1 << " candidates x "
             << final_opts.common.iters << " samples" << (common.check ? ", verified" : "")
             << std::endl;
  const auto fin = bench::run_step(
      final_opts,
      [&](const bench::StepDeviceContext&, std::vector<std::string>&) { return finalists; },
      progress);
  if (fin.wrong() > 0) {
    std::string ops;
    for (const auto& op : fin.ops)
      if (op.wrong > 0) ops += (ops.empty() ? "" : ", ") + op.id;
    throw std::runtime_error(std::to_string(fin.wrong()) +
                             " wrong elements in the final round (ops: " + ops +
                             "); no plan written");
  }

  const auto tried = tried_from_step(fin, predicted);
  const auto best = pick_best(tried);
  res.plan = workload_plan_json(fin, tried, best, key);
  for (const auto& n : space_notes) res.plan["tuning"]["notes"].push_back(n);
  for (const auto& n : fin.notes) res.plan["tuning"]["notes"].push_back(n);
  res.plan["tuning"]["search"] = {{"space_size", space_size},
                                  {"finalists", finalists.size() - 1},
                                  {"screen_iters", o.screen_iters},
                                  {"final_iters", final_opts.common.iters},
                                  {"seconds", seconds_since(t0)}};
  res.table = format_step_tried(tried, best, fin.t_seq.median(), fin.t_ideal.median());
  if (o.use_cache) write_cache(res.cache_file, key, res.plan, res.table);
  return res;
}

}  // namespace cco::tune
