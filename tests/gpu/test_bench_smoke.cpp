// cco bench -c on 1 and 2 GPUs for every collective, every compute kind and every mode: results
// under overlap must be right (0 wrong elements) and every row must have its samples.
#include <gtest/gtest.h>

#include <sstream>

#include "bench/options.hpp"
#include "bench/runner.hpp"
#include "model/metrics.hpp"
#include "runtime/device.hpp"

using namespace cco;

namespace {

bench::Report run_bench(std::vector<std::string> args) {
  args.insert(args.begin(), "bench");
  const auto o = bench::parse_options(args);
  std::ostringstream progress;
  return bench::run(o, [](const bench::Report&, std::size_t) {}, progress);
}

void expect_ok(const bench::Report& r, std::size_t rows) {
  ASSERT_EQ(r.rows.size(), rows);
  for (const auto& row : r.rows) {
    EXPECT_TRUE(row.checked);
    EXPECT_EQ(row.wrong, 0u) << bench::to_string(row.spec.mode) << " at " << row.bytes;
    EXPECT_EQ(row.t.samples.size(), 3u);
    EXPECT_GT(row.t.median(), 0.0);
    EXPECT_GT(row.t_seq.median(), 0.0);
  }
}

class EveryCollective : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(EveryCollective, CheckedUnderOverlap) {
  const auto& [coll, ngpus] = GetParam();
  if (rt::device_count() < ngpus) GTEST_SKIP() << "needs " << ngpus << " GPUs";
  for (const char* dt : {"float", "bfloat16"}) {
    const auto r = run_bench({"-g", std::to_string(ngpus), "-b", "1M", "-e", "4M", "-f", "4", "-n", "3",
                              "-w", "1", "-d", dt, "--collective", coll, "--compute", "builtin",
                              "--gemm", "512", "--count", "2", "--blocks-per-sm", "1,2", "-q"});
    // 2 sizes x (seq, concurrent, priority, shape k=1,2, shape+priority k=1,2)
    expect_ok(r, 2 * 7);
  }
}

INSTANTIATE_TEST_SUITE_P(Bench, EveryCollective,
                         ::testing::Combine(::testing::Values("allreduce", "allgather", "reducescatter",
                                                              "alltoall", "sendrecv", "broadcast", "reduce"),
                                            ::testing::Values(1, 2)));

TEST(Bench, CublasLtAndMemBoundOnTwoGpus) {
  const int n = std::min(2, rt::device_count());
  auto r = run_bench({"-g", std::to_string(n), "-b", "8M", "-n", "3", "-w", "1", "--gemm", "1024",
                      "--count", "2", "-q"});
  expect_ok(r, 3);  // seq, concurrent, priority: no shape modes for vendor kernels
  r = run_bench({"-g", std::to_string(n), "-b", "8M", "-n", "3", "-w", "1", "--compute", "membound",
                 "--mem-bytes", "64M", "--pad", "0,32K", "-o", "max", "-q"});
  expect_ok(r, 3 + 2 * 2);
}

TEST(Bench, MinReductionAndHalfType) {
  const int n = std::min(2, rt::device_count());
  const auto r = run_bench({"-g", std::to_string(n), "-b", "2M", "-n", "3", "-w", "1", "-d", "half", "-o",
                            "min", "--gemm", "256", "--gemm-dtype", "half", "--modes", "concurrent", "-q"});
  expect_ok(r, 1);
}

TEST(Bench, PaddingOverTheOptInMaximumIsAUsageError) {
  EXPECT_THROW(run_bench({"-g", "1", "-b", "1M", "-n", "1", "-w", "0", "--compute", "builtin",
                          "--gemm", "256", "--pad", "400K", "-q"}),
               bench::UsageError);
}

}  // namespace
