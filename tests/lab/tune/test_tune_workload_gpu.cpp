// cco tune --workload on GPUs: step bench rows with their own NCCL CTA count (and green
// partition) verified side by side with the run's own; a tiny shipped workload tuned into a valid
// plan whose choice, measured again in a fresh run beside concurrent, is not slower
// (tests/lab/tune/remeasure.hpp), then answered from the cache.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "bench/workload_bench.hpp"
#include "plan/plan.hpp"
#include "runtime/check.hpp"
#include "runtime/device.hpp"
#include "remeasure.hpp"
#include "tune/tune_workload.hpp"

namespace {

using namespace cco;
using bench::Mode;
using bench::RowSpec;

std::string ngpus() {
  return std::to_string(std::min(2, rt::device_count()));
}

/// A small DDP step: one layer of 7B-like structure shrunk, cuBLASLt GEMMs, memory-bound ops of
/// ours (so shape targets exist) and bucketed all-reduces.
std::vector<std::string> tiny_ddp(std::vector<std::string> extra) {
  std::vector<std::string> a = {
      "bench",       "--workload", std::string(CCO_WORKLOADS_DIR) + "/ddp_llama7b.json",
      "--param",     "layers=1",   "--param",
      "seq_len=512", "--param",    "hidden=1024",
      "--param",     "ffn=2048",   "--param",
      "bucket_mb=2", "-g",         ngpus()};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

RowSpec row(Mode m, int k = 0, int ctas = -1, int green = -1) {
  RowSpec r;
  r.mode = m;
  r.set_k(k);
  r.controls.nccl_ctas = bench::budget_from_number(ctas);
  r.controls.green_sms = bench::budget_from_number(green);
  return r;
}

}  // namespace

TEST(StepBudgetRows, OwnCommunicatorPerCtaCountVerified) {
  const auto so = bench::parse_step_options(tiny_ddp({"-n", "4", "-w", "1", "-q"}));
  const std::vector<RowSpec> rows = {row(Mode::Seq), row(Mode::Concurrent),
                                     row(Mode::Concurrent, 0, 8), row(Mode::Priority, 0, 16),
                                     row(Mode::ShapePriority, 2, 8)};
  std::ostringstream progress;
  int kernels = -1;
  const auto rep = bench::run_step(
      so,
      [&](const bench::StepDeviceContext& d, std::vector<std::string>&) {
        kernels = static_cast<int>(d.kernels.size());
        return rows;
      },
      progress);
  EXPECT_GE(kernels, 1) << "the memory-bound ops are ours";
  ASSERT_EQ(rep.rows.size(), rows.size());
  EXPECT_EQ(rep.kernels.size(), static_cast<std::size_t>(kernels));
  const std::vector<std::string> labels = {"seq", "concurrent", "concurrent ctas=8",
                                           "priority ctas=16", "shape+priority k=2 ctas=8"};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rep.rows[i].spec.label(), labels[i]);
    EXPECT_EQ(rep.rows[i].wrong, 0u) << labels[i];
    EXPECT_EQ(rep.rows[i].t.samples.size(), 4u) << labels[i];
    EXPECT_GT(rep.rows[i].t.median(), 0.0) << labels[i];
  }
  EXPECT_FALSE(rep.rows[4].shaping.empty());
  EXPECT_EQ(rep.wrong(), 0u);
  const auto j = bench::step_report_json(rep);
  EXPECT_EQ(j.at("rows")[3].at("label"), "priority ctas=16");
}

TEST(StepBudgetRows, GreenPartitionForTheComputeStream) {
  const auto so = bench::parse_step_options(tiny_ddp({"-n", "3", "-w", "1", "-q"}));
  const int half = rt::device_info(0).limits.sm_count / 2;
  std::ostringstream progress;
  try {
    const auto rep = bench::run_step(
        so,
        [&](const bench::StepDeviceContext&, std::vector<std::string>&) {
          return std::vector<RowSpec>{row(Mode::Seq), row(Mode::Concurrent),
                                      row(Mode::Priority, 0, -1, half)};
        },
        progress);
    ASSERT_EQ(rep.rows.size(), 3u);
    EXPECT_EQ(rep.rows[2].spec.label(), "priority green=" + std::to_string(half));
    EXPECT_EQ(rep.wrong(), 0u);
    EXPECT_GT(rep.rows[2].t.median(), 0.0);
  } catch (const rt::Error& e) {
    if (std::string(e.what()).find("green contexts unavailable") != std::string::npos)
      GTEST_SKIP() << e.what();
    throw;
  }
}

TEST(StepBudgetRows, BudgetsThatDoNotApplyAreRefused) {
  const auto so = bench::parse_step_options(tiny_ddp({"-n", "1", "-w", "0", "-c", "0", "-q"}));
  std::ostringstream progress;
  auto with = [&](RowSpec r) {
    return [r](const bench::StepDeviceContext&, std::vector<std::string>&) {
      return std::vector<RowSpec>{row(Mode::Seq), r};
    };
  };
  RowSpec sms = row(Mode::Concurrent);
  sms.controls.gemm_sms = 100;
  EXPECT_THROW(bench::run_step(so, with(sms), progress), bench::UsageError);
  RowSpec seq = row(Mode::Seq, 0, 16);
  EXPECT_THROW(bench::run_step(so, with(seq), progress), bench::UsageError);
}

TEST(TuneWorkloadGpu, TinyStepGivesAValidPlanAndCaches) {
  tune::WorkloadTuneOptions t;
  // The GEMMs are ours (builtin), so shape targets reach them too.
  const std::vector<std::string> builtin = {"--param", "gemm=builtin"};
  auto with_builtin = [&](std::vector<std::string> a) {
    a.insert(a.end(), builtin.begin(), builtin.end());
    return tiny_ddp(a);
  };
  t.step = bench::parse_step_options(with_builtin({"-n", "8", "-w", "2"}));
  t.space.ctas = {-1, 16};
  // Every candidate reaches the final round, shape k=1 among them (the GEMMs at one block per SM:
  // known to slow them by far), so a tuner that picks badly fails the re-measure below.
  t.space.blocks_per_sm = {1};
  t.screen_iters = 3;
  t.top = 12;
  const auto dir = std::filesystem::temp_directory_path() /
                   ("cco-tune-workload-test-" + std::to_string(getpid()));
  t.cache_dir = dir.string();
  std::ostringstream progress;
  const auto r = tune::run_tune_workload(t, progress);
  SCOPED_TRACE(r.table);
  std::printf("%s\n", r.table.c_str());  // the final round, in the log
  EXPECT_FALSE(r.from_cache);
  EXPECT_TRUE(std::filesystem::exists(r.cache_file)) << r.cache_file;
  const auto& p = r.plan;
  EXPECT_EQ(p.at("schema"), "ccoverlap.plan");
  EXPECT_EQ(p.at("policy"), "tuned");
  EXPECT_EQ(p.at("made_for").at("nranks"), std::stoi(ngpus()));
  EXPECT_NO_THROW(plan::parse(p.dump())) << p.dump(1);
  const auto& tu = p.at("tuning");
  EXPECT_EQ(tu.at("workload").at("overrides").at("layers"), 1);
  EXPECT_EQ(tu.at("verified"), true);
  double concurrent = 0, priority = 0;
  bool predicted = false;
  for (const auto& row : tu.at("tried")) {
    if (row.at("label") == "concurrent") concurrent = row.at("t_us");
    if (row.at("label") == "priority") priority = row.at("t_us");
    predicted = predicted || row.at("predicted").get<bool>();
    EXPECT_EQ(row.at("wrong"), 0);
  }
  ASSERT_GT(concurrent, 0) << "concurrent must be among the finalists";
  EXPECT_GT(priority, 0) << "priority must be among the finalists";
  EXPECT_TRUE(predicted) << "the model default must be among the finalists";
  // concurrent and priority on CTAs -1 and 16, and shape targets of the memory-bound kernel
  EXPECT_GT(tu.at("search").at("space_size").get<int>(), 4);
  EXPECT_GT(tu.at("t_seq_us").get<double>(), 0.0);
  EXPECT_NE(progress.str().find("screened"), std::string::npos) << progress.str();
  EXPECT_NE(r.table.find("<- chosen"), std::string::npos) << r.table;

  // The choice's fields name one candidate again, and it holds up in a fresh run.
  const auto& choice = tu.at("choice");
  const RowSpec chosen = tune_test::spec_of_choice(choice);
  EXPECT_EQ(chosen.label(), choice.at("label").get<std::string>()) << choice.dump();
  auto fresh_opts = bench::parse_step_options(with_builtin({"-n", "60", "-w", "3", "-q"}));
  std::vector<RowSpec> rows = {row(Mode::Seq), row(Mode::Concurrent)};
  if (!(chosen == rows[1])) rows.push_back(chosen);
  const auto fresh = bench::run_step(
      fresh_opts, [&](const bench::StepDeviceContext&, std::vector<std::string>&) { return rows; },
      progress);
  ASSERT_EQ(fresh.rows.size(), rows.size());
  EXPECT_EQ(fresh.wrong(), 0u);
  if (rows.size() == 3)
    tune_test::expect_not_slower(
        tune_test::paired(fresh.rows[2].t.samples, fresh.rows[1].t.samples), chosen.label());

  // Another -n: the same key, answered from the cache.
  auto again_opts = t;
  again_opts.step.common.iters = 20;
  const auto again = tune::run_tune_workload(again_opts, progress);
  EXPECT_TRUE(again.from_cache);
  EXPECT_EQ(again.cache_file, r.cache_file);
  EXPECT_EQ(again.plan.at("tuning").at("choice"), tu.at("choice"));
  EXPECT_EQ(again.table, r.table);
  std::filesystem::remove_all(dir);
}
