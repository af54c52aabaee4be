#include "tune/tune.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <ostream>

#include "bench/runner.hpp"
#include "bootstrap/bootstrap.hpp"
#include "model/cta_policy.hpp"
#include "runtime/device.hpp"
#include "tune/cache.hpp"
#include "tune/search.hpp"

namespace cco::tune {

namespace fs = std::filesystem;
using bench::Mode;
using bench::RowSpec;

nlohmann::json devices_json(int ngpus, int64_t* min_memory) {
  nlohmann::json devices = nlohmann::json::array();
  if (min_memory) *min_memory = INT64_MAX;
  for (int i = 0; i < ngpus; ++i) {
    const auto info = rt::device_info(i);
    devices.push_back({{"name", info.name}, {"sms", info.limits.sm_count}});
    if (min_memory) *min_memory = std::min(*min_memory, info.total_mem);
  }
  return devices;
}

nlohmann::json versions_json() {
  const auto v = rt::versions();
  return {{"cuda_driver", v.driver}, {"cuda_runtime", v.runtime}, {"nccl", v.nccl},
          {"cublaslt", v.cublas}};
}

namespace {

// Registrations a row may switch to: those named by --registers, else every one.
std::vector<int> registrations_to_try(std::vector<int> named) {
  if (named.empty())
    for (auto r : {model::CommRegister::None, model::CommRegister::Buffer, model::CommRegister::Window})
      named.push_back(static_cast<int>(r));
  return named;
}

SpaceInput space_input(const bench::DeviceContext& d, const bench::Options& o,
                       const std::vector<int>& registrations) {
  SpaceInput in;
  in.limits = d.limits;
  in.shapeable = d.shapeable;
  in.footprint = d.footprint;
  in.natural_bps = d.natural_bps;
  in.vendor_gemm = o.compute == model::ComputeKind::CublasLt;
  if (o.nccl_max_ctas) in.nccl_ctas = *o.nccl_max_ctas;
  in.run_reg = static_cast<int>(o.nccl_register);
  in.registrations = registrations;
  in.run_policy = o.nccl_cta_policy;
  const int window = static_cast<int>(model::CommRegister::Window);
  // All-reduce: zero runs it split (reduce-scatter on SMs, all-gather on the copy engines).
  in.copy_engine = (model::copy_engine_collective(o.coll) || o.coll == model::Collective::AllReduce) &&
                   (in.run_reg == window ||
                    std::find(registrations.begin(), registrations.end(), window) != registrations.end());
  return in;
}

bool best_spec_on_edge(const RowSpec& best, const std::vector<Screened>& screened) {
  if (!best.controls.gemm_sms || *best.controls.gemm_sms <= 0) return false;
  for (const auto& t : screened)
    if (t.spec.controls.gemm_sms && *t.spec.controls.gemm_sms > 0 && *t.spec.controls.gemm_sms < *best.controls.gemm_sms) return false;
  return true;
}

// A choice on the edge of the searched budgets says the space should go further.
void note_budget_edge(const RowSpec& chosen, const std::vector<Screened>& screened,
                      nlohmann::json& plan, std::ostream& progress) {
  if (!best_spec_on_edge(chosen, screened)) return;
  plan["tuning"]["notes"].push_back(
      "the chosen SM budget is the smallest searched: try lower --sm-budgets");
  progress << "# tune: the chosen SM budget is the smallest searched; lower --sm-budgets may do "
              "better"
           << std::endl;
}

}  // namespace

std::string format_tried(const std::vector<Tried>& tried, std::size_t best, double t_seq, double t_ideal) {
  const auto order = fastest_first(tried);
  std::string s = fmt::format("# T_seq {:.1f} us, T_ideal {:.1f} us (ideal reduction {:.1f}%)\n", t_seq,
                              t_ideal, 100 * (1 - t_ideal / t_seq));
  s += fmt::format("#{:>3} {:<36} {:>4} {:>7} {:>9} {:>7} {:>7} {:>6} {:>9} {:>9} {:>7} {:>6}  {}\n", "",
                   "candidate", "bps", "pad", "time(us)", "spread", "reduct", "eff", "C_own", "M_own",
                   "eff_own", "E_best", "");
  int rank = 0;
  for (auto i : order) {
    const auto& t = tried[i];
    std::string mark = i == best ? "<- chosen" : "";
    if (t.predicted) mark += mark.empty() ? "(model default)" : " (model default)";
    s += fmt::format(" {:>3} {:<36} {:>4} {:>7} {:>9.1f} {:>6.1f}% {:>6.1f}% {:>6.2f} {:>9.1f} {:>9.1f} {:>7.2f} {:>6.2f}  {}\n",
                     ++rank, t.spec.label(), t.blocks_per_sm > 0 ? std::to_string(t.blocks_per_sm) : "-",
                     t.pad > 0 ? model::format_bytes(t.pad) : "0", t.t_us,
                     t.t_us > 0 ? 100 * (t.p75_us - t.p25_us) / t.t_us : 0.0, 100 * t.reduction,
                     t.efficiency, t.comp_alone_us, t.comm_alone_us, t.own_efficiency(),
                     t.efficiency_best, mark);
  }
  return s;
}

TuneResult run_tune(const TuneOptions& o, std::ostream& progress) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  TuneResult res;
  if (o.bench.min_bytes != o.bench.max_bytes)
    throw bench::UsageError("cco tune tunes one collective size: give -b only (or -e equal to -b)");

  // The cache key needs the devices and versions, known before anything is measured.
  std::string why;
  const int ndev = rt::device_count(&why);
  if (ndev == 0) throw bench::NoGpu("cco tune needs a CUDA GPU and none is usable here (" + why + ")");
  const int ngpus = o.bench.ngpus == 0 ? ndev : std::min(o.bench.ngpus, ndev);
  const std::string key = cache_key(devices_json(ngpus), versions_json(), ngpus, o.bench, o.space);
  // One process per rank: every rank must take the same path, and their caches may differ
  // (other nodes), so only threads mode reads or writes the cache; rank 0 alone writes files.
  const auto launch = boot::parse_launch_env(boot::current_environment());
  const bool multi_process = o.bench.bootstrap == "env" || o.bench.bootstrap == "mpi" ||
                             (o.bench.bootstrap == "auto" && launch && launch->world_size > 1);
  res.writer = !multi_process || (launch && launch->rank == 0);
  const bool use_cache = o.use_cache && !multi_process;
  if (o.use_cache && multi_process)
    progress << "# tune: the cache is not used with one process per rank" << std::endl;
  std::string cache_dir;
  if (use_cache) {
    cache_dir = resolve_cache_dir(o.cache_dir);
    res.cache_file = (fs::path(cache_dir) / ("tune-" + key + ".json")).string();
    res.from_cache = cache_hit(res.cache_file, key, o.retune, res.plan, res.table, &progress);
    if (res.from_cache) return res;
  }

  // The search (tune/search.hpp) on this pair: each round a bench::run of its rows.
  const std::vector<int> registrations = registrations_to_try(o.space.registers);
  auto screen_opts = o.bench;
  screen_opts.iters = o.screen_iters;
  screen_opts.warmup = 2;
  screen_opts.quiet = true;
  screen_opts.check = false;  // the final round verifies the chosen few
  SpaceInput space_in;  // rank 0's, from the first round (the only rank that chooses rows)
  Screening screening;
  auto screen_rows = [&](const bench::RowProvider& rows) {
    const auto rep = bench::run(
        screen_opts, rows, [](const bench::Report&, std::size_t) {}, progress);
    // An iteration: each part alone and seq (about 2 T_seq), then each row overlapped and, with
    // budgets of its own, its parts alone again (at most one T_seq more).
    if (!rep.rows.empty()) screening.row_us = rep.rows.front().t_seq.median();
    screening.fixed_us = 2 * screening.row_us;
    std::vector<Screened> out;
    for (const auto& t : tried_from(rep, screening.predicted)) out.push_back({t.spec, t.t_us});
    return out;
  };
  auto space_of = [&](const bench::DeviceContext& d, std::vector<std::string>& notes) {
    space_in = space_input(d, o.bench, registrations);
    return std::pair{build_space(space_in, o.space, &notes), predict(space_in)};
  };
  SearchSubject subject = screening_subject(screening, screen_rows, space_of, t0);
  subject.neighbours = [&](const RowSpec& r) { return neighbours(space_in, r); };
  SearchOptions so = search_options(o.top, o.space.refine, o.space.rounds, o.budget_s,
                                    o.bench.warmup, o.bench.iters, o.screen_iters);
  so.same_path = multi_process;
  const SearchResult found = search(subject, so, &progress);
  const auto& finalists = found.finalists;

  auto final_opts = o.bench;
  final_opts.quiet = true;
  final_opts.iters = found.final_iters;
  progress << "# tune: final round, " << finalists.size() - 1 << " candidates x " << final_opts.iters
           << " samples, verified" << std::endl;
  const auto fin = bench::run(
      final_opts,
      [&](const bench::DeviceContext&, std::vector<std::string>&) { return finalists; },
      [](const bench::Report&, std::size_t) {}, progress);
  // Under a launcher only rank 0's report holds the rows: the others are done.
  if (!res.writer) return res;
  unsigned long long wrong = 0;
  for (const auto& r : fin.rows) wrong += r.wrong;
  if (wrong > 0)
    throw std::runtime_error(std::to_string(wrong) + " wrong elements under overlap in the final round");

  const auto tried = tried_from(fin, screening.predicted);
  const auto best = pick_best(tried);
  res.plan = plan_json(fin, tried, best, key);
  for (const auto& n : screening.notes) res.plan["tuning"]["notes"].push_back(n);
  res.plan["tuning"]["search"] =
      search_json(found, o.screen_iters, std::chrono::duration<double>(Clock::now() - t0).count());
  note_budget_edge(tried[best].spec, found.screened, res.plan, progress);
  const auto& seq_row = fin.rows.front();
  res.table = format_tried(tried, best, seq_row.t_seq.median(), model::ideal(seq_row.times()));
  if (use_cache) write_cache(res.cache_file, key, res.plan, res.table);
  return res;
}

}  // namespace cco::tune
