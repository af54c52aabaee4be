// cco tune on GPUs: a small pair returns a valid plan, never slower than concurrent in its run,
// and a second call is answered from the cache.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "runtime/device.hpp"
#include "tune/tune.hpp"

using namespace cco;

TEST(TuneGpu, SmallPairGivesAValidPlanAndCaches) {
  tune::TuneOptions t;
  t.bench = bench::parse_options({"bench", "-g", std::to_string(std::min(2, rt::device_count())), "-b",
                                  "16M", "--compute", "builtin", "--gemm", "1024", "--count", "2",
                                  "-n", "10", "-q"});
  t.space.ctas = {-1, 16};
  t.screen_iters = 3;
  t.top = 3;
  const auto dir = std::filesystem::temp_directory_path() / ("cco-tune-test-" + std::to_string(getpid()));
  t.cache_dir = dir.string();
  std::ostringstream progress;
  const auto r = tune::run_tune(t, progress);
  EXPECT_FALSE(r.from_cache);
  const auto& p = r.plan;
  EXPECT_EQ(p.at("schema"), "ccoverlap.plan");
  EXPECT_EQ(p.at("policy"), "tuned");
  double concurrent = 0;
  for (const auto& row : p.at("tuning").at("tried"))
    if (row.at("label") == "concurrent") concurrent = row.at("t_us");
  ASSERT_GT(concurrent, 0) << "concurrent must be among the finalists";
  EXPECT_LE(p.at("tuning").at("choice").at("t_us").get<double>(), concurrent);
  EXPECT_GT(p.at("tuning").at("search").at("space_size").get<int>(), 4);
  const auto again = tune::run_tune(t, progress);
  EXPECT_TRUE(again.from_cache);
  EXPECT_EQ(again.plan.at("tuning").at("choice"), p.at("tuning").at("choice"));
  std::filesystem::remove_all(dir);
}
