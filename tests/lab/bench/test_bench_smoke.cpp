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

// -G: every run a replayed CUDA graph. The answers under overlap stay right (the last replay's
// outputs are checked) and every part has its time from the graph's own event nodes. (How much
// faster graphs run is a measurement: docs/results, not a timed test.)
TEST(Bench, CudaGraphRunsAreCheckedAndTimed) {
  const int n = std::min(2, rt::device_count());  // gpu_main: at least one
  const auto g = run_bench({"-g", std::to_string(n), "-b", "64K", "-e", "1M", "-f", "16", "-n", "3",
                            "-w", "1", "--compute", "builtin", "--gemm", "256", "--count", "4",
                            "--blocks-per-sm", "1", "-G", "20", "-q"});
  expect_ok(g, 2 * 5);  // 2 sizes x (seq, concurrent, priority, shape k=1, shape+priority k=1)
  EXPECT_EQ(g.config.at("cudagraph"), 20);
  bool noted = false;
  for (const auto& note : g.notes) noted = noted || note.starts_with("-G 20: each run is captured");
  EXPECT_TRUE(noted);
  for (const auto& row : g.rows) {
    EXPECT_GT(row.t_comp_part.median(), 0.0) << row.spec.label();
    EXPECT_GT(row.t_comm_part.median(), 0.0) << row.spec.label();
    EXPECT_GT(row.t_comp.median(), 0.0);
    EXPECT_GT(row.t_comm.median(), 0.0);
  }
  // cuBLASLt's GEMMs captured too (the default compute: no shape modes)
  const auto lt = run_bench({"-g", std::to_string(n), "-b", "1M", "-n", "3", "-w", "1", "--gemm",
                             "512", "--count", "2", "-G", "5", "-q"});
  expect_ok(lt, 3);  // seq, concurrent, priority
}

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

// -d all and --in-place 1 (issue 19, item 6), checked: every type of every size, each row
// exact (0 wrong), and the collective alone in place beside out of place, its refilled input
// checked as exactly. One GPU (one rank) is enough; two where present.
class TypesAndInPlace : public ::testing::TestWithParam<std::string> {};

TEST_P(TypesAndInPlace, EveryTypeCheckedAndInPlace) {
  const int n = std::min(2, rt::device_count());
  const auto r = run_bench({"-g",
                            std::to_string(n),
                            "-b",
                            "1M",
                            "-e",
                            "2M",
                            "-f",
                            "2",
                            "-n",
                            "3",
                            "-w",
                            "1",
                            "-d",
                            "all",
                            "--in-place",
                            "1",
                            "--collective",
                            GetParam(),
                            "--compute",
                            "builtin",
                            "--gemm",
                            "256",
                            "--count",
                            "1",
                            "--modes",
                            "seq,concurrent",
                            "-q"});
  expect_ok(r, 3 * 2 * 2);  // float, half, bfloat16 x 1M, 2M x seq, concurrent
  EXPECT_EQ(r.dtype, "all");
  EXPECT_EQ(r.in_place, "measured");
  const char* order[] = {"float", "half", "bfloat16"};
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    const auto& row = r.rows[i];
    EXPECT_EQ(row.dtype, order[i / 4]) << i;
    EXPECT_EQ(row.bytes, (i % 4) < 2 ? 1 << 20 : 2 << 20) << i;
    EXPECT_EQ(
        row.count * static_cast<int64_t>(row.dtype == "float" ? 4 : 2),
        GetParam() == "allgather" || GetParam() == "reducescatter" ? row.bytes / n : row.bytes)
        << "elements per NCCL call, per type";
    EXPECT_TRUE(row.in_place) << i;
    EXPECT_EQ(row.in_place_wrong, 0u) << row.dtype << " at " << row.bytes;
    EXPECT_EQ(row.t_comm_in_place.samples.size(), 3u);
    EXPECT_GT(row.t_comm_in_place.median(), 0.0);
  }
  const auto j = bench::to_json(r);
  for (const auto& x : j.at("results")) {
    EXPECT_TRUE(x.contains("t_comm_in_place"));
    EXPECT_TRUE(x.at("in_place_busbw_gbps").is_number());
    EXPECT_TRUE(x.at("dtype").is_string());
  }
  EXPECT_NE(bench::to_csv(r).find("in_place_busbw_gbps"), std::string::npos);
  EXPECT_NE(bench::format_footer(r).find("# collective alone at 1M bfloat16: out of place"),
            std::string::npos)
      << bench::format_footer(r);
}

INSTANTIATE_TEST_SUITE_P(Bench, TypesAndInPlace,
                         ::testing::Values("allreduce", "allgather", "reducescatter", "broadcast",
                                           "reduce"));

// A collective with no in-place form: the run says so once and measures out of place only.
TEST(Bench, InPlaceSkippedWithTheReason) {
  const int n = std::min(2, rt::device_count());
  const auto r = run_bench({"-g",
                            std::to_string(n),
                            "-b",
                            "1M",
                            "-n",
                            "3",
                            "-w",
                            "1",
                            "--in-place",
                            "1",
                            "--collective",
                            "alltoall",
                            "-d",
                            "half,bfloat16",
                            "-o",
                            "max",
                            "--compute",
                            "builtin",
                            "--gemm",
                            "256",
                            "--count",
                            "1",
                            "--modes",
                            "concurrent",
                            "-q"});
  expect_ok(r, 2);
  EXPECT_EQ(r.in_place, bench::in_place_refusal(model::Collective::AllToAll));
  bool said = false;
  for (const auto& note : r.notes) said = said || note.find("--in-place 1 skipped: alltoall") == 0;
  EXPECT_TRUE(said);
  for (const auto& row : r.rows) EXPECT_FALSE(row.in_place);
  EXPECT_EQ(r.rows[0].dtype, "half");
  EXPECT_EQ(r.rows[1].dtype, "bfloat16");
  EXPECT_EQ(bench::to_json(r).at("in_place").at("measured"), false);
}

// cco tune's entry (rows from a provider) tunes one type, out of place: refused before any GPU
// work.
TEST(Bench, TuneEntryRefusesSeveralTypes) {
  auto o = bench::parse_options({"bench", "-d", "all", "-g", "1"});
  std::ostringstream progress;
  const bench::RowProvider rows = [](const bench::DeviceContext&, std::vector<std::string>&) {
    return std::vector<bench::RowSpec>{};
  };
  EXPECT_THROW(bench::run(
                   o, rows, [](const bench::Report&, std::size_t) {}, progress),
               bench::UsageError);
}

TEST(Bench, PaddingOverTheOptInMaximumIsAUsageError) {
  EXPECT_THROW(run_bench({"-g", "1", "-b", "1M", "-n", "1", "-w", "0", "--compute", "builtin",
                          "--gemm", "256", "--pad", "400K", "-q"}),
               bench::UsageError);
}

}  // namespace
