// Writer -> reader, per result format (issue 35 item 2): a result built with the writer's own
// code (cco bench's `to_json`, the step bench's `step_report_json`, the tuners' `plan_json` and
// `workload_plan_json`), written as text, read back with the reader `cco report` uses
// (`sweep_from_json`, `step_from_json`, `tune_from_json`), and every field the reader exposes
// checked against what was written. A field renamed on either side fails here (the reader falls
// back to NaN, 0 or "" for a field it does not find). GPU-free.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/report.hpp"
#include "bench/workload_bench.hpp"
#include "model/limits.hpp"
#include "model/metrics.hpp"
#include "report/results.hpp"
#include "report/sweep.hpp"
#include "tune/space.hpp"
#include "tune/workload_space.hpp"

namespace {

using namespace cco;
using bench::Mode;

/// Equal, or both NaN (a figure the writer records as null comes back NaN).
::testing::AssertionResult same(double written, double read) {
  if (std::isnan(written) && std::isnan(read)) return ::testing::AssertionSuccess();
  if (written == read) return ::testing::AssertionSuccess();
  const double tol = 1e-12 * std::max(1.0, std::fabs(written));
  if (std::fabs(written - read) <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "written " << written << ", read " << read;
}

/// A figure the writer records only `where` (NaN elsewhere, as the reader gives it).
double only_if(bool where, double v) { return where ? v : std::nan(""); }

/// As a result goes to disk and comes back: text, then parsed.
nlohmann::json through_text(const nlohmann::json& j) {
  return nlohmann::json::parse(bench::json_text(j));
}

// ------------------------------------------------------------------------------------------
// ccoverlap.bench
// ------------------------------------------------------------------------------------------

bench::Report bench_report() {
  bench::Report r;
  r.argv = {"bench", "-g", "2", "-d", "all", "--in-place", "1"};
  r.date = "2026-11-22T00:00:00Z";
  r.host = "testhost";
  r.nranks = 2;
  r.versions = {{"nccl", "2.28.9"}};
  r.devices = nlohmann::json::array({{{"rank", 0}, {"device", 0}, {"name", "GPU A"}, {"sms", 132}},
                                     {{"rank", 1}, {"device", 1}, {"name", "GPU B"}, {"sms", 132}}});
  r.compute = "builtin bfloat16 4096x4096x4096 x4";
  r.collective = "allreduce";
  r.dtype = "float";
  r.redop = "sum";
  r.in_place = "measured";
  r.notes = {"a note"};
  auto base = [](bench::Row& row, int64_t bytes) {
    row.bytes = bytes;
    row.count = bytes / 4;
    row.t_comp.samples = {1000, 990, 1010, 1003};
    row.t_comm.samples = {600, 610, 590};
    row.t_seq.samples = {1600, 1590, 1610};
    row.t_comp_alone = row.t_comp;
    row.t_comm_alone = row.t_comm;
    row.flops = 1e12;
    row.comm_busbw_factor = 1.0;
    row.checked = true;
  };
  bench::Row seq;
  base(seq, 256 << 20);
  seq.spec.mode = Mode::Seq;
  seq.t = seq.t_seq;
  seq.t_comp_part.samples = {1000};
  seq.t_comm_part.samples = {1600};
  seq.blocks_per_sm = 4;
  seq.in_place = true;
  seq.t_comm_in_place.samples = {580, 590, 600};
  bench::Row conc;
  base(conc, 256 << 20);
  conc.spec.mode = Mode::Concurrent;
  conc.t.samples = {1300, 1290, 1310, 1350};
  conc.t_comp_part.samples = {1250};
  conc.t_comm_part.samples = {1280};
  conc.blocks_per_sm = 4;
  conc.in_place = true;
  conc.t_comm_in_place = seq.t_comm_in_place;
  bench::Row shp;
  base(shp, 256 << 20);
  shp.spec.mode = Mode::ShapePriority;
  shp.spec.set_k(2);
  shp.spec.controls.nccl_ctas = 16;
  shp.spec.controls.cta_policy = model::CtaPolicy::Efficiency;
  shp.cta_policy = model::CtaPolicy::Efficiency;
  shp.pad = 49152;
  shp.blocks_per_sm = 2;
  shp.t.samples = {1100, 1090, 1110};
  shp.t_comp_part.samples = {1100};
  shp.t_comm_part.samples = {800};
  shp.t_comm_alone.samples = {500, 500};
  shp.t_mem_us = 1200;  // above max(C, M): it is T_ideal
  // A second type, a second size: the row's own dtype, no in-place run.
  bench::Row half;
  base(half, 64 << 20);
  half.dtype = "half";
  half.spec.mode = Mode::Priority;
  half.t.samples = {1200, 1210};
  half.t_comp_part.samples = {1150};
  half.t_comm_part.samples = {900};
  half.wrong = 3;
  r.rows = {seq, conc, shp, half};
  return r;
}

TEST(ResultRoundTrip, BenchEveryFieldTheReaderExposes) {
  const auto rep = bench_report();
  const auto s = report::sweep_from_json(through_text(bench::to_json(rep)), "b.json");
  EXPECT_EQ(s.kind, report::ResultKind::Bench);
  EXPECT_EQ(s.source, "b.json");
  EXPECT_EQ(s.compute, rep.compute);
  EXPECT_EQ(s.collective, rep.collective);
  EXPECT_EQ(s.datatype, rep.dtype);
  EXPECT_EQ(s.date, rep.date);
  EXPECT_EQ(s.device, "GPU A");  // the first rank's
  EXPECT_EQ(s.nranks, rep.nranks);
  // What a bench result does not carry stays as the step and tune readers' "not recorded".
  EXPECT_TRUE(s.workload.empty() && s.params.empty() && s.choice.empty() && s.applied.empty());
  EXPECT_TRUE(s.notes.empty());
  EXPECT_TRUE(std::isnan(s.t_seq_us) && std::isnan(s.t_ideal_us));
  ASSERT_EQ(s.rows.size(), rep.rows.size());
  for (std::size_t i = 0; i < rep.rows.size(); ++i) {
    SCOPED_TRACE("row " + std::to_string(i));
    const auto& w = rep.rows[i];
    const auto& g = s.rows[i];
    const auto t = w.times();
    EXPECT_EQ(g.bytes, w.bytes);
    EXPECT_EQ(g.mode, bench::to_string(w.spec.mode));
    EXPECT_EQ(g.target_k, w.spec.k());
    EXPECT_EQ(g.pad, w.pad);
    EXPECT_EQ(g.blocks_per_sm, w.blocks_per_sm);
    EXPECT_TRUE(same(w.t.median(), g.t_us));
    EXPECT_TRUE(same(w.t.summary().p25, g.t_p25_us));
    EXPECT_TRUE(same(w.t.summary().p75, g.t_p75_us));
    EXPECT_TRUE(same(w.t_seq.median(), g.t_seq_us));
    EXPECT_TRUE(same(w.t_comp.median(), g.t_comp_us));
    EXPECT_TRUE(same(w.t_comm.median(), g.t_comm_us));
    EXPECT_TRUE(same(model::ideal(t), g.t_ideal_us));
    EXPECT_TRUE(same(model::overlap_efficiency(t), g.efficiency));
    EXPECT_TRUE(same(model::reduction(t), g.reduction));
    EXPECT_TRUE(same(bench::efficiency_best(w, rep), g.efficiency_best));
    EXPECT_EQ(g.label, w.spec.label());
    EXPECT_EQ(g.dtype, bench::row_dtype(w, rep));
    EXPECT_EQ(g.in_place, w.in_place);
    EXPECT_TRUE(same(only_if(w.in_place, w.t_comm_in_place.median()), g.t_comm_in_place_us));
    const double bytes = static_cast<double>(w.bytes);
    EXPECT_TRUE(same(only_if(w.in_place, model::algbw_gbps(bytes, w.t_comm.median() * 1e-6) *
                                            w.comm_busbw_factor),
                     g.comm_busbw_gbps));
    EXPECT_TRUE(same(only_if(w.in_place, model::algbw_gbps(bytes, w.t_comm_in_place.median() * 1e-6) *
                                            w.comm_busbw_factor),
                     g.in_place_busbw_gbps));
    // Fields of step and tune rows: not in a bench result.
    EXPECT_TRUE(std::isnan(g.of_ideal));
    EXPECT_EQ(g.wrong, -1);
  }
  // The shaped row's T_ideal is the memory floor, not max(C, M): the reader takes the writer's.
  EXPECT_DOUBLE_EQ(s.rows[2].t_ideal_us, 1200);
}

// ------------------------------------------------------------------------------------------
// ccoverlap.step_bench
// ------------------------------------------------------------------------------------------

const char* kDoc = R"({
  "schema": "ccoverlap.workload", "schema_version": "1.0.0", "name": "tiny",
  "parameters": {"layers": 2, "gemm": "builtin"},
  "ops": [
    {"repeat": "${layers}", "as": "l", "items": [
      {"id": "L${l}.g", "kind": "gemm", "m": 64, "n": 64, "k": 64, "engine": "${gemm}"},
      {"id": "L${l}.ar", "kind": "allreduce", "bytes": 1024, "after": ["L${l}.g"]},
      {"id": "L${l}.n", "kind": "norm", "bytes": 4096}
    ]}
  ]
})";

bench::StepReport step_report() {
  bench::StepReport r;
  workload::StepLoadOptions lo;
  lo.nranks = 2;
  lo.overrides = {{"layers", "3"}};
  r.step = workload::parse_step(kDoc, "tiny.json", lo);
  r.argv = {"bench", "--workload", "tiny.json"};
  r.date = "2026-11-22T00:00:00Z";
  r.host = "h";
  r.nranks = 2;
  r.checked = true;
  r.versions = {{"nccl", "2.28.9"}, {"cuda_runtime", "13.0"}};
  r.devices = nlohmann::json::array({{{"rank", 0}, {"device", 0}, {"name", "NVIDIA H200"}, {"sms", 132}}});
  r.t_comp.samples = {80, 81, 79};
  r.t_comm.samples = {40, 41};
  r.t_seq.samples = {120, 121, 119};
  r.t_ideal.samples = {100, 100};
  bench::StepRow seq;
  seq.spec.mode = Mode::Seq;
  seq.t = r.t_seq;
  bench::StepRow conc;
  conc.spec.mode = Mode::Concurrent;
  conc.t.samples = {110, 109, 111};
  bench::StepRow prio;
  prio.spec.mode = Mode::Priority;
  prio.t.samples = {105, 105, 105};
  bench::StepRow best;
  best.spec.mode = Mode::ShapePriority;
  best.spec.set_k(2);
  best.spec.controls.nccl_ctas = 16;
  best.t.samples = {96, 100, 104, 101};
  best.shaping = "membound +40K (2/SM of 8)";
  best.wrong = 3;
  r.rows = {seq, conc, prio, best};
  r.notes = {"a note", "another"};
  r.kernels = {{"membound", {256, 19, 0, 0}, 8}};
  return r;
}

/// The step's parameters as the step and tune readers give them: name and value, sorted by name.
std::vector<std::pair<std::string, std::string>> params_of(const workload::Step& step) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& p : step.params)
    out.emplace_back(p.name, p.is_string ? p.text : nlohmann::json(p.value).dump());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ResultRoundTrip, StepBenchEveryFieldTheReaderExposes) {
  const auto rep = step_report();
  const auto s = report::step_from_json(through_text(bench::step_report_json(rep)), "s.json");
  EXPECT_EQ(s.kind, report::ResultKind::Step);
  EXPECT_EQ(s.source, "s.json");
  EXPECT_EQ(s.date, rep.date);
  EXPECT_EQ(s.nranks, rep.nranks);
  EXPECT_EQ(s.device, "NVIDIA H200");
  EXPECT_EQ(s.workload, "tiny (tiny.json)");
  EXPECT_EQ(s.params, params_of(rep.step));
  EXPECT_EQ(s.notes, rep.notes);
  EXPECT_TRUE(same(rep.t_seq.median(), s.t_seq_us));
  EXPECT_TRUE(same(rep.t_ideal.median(), s.t_ideal_us));
  EXPECT_TRUE(same(rep.t_comp.median(), s.t_comp_us));
  EXPECT_TRUE(same(rep.t_comm.median(), s.t_comm_us));
  EXPECT_TRUE(s.compute.empty() && s.collective.empty() && s.choice.empty() && s.applied.empty());
  const double ts = rep.t_seq.median(), ti = rep.t_ideal.median();
  ASSERT_EQ(s.rows.size(), rep.rows.size());
  for (std::size_t i = 0; i < rep.rows.size(); ++i) {
    SCOPED_TRACE("row " + std::to_string(i));
    const auto& w = rep.rows[i];
    const auto& g = s.rows[i];
    const auto t = rep.times(w);
    EXPECT_EQ(g.label, w.spec.label());
    EXPECT_EQ(g.mode, bench::to_string(w.spec.mode));
    EXPECT_EQ(g.target_k, w.spec.k());
    EXPECT_TRUE(same(w.t.median(), g.t_us));
    EXPECT_TRUE(same(w.t.summary().p25, g.t_p25_us));
    EXPECT_TRUE(same(w.t.summary().p75, g.t_p75_us));
    EXPECT_TRUE(same(model::reduction(t), g.reduction));
    EXPECT_TRUE(same(model::overlap_efficiency(t), g.efficiency));
    EXPECT_TRUE(same((ts - t.t) / (ts - ti), g.of_ideal));
    EXPECT_TRUE(std::isnan(g.efficiency_best));  // a step records none
    EXPECT_EQ(g.wrong, static_cast<int64_t>(w.wrong));
    // The step's own figures, in every row.
    EXPECT_TRUE(same(ts, g.t_seq_us));
    EXPECT_TRUE(same(ti, g.t_ideal_us));
    EXPECT_TRUE(same(rep.t_comp.median(), g.t_comp_us));
    EXPECT_TRUE(same(rep.t_comm.median(), g.t_comm_us));
    EXPECT_EQ(g.bytes, 0);
  }
}

// ------------------------------------------------------------------------------------------
// A tune result: ccoverlap.plan with a "tuning" section (pairs and steps)
// ------------------------------------------------------------------------------------------

TEST(ResultRoundTrip, PairTuneEveryFieldTheReaderExposes) {
  auto rep = bench_report();
  rep.rows.pop_back();  // one size, one type, as a pair tune's final round
  bench::Options o;
  rep.config = bench::options_json(o);
  const bench::RowSpec predicted{Mode::Concurrent};
  const auto tried = tune::tried_from(rep, predicted);
  const std::size_t best = tune::pick_best(tried);
  const auto j = tune::plan_json(rep, tried, best, "0123456789abcdef");
  const auto s = report::tune_from_json(through_text(j), "t.json");
  EXPECT_EQ(s.kind, report::ResultKind::Tune);
  EXPECT_EQ(s.date, rep.date);
  EXPECT_EQ(s.device, "GPU A");
  EXPECT_EQ(s.nranks, rep.nranks);
  const auto& cfg = rep.config;
  EXPECT_EQ(s.compute, cfg.at("compute").get<std::string>());
  EXPECT_EQ(s.collective, cfg.at("collective").get<std::string>());
  EXPECT_EQ(s.datatype, cfg.at("datatype").get<std::string>());
  EXPECT_EQ(s.workload, s.compute + " || " + s.collective + " " + s.datatype);
  // What ran (the options less how it was measured and what was searched), each as written.
  ASSERT_FALSE(s.params.empty());
  for (const auto& [k, v] : s.params) {
    ASSERT_TRUE(cfg.contains(k)) << k;
    EXPECT_EQ(v, cfg[k].is_string() ? cfg[k].get<std::string>() : cfg[k].dump()) << k;
  }
  EXPECT_EQ(s.choice, tried[best].spec.label());
  EXPECT_EQ(s.applied, tried[tune::applied_index(tried, best)].spec.label());
  // A pair tune records no T_seq, T_ideal, T_comp or T_comm of its own.
  EXPECT_TRUE(std::isnan(s.t_ideal_us) && std::isnan(s.t_comp_us) && std::isnan(s.t_comm_us));
  ASSERT_EQ(s.rows.size(), tried.size());
  for (std::size_t i = 0; i < tried.size(); ++i) {
    SCOPED_TRACE("row " + std::to_string(i));
    const auto& w = tried[i];
    const auto& g = s.rows[i];
    EXPECT_EQ(g.label, w.spec.label());
    EXPECT_EQ(g.mode, bench::to_string(w.spec.mode));  // the label's first word
    EXPECT_EQ(g.target_k, w.blocks_per_sm);
    EXPECT_TRUE(same(w.t_us, g.t_us));
    EXPECT_TRUE(same(w.p25_us, g.t_p25_us));
    EXPECT_TRUE(same(w.p75_us, g.t_p75_us));
    EXPECT_TRUE(same(w.reduction, g.reduction));
    EXPECT_TRUE(same(w.efficiency, g.efficiency));
    EXPECT_TRUE(same(w.efficiency_best, g.efficiency_best));
    EXPECT_TRUE(same(w.comp_alone_us, g.t_comp_us));
    EXPECT_TRUE(same(w.comm_alone_us, g.t_comm_us));
    EXPECT_TRUE(same(std::max(w.comp_alone_us, w.comm_alone_us), g.t_ideal_us));
    EXPECT_TRUE(same(w.t_us / (1 - w.reduction), g.t_seq_us));
    EXPECT_TRUE(std::isnan(g.of_ideal));
    EXPECT_EQ(g.wrong, -1);
  }
  EXPECT_TRUE(same(s.rows.front().t_seq_us, s.t_seq_us));
}

TEST(ResultRoundTrip, StepTuneEveryFieldTheReaderExposes) {
  const auto rep = step_report();
  tune::WorkloadSpaceInput in;
  in.limits = model::find_architecture("h200");
  const auto tried = tune::tried_from_step(rep, tune::predict_workload(in));
  const std::size_t best = tune::pick_best(tried);
  const auto j = tune::workload_plan_json(rep, tried, best, "0123456789abcdef");
  const auto s = report::tune_from_json(through_text(j), "t.json");
  EXPECT_EQ(s.kind, report::ResultKind::Tune);
  EXPECT_EQ(s.date, rep.date);
  EXPECT_EQ(s.device, "NVIDIA H200");
  EXPECT_EQ(s.nranks, rep.nranks);
  EXPECT_EQ(s.workload, "tiny (tiny.json)");
  EXPECT_EQ(s.params, params_of(rep.step));
  EXPECT_TRUE(s.compute.empty() && s.collective.empty());
  EXPECT_EQ(s.choice, tried[best].spec.label());
  EXPECT_EQ(s.applied, tried[tune::applied_index(tried, best)].spec.label());
  EXPECT_TRUE(same(rep.t_seq.median(), s.t_seq_us));
  EXPECT_TRUE(same(rep.t_ideal.median(), s.t_ideal_us));
  EXPECT_TRUE(same(rep.t_comp.median(), s.t_comp_us));
  EXPECT_TRUE(same(rep.t_comm.median(), s.t_comm_us));
  ASSERT_EQ(s.rows.size(), tried.size());
  for (std::size_t i = 0; i < tried.size(); ++i) {
    SCOPED_TRACE("row " + std::to_string(i));
    const auto& w = tried[i];
    const auto& g = s.rows[i];
    EXPECT_EQ(g.label, w.spec.label());
    EXPECT_EQ(g.mode, bench::to_string(w.spec.mode));
    EXPECT_EQ(g.target_k, bench::is_shape(w.spec.mode) ? w.spec.k() : 0);
    EXPECT_TRUE(same(w.t_us, g.t_us));
    EXPECT_TRUE(same(w.p25_us, g.t_p25_us));
    EXPECT_TRUE(same(w.p75_us, g.t_p75_us));
    EXPECT_TRUE(same(w.reduction, g.reduction));
    EXPECT_TRUE(same(w.efficiency, g.efficiency));
    EXPECT_TRUE(same(w.of_ideal, g.of_ideal));
    EXPECT_TRUE(std::isnan(g.efficiency_best));  // a step tune records none
    EXPECT_EQ(g.wrong, static_cast<int64_t>(w.wrong));
    EXPECT_TRUE(same(rep.t_seq.median(), g.t_seq_us));
    EXPECT_TRUE(same(rep.t_ideal.median(), g.t_ideal_us));
    EXPECT_TRUE(same(rep.t_comp.median(), g.t_comp_us));
    EXPECT_TRUE(same(rep.t_comm.median(), g.t_comm_us));
  }
}

}  // namespace
