// cco tune on GPUs: a small pair returns a valid plan whose choice, measured again in a fresh
// run beside concurrent, is not slower (tests/lab/tune/remeasure.hpp says why that and not "the
// fastest of its own round"), and a second call is answered from the cache.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "bench/runner.hpp"
#include "runtime/device.hpp"
#include "remeasure.hpp"
#include "tune/tune.hpp"

using namespace cco;

TEST(TuneGpu, SmallPairGivesAValidPlanAndCaches) {
  tune::TuneOptions t;
  t.bench = bench::parse_options({"bench", "-g", std::to_string(std::min(2, rt::device_count())), "-b",
                                  "16M", "--compute", "builtin", "--gemm", "1024", "--count", "2",
                                  "-n", "10", "-q"});
  t.space.ctas = {-1, 16};
  // Every candidate reaches the final round, shape k=1 among them (one block per SM: known to
  // slow the built-in GEMM by far), so a tuner that picks badly fails the re-measure below.
  t.space.blocks_per_sm = {1};
  t.screen_iters = 3;
  t.top = 8;
  const auto dir = std::filesystem::temp_directory_path() / ("cco-tune-test-" + std::to_string(getpid()));
  t.cache_dir = dir.string();
  std::ostringstream progress;
  const auto r = tune::run_tune(t, progress);
  SCOPED_TRACE(r.table);
  std::printf("%s\n", r.table.c_str());  // the final round, in the log
  EXPECT_FALSE(r.from_cache);
  const auto& p = r.plan;
  EXPECT_EQ(p.at("schema"), "ccoverlap.plan");
  EXPECT_EQ(p.at("policy"), "tuned");
  double concurrent = 0;
  for (const auto& row : p.at("tuning").at("tried"))
    if (row.at("label") == "concurrent") concurrent = row.at("t_us");
  ASSERT_GT(concurrent, 0) << "concurrent must be among the finalists";
  EXPECT_GT(p.at("tuning").at("search").at("space_size").get<int>(), 4);

  // The choice's fields name one candidate again, and it holds up in a fresh run.
  const auto& choice = p.at("tuning").at("choice");
  const bench::RowSpec chosen = tune_test::spec_of_choice(choice);
  EXPECT_EQ(chosen.label(), choice.at("label").get<std::string>()) << choice.dump();
  bench::RowSpec conc;
  conc.mode = bench::Mode::Concurrent;
  auto again_opts = t.bench;
  again_opts.iters = 40;
  std::vector<bench::RowSpec> rows = {conc};
  if (!(chosen == conc)) rows.push_back(chosen);
  const auto fresh = bench::run(
      again_opts, [&](const bench::DeviceContext&, std::vector<std::string>&) { return rows; },
      [](const bench::Report&, std::size_t) {}, progress);
  ASSERT_EQ(fresh.rows.size(), rows.size());
  for (const auto& row : fresh.rows) EXPECT_EQ(row.wrong, 0u) << row.spec.label();
  if (rows.size() == 2)
    tune_test::expect_not_slower(
        tune_test::paired(fresh.rows[1].t.samples, fresh.rows[0].t.samples), chosen.label());

  const auto again = tune::run_tune(t, progress);
  EXPECT_TRUE(again.from_cache);
  EXPECT_EQ(again.plan.at("tuning").at("choice"), p.at("tuning").at("choice"));
  std::filesystem::remove_all(dir);
}
