// `cco report` as the CLI calls it (report_main): traces merged and analysed, --json, --svg,
// the bench chart, and every input error as one exception of the right kind.
#include <gtest/gtest.h>

#include "model/read_file.hpp"
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#ifdef CCO_TRACE_HAS_ZLIB
#include <zlib.h>
#endif
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/report_cmd.hpp"
#include "model/limits.hpp"
#include "trace/gzip.hpp"
#include "steps/compare.hpp"
#include "steps/search.hpp"
#include "steps/record.hpp"
#include "trace/analysis.hpp"
#include "trace/format.hpp"
#include "../report/xml_check.hpp"

namespace {

using cco::trace::KernelCategory;
using cco::trace::KernelEvent;

std::string dir() {
  return ::testing::TempDir();
}

std::string write(const std::string& name, const std::string& text) {
  const std::string p = dir() + name;
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

std::string read(const std::string& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

KernelEvent K(int rank, int64_t stream, KernelCategory cat, int64_t start, int64_t end) {
  KernelEvent k;
  k.name =
      cat == KernelCategory::Communication ? "ncclDevKernel_AllReduce_Sum_f32_RING_LL" : "gemm";
  k.category = cat;
  k.rank = rank;
  k.device = rank;
  k.stream = stream;
  k.start_ns = start;
  k.end_ns = end;
  return k;
}

// Rank r: compute [0, 100 us), communication [20, 60 us) (rank 0) or [100, 150 us) (rank 1).
std::string rank_file(int r) {
  cco::trace::Trace t;
  t.kernels = {K(r, 1, KernelCategory::Compute, 0, 100'000),
               r == 0 ? K(r, 2, KernelCategory::Communication, 20'000, 60'000)
                      : K(r, 2, KernelCategory::Communication, 100'000, 150'000)};
  t.marks = {{50'000, -1, "half way"}};
  t.normalize();
  const std::string p = dir() + "cco_rank" + std::to_string(r) + ".json";
  cco::trace::write_trace_file(t, p);
  return p;
}

// rank_file(r) with NVTX ranges: "step 0" [10, 50 us) and "step 1" [60, 90 us) on every rank,
// "warm-up" twice on rank 0, and a truncated range named in the notes (as Session writes it).
std::string ranges_file(int r) {
  cco::trace::Trace t = cco::trace::read_trace_file(rank_file(r));
  auto add = [&](const std::string& name, int64_t a, int64_t b) {
    cco::trace::NvtxRange x;
    x.name = name;
    x.rank = r;
    x.thread = 100 + static_cast<uint64_t>(r);
    x.start_ns = a;
    x.end_ns = b;
    t.ranges.push_back(x);
  };
  add("step 0", 10'000, 50'000);
  add("step 1", 60'000, 90'000);
  if (r == 0) {
    add("warm-up", 0, 1'000);
    add("warm-up", 2'000, 3'000);
  }
  t.notes.push_back(
      "NVTX range 'late' opened on thread 100 at 95000 ns was not closed while "
      "tracing: truncated, left out of the trace");
  const std::string p = dir() + "cco_ranges" + std::to_string(r) + ".json";
  cco::trace::write_trace_file(t, p);
  return p;
}

int run(std::vector<std::string> args, std::string* out = nullptr) {
  args.insert(args.begin(), "report");
  ::testing::internal::CaptureStdout();
  int rc = -1;
  try {
    rc = cco::cli::report_main(args);
  } catch (...) {
    const std::string o = ::testing::internal::GetCapturedStdout();
    if (out) *out = o;
    throw;
  }
  const std::string o = ::testing::internal::GetCapturedStdout();
  if (out) *out = o;
  return rc;
}

TEST(ReportCmd, OneTrace) {
  std::string out;
  ASSERT_EQ(run({rank_file(0)}, &out), 0);
  EXPECT_NE(out.find("# ccoverlap report"), std::string::npos) << out;
  EXPECT_NE(out.find("# dropped records: 0"), std::string::npos) << out;
  // rank 0: span 100, compute 100, comm 40, overlapped 40, exposed 0, eff 1.00
  EXPECT_NE(out.find("100.0"), std::string::npos) << out;
  EXPECT_NE(out.find("40.0"), std::string::npos) << out;
  EXPECT_NE(out.find(" 1.00\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("\n   all "), std::string::npos) << "no merged row for one rank\n" << out;
  EXPECT_NE(out.find("# mark at 50.0 us: half way"), std::string::npos) << out;
}

TEST(ReportCmd, RankFilesMerge) {
  std::string out;
  ASSERT_EQ(run({rank_file(0), rank_file(1)}, &out), 0);
  EXPECT_NE(out.find("  all "), std::string::npos) << out;
  EXPECT_NE(out.find(" 0.44\n"), std::string::npos) << out;  // 40 / (40 + 50)
}

TEST(ReportCmd, JsonToStdoutAndFile) {
  std::string out;
  const std::string jf = dir() + "cco_report_out.json";
  ASSERT_EQ(run({rank_file(0), rank_file(1), "--json"}, &out), 0);
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["ranks"].size(), 2u);
  EXPECT_EQ(j["ranks"][0]["overlapped_ns"], 40'000);
  EXPECT_EQ(j["all"]["exposed_comm_ns"], 50'000);
  EXPECT_EQ(j["marks"].size(), 1u);  // the same process-wide mark in both files, kept once
  ASSERT_EQ(run({rank_file(0), "--json=" + jf}, &out), 0);
  EXPECT_NE(out.find("# ccoverlap report"), std::string::npos);  // table still printed
  EXPECT_EQ(nlohmann::json::parse(read(jf))["inputs"].size(), 1u);
}

TEST(ReportCmd, WindowAndTimeline) {
  std::string out;
  const std::string svg = dir() + "cco_timeline.svg";
  ASSERT_EQ(
      run({rank_file(0), rank_file(1), "--from", "10", "--to", "50", "--svg", svg, "--json"}, &out),
      0);
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["ranks"][0]["compute_busy_ns"], 40'000);
  EXPECT_EQ(j["ranks"][0]["overlapped_ns"], 30'000);
  const auto x = cco::test::check_xml(read(svg));
  EXPECT_EQ(x.error, "");
  EXPECT_EQ(x.root, "svg");
}

TEST(ReportCmd, NvtxRangesCountedPerRankAndTruncatedOnesNoted) {
  std::string out;
  ASSERT_EQ(run({ranges_file(0), ranges_file(1)}, &out), 0);
  EXPECT_NE(out.find("# NVTX ranges: 6 (rank 0: 4, rank 1: 2)"), std::string::npos) << out;
  EXPECT_NE(out.find("# note: NVTX range 'late' opened on thread 100"), std::string::npos) << out;
  ASSERT_EQ(run({ranges_file(0), ranges_file(1), "--json"}, &out), 0);
  const auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j["nvtx_ranges"].size(), 2u);
  EXPECT_EQ(j["nvtx_ranges"][0]["rank"], 0);
  EXPECT_EQ(j["nvtx_ranges"][0]["count"], 4);
  EXPECT_EQ(j["nvtx_ranges"][1]["count"], 2);
  EXPECT_TRUE(j["window_ns"]["range"].is_null());
  // A trace without ranges says nothing about them.
  ASSERT_EQ(run({rank_file(0)}, &out), 0);
  EXPECT_EQ(out.find("NVTX"), std::string::npos) << out;
}

TEST(ReportCmd, RangeCutsLikeFromTo) {
  std::string by_range, by_time;
  const std::string svg = dir() + "cco_range_timeline.svg";
  ASSERT_EQ(
      run({ranges_file(0), ranges_file(1), "--range", "step 0", "--json", "--svg", svg}, &by_range),
      0);
  ASSERT_EQ(run({ranges_file(0), ranges_file(1), "--from", "10", "--to", "50", "--json"}, &by_time),
            0);
  auto a = nlohmann::json::parse(by_range), b = nlohmann::json::parse(by_time);
  EXPECT_EQ(a["window_ns"]["range"], "step 0");
  EXPECT_EQ(a["window_ns"]["from"], b["window_ns"]["from"]);
  EXPECT_EQ(a["window_ns"]["to"], b["window_ns"]["to"]);
  EXPECT_EQ(a["ranks"], b["ranks"]);
  EXPECT_EQ(a["ranks"][0]["compute_busy_ns"], 40'000);
  EXPECT_EQ(cco::test::check_xml(read(svg)).error, "");
  EXPECT_NE(read(svg).find("NVTX ranges"), std::string::npos);
  std::string out;
  ASSERT_EQ(run({ranges_file(0), "--range=step 1"}, &out), 0);
  EXPECT_NE(out.find("# window: NVTX range 'step 1': 60.0 .. 90.0 us after the first kernel"),
            std::string::npos)
      << out;
}

TEST(ReportCmd, OneBenchResultAsCsvAndMarkdown) {
  std::string out;
  ASSERT_EQ(run({CCO_BENCH_EXAMPLE, "--format", "csv"}, &out), 0);
  EXPECT_EQ(out.rfind("size_bytes,label,blocks_per_sm,pad_bytes,t_us", 0), 0u) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 10) << "a header and 9 rows: " << out;
  ASSERT_EQ(run({CCO_BENCH_EXAMPLE, "--format=md"}, &out), 0);
  EXPECT_NE(out.find("| size (B) | row | bps |"), std::string::npos) << out;
  EXPECT_NE(out.find("| shape+priority k="), std::string::npos) << out;
}

TEST(ReportCmd, BenchJsonTableAndChart) {
  std::string out;
  const std::string svg = dir() + "cco_sweep.svg";
  ASSERT_EQ(run({CCO_BENCH_EXAMPLE, "--svg", svg}, &out), 0);
  EXPECT_NE(out.find("shape+priority"), std::string::npos) << out;
  EXPECT_NE(out.find("# chart written to"), std::string::npos) << out;
  EXPECT_EQ(cco::test::check_xml(read(svg)).error, "");
  ASSERT_EQ(run({CCO_BENCH_EXAMPLE, "--json", "--x", "pad"}, &out), 0);
  EXPECT_EQ(nlohmann::json::parse(out)["rows"].size(), 9u);
}

template <class E>
void expect_throw(std::vector<std::string> args, const char* part) {
  try {
    run(std::move(args));
    ADD_FAILURE() << "no error for " << part;
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong kind of error: " << e.what();
  }
}

TEST(ReportCmd, RangeErrors) {
  using cco::cli::Usage;
  using cco::model::Error;
  expect_throw<Error>({ranges_file(0), "--range", "step 7"},
                      "no NVTX range named 'step 7' (the trace has 4 ranges named 'step 0', "
                      "'step 1', 'warm-up')");
  expect_throw<Error>({rank_file(0), "--range", "step 0"}, "the trace has no NVTX ranges");
  expect_throw<Error>({ranges_file(0), "--range", "warm-up"},
                      "2 NVTX ranges on rank 0 are named 'warm-up'");
  expect_throw<Usage>({ranges_file(0), "--range", "step 0", "--from", "1"},
                      "--range and --from/--to");
  expect_throw<Usage>({ranges_file(0), "--range"}, "--range needs a value");
  expect_throw<Usage>({ranges_file(0), "--range="}, "--range needs a value");
  expect_throw<Usage>({CCO_BENCH_EXAMPLE, "--range", "x"}, "--range applies to traces");
}

// --steps config:N: the library's marks of item N only; a trace without them says so.
TEST(ReportCmd, StepsOfOneConfiguration) {
  std::string out;
  ASSERT_EQ(run({rank_file(0), "--steps", "config:1"}, &out), 0);
  EXPECT_NE(out.find("the steps of one configuration cannot be told apart"), std::string::npos) << out;
}

// The twin from the files: a compare run's trace, steps back to back, config 0 (100 us: the GEMM
// 60, then 40 us of all-reduce exposed) and config 1 (nocomm: the GEMM alone, 60 us). The trace
// given as its own --alone with --alone-steps config:1 sets 0's steps against 1's: +40 us.
TEST(ReportCmd, TheTwinFromOneCompareTrace) {
  cco::trace::Trace t;
  int64_t at = 0;
  for (int s = 0; s < 9; ++s) {
    const int c = s % 2;
    t.marks.push_back({at, 0, "cco step, epoch 1, config " + std::to_string(c)});
    t.kernels.push_back(K(0, 1, KernelCategory::Compute, at, at + 60'000));
    if (c == 0) t.kernels.push_back(K(0, 2, KernelCategory::Communication, at + 60'000, at + 100'000));
    at += c == 0 ? 100'000 : 60'000;
  }
  t.normalize();
  const std::string f = dir() + "cco_twin.json";
  cco::trace::write_trace_file(t, f);
  std::string out;
  ASSERT_EQ(run({f, "--steps", "config:0", "--warmup-steps", "0", "--alone", f, "--alone-steps",
                 "config:1"}, &out), 0);
  // Steps of config 0: 0, 2, 4, 6 (8 has no next mark to end it); of config 1: 1, 3, 5, 7.
  EXPECT_NE(out.find("(means of 4 and 4 steps): 0.10 ms against 0.06, +0.04 ms"), std::string::npos)
      << out;
  EXPECT_NE(out.find("+ exposed communication +0.04"), std::string::npos) << out;
  // The other item as the diagnosed one: its steps, the configuration's own.
  ASSERT_EQ(run({f, "--steps", "config:1", "--warmup-steps", "0", "--json"}, &out), 0);
  const auto j = nlohmann::json::parse(out.substr(out.find('{')));
  EXPECT_EQ(j["diagnosis"]["ranks"][0]["steps"].size(), 4u) << out.substr(0, 2000);
  // An item the run did not compare: said, not "no kernels".
  ASSERT_EQ(run({f, "--steps", "config:5"}, &out), 0);
  EXPECT_NE(out.find("no steps of configuration 5: the marks name configurations 0, 1"),
            std::string::npos)
      << out;
  // One the run compared, but none in the window asked for.
  ASSERT_EQ(run({f, "--steps", "config:0", "--from", "1", "--to", "2"}, &out), 0);
  EXPECT_NE(out.find("no steps of configuration 0 in the window"), std::string::npos) << out;
}

TEST(ReportCmd, UsageErrors) {
  using cco::cli::Usage;
  expect_throw<Usage>({}, "no input");
  expect_throw<Usage>({rank_file(0), "--bogus"}, "unknown option '--bogus'");
  expect_throw<Usage>({rank_file(0), "--svg"}, "--svg needs a value");
  expect_throw<Usage>({rank_file(0), "--from", "abc"}, "expected a number");
  expect_throw<Usage>({rank_file(0), "--from", "5", "--to", "5"}, "--to must be after --from");
  // Bounded offsets (1e16 overflowed into a window of the whole trace) and no empty value.
  expect_throw<Usage>({rank_file(0), "--from", "1e16"}, "--from: microseconds from the first kernel, 0..1e13");
  expect_throw<Usage>({rank_file(0), "--to", "1e14"}, "--to: microseconds from the first kernel, 0..1e13");
  expect_throw<Usage>({rank_file(0), "--from", "-1"}, "--from: microseconds from the first kernel");
  expect_throw<Usage>({rank_file(0), "--from", ""}, "--from needs a value");
  expect_throw<Usage>({rank_file(0), "--x", "pad"}, "--x applies to a bench result");
  expect_throw<Usage>({rank_file(0), CCO_BENCH_EXAMPLE}, "give one bench result, two to compare, or only trace files");
  expect_throw<Usage>({rank_file(0), "--steps", "bogus"}, "--steps: expected auto, nvtx[:NAME]");
  expect_throw<Usage>({rank_file(0), "--steps", "collectives:x"}, "only nvtx:NAME and marks:NAME");
  expect_throw<Usage>({rank_file(0), "--steps", "nvtx:"}, "NAME must be 1 to 255 characters");
  expect_throw<Usage>({rank_file(0), "--warmup-steps", "1.5"}, "--warmup-steps: expected a whole");
  expect_throw<Usage>({rank_file(0), "--warmup-steps", "-1"}, "--warmup-steps: expected a whole");
  expect_throw<Usage>({rank_file(0), "--alone-steps", "nvtx:x"}, "--alone-steps needs --alone");
  for (const char* bad : {"config:", "config:x", "config:1000", "config:-1"})
    expect_throw<Usage>({rank_file(0), "--steps", bad}, "config:N takes the item's place");
  expect_throw<Usage>({CCO_BENCH_EXAMPLE, "--steps", "none"}, "apply to traces, not to a bench");
  expect_throw<Usage>({rank_file(0), "--format", "xml"}, "--format: expected text, csv or md");
  expect_throw<Usage>({CCO_BENCH_EXAMPLE, "--merge", "x.json"}, "--merge applies to traces");
  expect_throw<Usage>({rank_file(0), "--merge", "-"}, "--merge needs a file name");
  expect_throw<Usage>({CCO_BENCH_EXAMPLE, "--from", "1"}, "apply to traces");
  expect_throw<Usage>({rank_file(0), "--width", "5"}, "--width");
}

TEST(ReportCmd, InputErrors) {
  using cco::model::Error;
  expect_throw<Error>({dir() + "does_not_exist.json"}, "cannot be read (No such file or directory)");
  expect_throw<Error>({"/tmp"}, "/tmp: a folder, not a file");
  expect_throw<Error>({write("cco_trunc.json", read(rank_file(0)).substr(0, 50))},
                      "not valid JSON");
  expect_throw<Error>({write("cco_empty.json", "")}, "the file is empty");
  expect_throw<Error>({write("cco_obj.json", "{\"a\": 1}")}, "no \"traceEvents\"");
  expect_throw<Error>({write("cco_nokernels.json", "{\"traceEvents\": []}")},
                      "no GPU kernel events");
  expect_throw<Error>({rank_file(0), rank_file(0)}, "a file given twice");
  auto bad = nlohmann::json::parse(read(CCO_BENCH_EXAMPLE));
  bad["results"] = "none";
  expect_throw<Error>({write("cco_badbench.json", bad.dump())}, "\"results\" is not an array");
  // Values that cannot be, refused rather than shown as unknown (review).
  bad = nlohmann::json::parse(read(CCO_BENCH_EXAMPLE));
  bad["results"][0]["blocks_per_sm"] = -7;
  expect_throw<Error>({write("cco_negbench.json", bad.dump())}, "must not be negative");
  auto tr = nlohmann::json::parse(read(rank_file(0)));
  auto& ranks = tr["otherData"]["ccoverlap"]["ranks"];
  if (ranks.is_array() && !ranks.empty()) {
    ranks[0]["sm_count"] = -3;
    expect_throw<Error>({write("cco_negsm.json", tr.dump())}, "sm_count must not be negative");
  } else {
    ADD_FAILURE() << "the trace names no ranks: " << tr["otherData"].dump();
  }
}

TEST(ReportCmd, UnwritableOutput) {
  // Checked with the other arguments, before the inputs are read.
  expect_throw<cco::cli::Usage>({rank_file(0), "--svg", "/nonexistent/dir/x.svg"},
                      "--svg /nonexistent/dir/x.svg: the folder /nonexistent/dir does not exist");
}

}  // namespace

// Two bench results side by side (issue 19, item 4). B is the example with one row twice as fast
// (its quartiles too), one row left out, and another rank count: the table says faster for the
// first, ~ for rows measured alike, "only A" for the missing one, and names the rank caveat.
TEST(ReportCmd, TwoBenchResultsCompareRowByRow) {
  auto a = nlohmann::json::parse(read(CCO_BENCH_EXAMPLE));
  auto b = a;
  for (const char* k : {"median_us", "p25_us", "p75_us"})
    b["results"][1]["t"][k] = a["results"][1]["t"][k].get<double>() / 2;
  const std::string dropped = a["results"][2].value("label", std::string());
  b["results"].erase(2);
  b["nranks"] = 4;
  const std::string pb = write("cco_cmp_b.json", b.dump());
  std::string out;
  ASSERT_EQ(run({CCO_BENCH_EXAMPLE, pb}, &out), 0);
  EXPECT_NE(out.find("# caveat: ranks differ: 2 in A, 4 in B"), std::string::npos) << out;
  EXPECT_NE(out.find(" 0.500  faster"), std::string::npos) << out;
  EXPECT_NE(out.find(" 1.000       ~"), std::string::npos) << out;
  EXPECT_NE(out.find("only A"), std::string::npos) << out;
  ASSERT_EQ(run({CCO_BENCH_EXAMPLE, pb, "--json"}, &out), 0);
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["schema"], "ccoverlap.compare");
  EXPECT_DOUBLE_EQ(j["rows"][1]["ratio"].get<double>(), 0.5);
  EXPECT_EQ(j["rows"][1]["verdict"], "faster");
  EXPECT_TRUE(j["rows"][2]["b"].is_null()) << j["rows"][2].dump();
  ASSERT_EQ(run({CCO_BENCH_EXAMPLE, pb, "--format", "csv"}, &out), 0);
  EXPECT_EQ(out.rfind("size_bytes,label,t_a_us", 0), 0u) << out;
  EXPECT_EQ(out.find('#'), std::string::npos) << "CSV has no comment lines";
  ASSERT_EQ(run({CCO_BENCH_EXAMPLE, pb, "--format=md"}, &out), 0);
  EXPECT_NE(out.find("| size | row | A (us) |"), std::string::npos) << out;
  EXPECT_NE(out.find("- caveat: ranks differ"), std::string::npos) << out;
  // Nothing in common: one error, not an empty table.
  auto c = a;
  for (auto& r : c["results"]) r["size_bytes"] = 12345;
  expect_throw<cco::model::Error>({CCO_BENCH_EXAMPLE, write("cco_cmp_c.json", c.dump())}, "share no row");
  // Their chart: a row each that both have, A's spread and B's median and spread.
  const std::string chart = dir() + "cco_cmp_chart.svg";
  ASSERT_EQ(run({CCO_BENCH_EXAMPLE, pb, "--svg", chart}, &out), 0);
  EXPECT_NE(out.find("# chart written to " + chart), std::string::npos) << out;
  EXPECT_EQ(cco::test::check_xml(read(chart)).error, "");
  expect_throw<cco::cli::Usage>({CCO_BENCH_EXAMPLE, pb, "--merge", "x.json"}, "do not apply to a comparison");
}

// --merge: the rank files as one Chrome/Perfetto file, read back with every rank and kernel.
TEST(ReportCmd, MergeWritesOneFileOfAllRanks) {
  const std::string m = dir() + "cco_merged.json";
  std::string out;
  ASSERT_EQ(run({rank_file(0), rank_file(1), "--merge", m}, &out), 0);
  EXPECT_NE(out.find("# merged trace (2 ranks) written to"), std::string::npos) << out;
  const auto t = cco::trace::read_trace_file(m);
  EXPECT_EQ(t.ranks.size(), 2u);
  EXPECT_EQ(t.kernels.size(), 4u);
  // The merged file analyses as the two files did.
  std::string again;
  ASSERT_EQ(run({m}, &again), 0);
  EXPECT_NE(again.find(" 0.44\n"), std::string::npos) << again;
}

// --merge NAME.gz writes gzip, as its name says, and it reads back as the plain file does.
TEST(ReportCmd, MergeToGzWritesGzip) {
#ifdef CCO_TRACE_HAS_ZLIB
  const std::string m = dir() + "cco_merged.json.gz";
  std::string out;
  ASSERT_EQ(run({rank_file(0), rank_file(1), "--merge", m}, &out), 0);
  const std::string bytes = cco::model::read_file(m, 1 << 20);
  ASSERT_GE(bytes.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(bytes[1]), 0x8b);
  std::string again;
  ASSERT_EQ(run({m}, &again), 0);
  EXPECT_NE(again.find(" 0.44\n"), std::string::npos) << again;
#else
  GTEST_SKIP() << "this build has no zlib: a .gz output is refused";
#endif
}

// Two nodes' PyTorch profiler traces (kineto), gzipped as the profiler writes them, each of one
// rank on its node's device 0 (so both pids are 0): the rank comes from distributedInfo, the
// files merge as ranks 0 and 1, and the analysis has the answers worked out by hand below.
//   rank 0: GEMM [1000, 1100) us, NCCL all-reduce [1050, 1150) us: overlapped 50 of 100 us of
//           communication (ovl 0.50), exposed 50 us;
//   rank 1: GEMM [1000, 1100) us, NCCL all-reduce [1100, 1180) us: nothing overlapped (ovl 0),
//           exposed 80 us.
//   Merged: overlapped 50 of 180 us busy (ovl 0.28), exposed 130 us.
// Without zlib the same files are written plain (a gzip input is refused there: asserted in
// GzipTraceReadsAsThePlainOne), and the answers are the same.
TEST(ReportCmd, KinetoTwoNodesGzippedKnownAnswers) {
  auto node = [](int rank, double comm_start, double comm_dur) {
    nlohmann::json j;
    j["schemaVersion"] = 1;
    j["distributedInfo"] = {{"backend", "nccl"}, {"rank", rank}, {"world_size", 2}};
    j["deviceProperties"] = nlohmann::json::array({{{"id", 0}, {"name", "NVIDIA H100 80GB HBM3"}}});
    auto kernel = [](const char* name, double ts, double dur, int stream) {
      return nlohmann::json{{"ph", "X"}, {"cat", "kernel"}, {"name", name}, {"pid", 0},
                            {"tid", stream}, {"ts", ts}, {"dur", dur},
                            {"args", {{"device", 0}, {"stream", stream}, {"correlation", 17}}}};
    };
    j["traceEvents"] = nlohmann::json::array(
        {{{"ph", "X"}, {"cat", "cpu_op"}, {"name", "aten::mm"}, {"pid", 4242}, {"tid", 4242},
          {"ts", 990.0}, {"dur", 5.0}},
         kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", 1000.0, 100.0, 7),
         kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", comm_start, comm_dur, 20)});
    const std::string text = j.dump();
    const std::string name = "cco_kineto_node" + std::to_string(rank) + ".pt.trace.json";
#ifdef CCO_TRACE_HAS_ZLIB
    const std::string path = dir() + name + ".gz";
    gzFile f = gzopen(path.c_str(), "wb");
    EXPECT_NE(f, nullptr);
    gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
    gzclose(f);
    return path;
#else
    return write(name, text);
#endif
  };
  const std::string a = node(0, 1050.0, 100.0), b = node(1, 1100.0, 80.0);
  std::string out;
  ASSERT_EQ(run({a, b, "--json"}, &out), 0);
  const auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j["ranks"].size(), 2u) << out;
  EXPECT_EQ(j["ranks"][0]["rank"], 0);
  EXPECT_EQ(j["ranks"][1]["rank"], 1);
  EXPECT_EQ(j["ranks"][0]["comm_busy_ns"], 100'000);
  EXPECT_EQ(j["ranks"][0]["overlapped_ns"], 50'000);
  EXPECT_DOUBLE_EQ(j["ranks"][0]["overlap_ratio"].get<double>(), 0.5);
  EXPECT_EQ(j["ranks"][1]["comm_busy_ns"], 80'000);
  EXPECT_EQ(j["ranks"][1]["overlapped_ns"], 0);
  EXPECT_DOUBLE_EQ(j["ranks"][1]["overlap_ratio"].get<double>(), 0.0);
  EXPECT_EQ(j["all"]["overlapped_ns"], 50'000);
  EXPECT_EQ(j["all"]["exposed_comm_ns"], 130'000);
  EXPECT_NEAR(j["all"]["overlap_ratio"].get<double>(), 50.0 / 180.0, 1e-9);
  // The same files merged into one Perfetto file read back to the same answers.
  const std::string merged = dir() + "cco_kineto_merged.json";
  ASSERT_EQ(run({a, b, "--merge", merged}, &out), 0);
  ASSERT_EQ(run({merged, "--json"}, &out), 0);
  const auto m = nlohmann::json::parse(out);
  EXPECT_EQ(m["all"]["overlapped_ns"], 50'000);
  EXPECT_EQ(m["all"]["exposed_comm_ns"], 130'000);
}

// gzip (PyTorch's profiler writes .json.gz): read as the plain file, and bounded.
TEST(ReportCmd, GzipTraceReadsAsThePlainOne) {
#ifndef CCO_TRACE_HAS_ZLIB
  // Built without zlib: a gzip input is refused with one clear error, never read as JSON.
  expect_throw<cco::model::Error>({write("cco_nozlib.json.gz", std::string("\x1f\x8b\x08\x00", 4))},
                                  "this cco was built without zlib");
#else
  const std::string plain = read(rank_file(0));
  const std::string gz = dir() + "cco_rank0.json.gz";
  gzFile f = gzopen(gz.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, plain.data(), static_cast<unsigned>(plain.size())), static_cast<int>(plain.size()));
  gzclose(f);
  std::string a, b;
  ASSERT_EQ(run({rank_file(0)}, &a), 0);
  ASSERT_EQ(run({gz}, &b), 0);
  EXPECT_EQ(a.substr(a.find("# ranks")), b.substr(b.find("# ranks")));
  const std::string bytes = read(gz);
  EXPECT_TRUE(cco::trace::is_gzip(bytes));
  EXPECT_EQ(cco::trace::gunzip(bytes, plain.size(), "x.gz"), plain);
  try {
    cco::trace::gunzip(bytes, plain.size() - 1, "x.gz");
    ADD_FAILURE() << "a bound below the inflated size must refuse";
  } catch (const cco::model::Error& e) {
    EXPECT_NE(std::string(e.what()).find("x.gz: inflates to more than"), std::string::npos) << e.what();
  }
  expect_throw<cco::model::Error>({write("cco_trunc.json.gz", bytes.substr(0, bytes.size() / 2))},
                                  "not valid gzip");
#endif
}

// Step and tune results (issue 19, item 4), from tests/fixtures/report: one printed and drawn,
// two of one kind compared, kinds never mixed.
namespace {

std::string fixture(const std::string& name) {
  const std::string ex = CCO_BENCH_EXAMPLE;  // <root>/tests/fixtures/recorded/...
  return ex.substr(0, ex.find("/tests/fixtures/")) + "/tests/fixtures/report/" + name;
}

TEST(ReportCmd, OneStepResultTableCsvJsonAndChart) {
  std::string out;
  const std::string svg = dir() + "cco_step.svg";
  ASSERT_EQ(run({fixture("step_a.json"), "--svg", svg}, &out), 0);
  EXPECT_EQ(out.rfind("# step result: ", 0), 0u) << out;
  // concurrent: 800 us, spread 20/800, reduction 20%, E (1000 - 800)/400, of_ideal 50%.
  EXPECT_NE(out.find("  concurrent                              800     2.5       20    0.5    n/a       50      0\n"),
            std::string::npos) << out;
  EXPECT_NE(out.find("# chart written to " + svg), std::string::npos);
  const auto x = cco::test::check_xml(read(svg));
  ASSERT_EQ(x.error, "");
  for (const char* label : {"seq", "concurrent", "priority", "shape k=4"})
    EXPECT_NE(std::find(x.texts.begin(), x.texts.end(), label), x.texts.end()) << label;
  ASSERT_EQ(run({fixture("step_a.json"), "--format", "csv"}, &out), 0);
  EXPECT_EQ(out.rfind("label,mode,t_us,p25_us,p75_us,spread,", 0), 0u) << out;
  EXPECT_NE(out.find("\npriority,priority,900,880,920,0.0444444,1000,600,0.1,0.25,,0.25,0,\n"),
            std::string::npos) << out;
  ASSERT_EQ(run({fixture("step_a.json"), "--json"}, &out), 0);
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["kind"], "step");
  EXPECT_EQ(j["rows"].size(), 4u);
  EXPECT_EQ(j["rows"][3]["wrong"], 3);
}

TEST(ReportCmd, OneTuneResultMarksChoiceAndApplied) {
  std::string out;
  ASSERT_EQ(run({fixture("tune_step_a.plan.json"), "--format", "md"}, &out), 0);
  EXPECT_NE(out.find("choice: `shape k=3`; applied: `concurrent`"), std::string::npos) << out;
  EXPECT_NE(out.find("| shape k=3 | 760 | 2.6 | 24 | 0.6 | n/a | 60 | 0 | choice |"),
            std::string::npos) << out;
  const std::string svg = dir() + "cco_tune.svg";
  ASSERT_EQ(run({fixture("tune_pair.plan.json"), "--svg", svg, "--title", "pair <tune>"}, &out), 0);
  const auto x = cco::test::check_xml(read(svg));
  ASSERT_EQ(x.error, "");
  EXPECT_NE(std::find(x.texts.begin(), x.texts.end(), "pair <tune>"), x.texts.end());
  EXPECT_NE(std::find(x.texts.begin(), x.texts.end(), "priority ctas=32 (choice, applied)"),
            x.texts.end());
}

TEST(ReportCmd, TwoStepsAndTwoTunesCompared) {
  std::string out;
  ASSERT_EQ(run({fixture("step_a.json"), fixture("step_b.json")}, &out), 0);
  EXPECT_NE(out.find("# caveat: the device differs: 'NVIDIA H200' in A, 'NVIDIA H100 80GB HBM3' in B"),
            std::string::npos) << out;
  EXPECT_NE(out.find(" 0.750  faster "), std::string::npos) << out;  // 600 / 800
  EXPECT_NE(out.find(" 1.056  slower "), std::string::npos) << out;  // 950 / 900
  EXPECT_NE(out.find(" 1.000       ~ "), std::string::npos) << out;  // seq
  EXPECT_NE(out.find("only A"), std::string::npos);
  EXPECT_NE(out.find("only B"), std::string::npos);
  {
    // --svg: the rows both have (seq, concurrent, priority: one marker each), with their verdicts
    // written where they fit; the rows only one has are named, not drawn.
    const std::string chart = dir() + "cco_steps_cmp.svg";
    std::string o;
    ASSERT_EQ(run({fixture("step_a.json"), fixture("step_b.json"), "--svg", chart}, &o), 0);
    const std::string svg = read(chart);
    EXPECT_EQ(cco::test::check_xml(svg).error, "");
    std::size_t circles = 0;
    for (auto at = svg.find("<circle"); at != std::string::npos; at = svg.find("<circle", at + 1)) ++circles;
    EXPECT_EQ(circles, 3u) << svg;
    for (const char* v : {">faster<", ">slower<", ">within noise<", "2 row(s) only one result has: not drawn"})
      EXPECT_NE(svg.find(v), std::string::npos) << v;
  }
  {
    // Tune rows without quartiles: drawn without bars, never as "n/a" in the picture.
    auto ta = nlohmann::json::parse(read(fixture("tune_step_a.plan.json")));
    auto tb = nlohmann::json::parse(read(fixture("tune_step_b.plan.json")));
    for (auto* j : {&ta, &tb})
      for (auto& r : (*j)["tuning"]["tried"]) r.erase("p25_us"), r.erase("p75_us");
    const std::string chart = dir() + "cco_tune_cmp.svg";
    std::string o;
    ASSERT_EQ(run({write("cco_tune_qa.json", ta.dump()), write("cco_tune_qb.json", tb.dump()), "--svg", chart}, &o), 0);
    const std::string svg = read(chart);
    EXPECT_EQ(cco::test::check_xml(svg).error, "");
    EXPECT_EQ(svg.find("=\"n/a\""), std::string::npos) << svg;
  }
  ASSERT_EQ(run({fixture("step_a.json"), fixture("step_b.json"), "--format", "csv"}, &out), 0);
  EXPECT_EQ(out.rfind("label,t_a_us,spread_a,t_b_us,spread_b,ratio,verdict,", 0), 0u) << out;
  EXPECT_NE(out.find("\nconcurrent,800,0.025,600,0.0333333,0.75,faster,"), std::string::npos) << out;
  EXPECT_EQ(out.find('#'), std::string::npos);
  ASSERT_EQ(run({fixture("tune_step_a.plan.json"), fixture("tune_step_b.plan.json"), "--json"}, &out), 0);
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["schema"], "ccoverlap.compare");
  EXPECT_EQ(j["kind"], "tune");
  EXPECT_DOUBLE_EQ(j["rows"][0]["ratio"].get<double>(), 700.0 / 800);
  EXPECT_EQ(j["rows"][0]["verdict"], "faster");
  EXPECT_EQ(j["rows"][1]["verdict"], "~");
  EXPECT_EQ(j["caveats"][0], "parameter layers differs: '2' in A, '4' in B");
}

TEST(ReportCmd, StepAndTuneErrors) {
  using cco::cli::Usage;
  using cco::model::Error;
  expect_throw<Usage>({fixture("step_a.json"), CCO_BENCH_EXAMPLE},
                      ("cannot compare a step result (" + fixture("step_a.json") +
                       ") with a bench result").c_str());
  expect_throw<Usage>({fixture("tune_step_a.plan.json"), fixture("step_a.json")},
                      "cannot compare a tune result");
  expect_throw<Usage>({fixture("step_a.json"), rank_file(0)}, "give one result (bench, step or tune)");
  expect_throw<Usage>({fixture("step_a.json"), "--x", "pad"}, "--x applies to a bench sweep's chart");
  expect_throw<Usage>({fixture("step_a.json"), "--merge", "m.json"}, "--merge applies to traces, not to a step result");
  expect_throw<Usage>({fixture("tune_step_a.plan.json"), "--range", "r"}, "not to a tune result");
  expect_throw<Usage>({fixture("step_a.json"), fixture("step_b.json"), "--range", "r"},
                      "do not apply to a comparison");
  auto j = nlohmann::json::parse(read(fixture("step_a.json")));
  j["schema_version"] = "2.0.0";
  const std::string v2 = write("cco_step_v2.json", j.dump());
  expect_throw<Error>({v2}, (v2 + ": step bench schema version \"2.0.0\" is not supported").c_str());
  j = nlohmann::json::parse(read(fixture("tune_step_a.plan.json")));
  j.erase("tuning");
  expect_throw<Error>({write("cco_plan_only.json", j.dump())}, "no \"tuning\" section");
}

}  // namespace

namespace {

// A trace of 6 steps (NVTX ranges "train_step", launches inside them) on two ranks: compute
// [0, 40) and an all-reduce [30, 50) us of each step; the first 3 steps are warm-up.
std::vector<std::string> step_files() {
  std::vector<std::string> out;
  for (int r = 0; r < 2; ++r) {
    cco::trace::Trace t;
    for (int s = 0; s < 6; ++s) {
      const int64_t base = s * 1'000'000;
      auto k = K(r, 1, KernelCategory::Compute, base + 10'000, base + 50'000);
      k.submitted_ns = base + 10'000;
      auto c = K(r, 2, KernelCategory::Communication, base + 40'000, base + 60'000);
      c.submitted_ns = base + 10'000;
      t.kernels.push_back(k);
      t.kernels.push_back(c);
      cco::trace::NvtxRange x;
      x.name = "train_step";
      x.rank = r;
      x.start_ns = base + 10'000;
      x.end_ns = base + 15'000;
      t.ranges.push_back(x);
    }
    t.normalize();
    out.push_back(dir() + "cco_steps" + std::to_string(r) + ".json");
    cco::trace::write_trace_file(t, out.back());
  }
  return out;
}

}  // namespace

// The diagnosis comes first: the plain sentence, the steps, the parts of the typical step; the
// whole-trace table follows. Each step: 50 us, compute 40, exposed 10 after the last compute.
TEST(ReportCmd, StepDiagnosisFirst) {
  const auto f = step_files();
  std::string out;
  ASSERT_EQ(run({f[0], f[1]}, &out), 0);
  // The headline first (the largest part and what to try), then the full sentence.
  EXPECT_EQ(out.rfind("# Communication is exposed 10 us of this 50 us step, where nothing hides "
                      "it: try larger buckets or earlier prefetch.\n# Communication is 50% hidden "
                      "in this 0.1 ms step", 0),
            0u)
      << out;
  EXPECT_NE(out.find("# steps: NVTX ranges 'train_step': 6 found, 3 left out as warm-up, 3 per "
                     "rank analysed"),
            std::string::npos)
      << out;
  EXPECT_LT(out.find("# steps:"), out.find("# ccoverlap report: the whole trace")) << out;
  // rank 0's typical step: time 0.05, compute alone 0.04, tail 0.01 (ms)
  EXPECT_NE(out.find("    0      4      0.05           0.04           0.00           0.00           "
                     "0.00           0.01"),
            std::string::npos)
      << out;
  ASSERT_EQ(run({f[0], f[1], "--json"}, &out), 0);
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["diagnosis"]["steps"]["source"], "nvtx");
  EXPECT_EQ(j["diagnosis"]["ranks"].size(), 2u);
  EXPECT_EQ(j["diagnosis"]["ranks"][0]["typical"]["exposed_tail_ns"], 10'000);
  ASSERT_EQ(run({f[0], f[1], "--format", "csv"}, &out), 0);
  EXPECT_EQ(out.rfind("rank,step,typical,begin_ns,time_ms,compute_alone_ms,", 0), 0u) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 7) << "a header and 3 steps of 2 ranks";
  EXPECT_EQ(out.find('#'), std::string::npos);
  ASSERT_EQ(run({f[0], f[1], "--format", "md"}, &out), 0);
  EXPECT_NE(out.find("| rank | step | time | compute_alone |"), std::string::npos) << out;
  // The timeline shows the typical step by default, the whole trace with --whole.
  const std::string svg = dir() + "cco_steps.svg";
  ASSERT_EQ(run({f[0], f[1], "--svg", svg}, &out), 0);
  EXPECT_NE(out.find("# timeline written to " + svg + ": step 4 (the typical step"),
            std::string::npos)
      << out;
  EXPECT_NE(read(svg).find("ccoverlap timeline: "), std::string::npos);
  EXPECT_NE(read(svg).find(", step 4</text>"), std::string::npos);
  ASSERT_EQ(run({f[0], f[1], "--svg", svg, "--whole"}, &out), 0);
  EXPECT_NE(out.find("# timeline written to " + svg + "\n"), std::string::npos) << out;
  EXPECT_EQ(read(svg).find(", step 4</text>"), std::string::npos);
  // --steps none: the whole window as one step.
  ASSERT_EQ(run({f[0], "--steps", "none"}, &out), 0);
  EXPECT_NE(out.find("# steps: none found: the whole window"), std::string::npos) << out;
  // --alone: the same files as their own alone trace change nothing here (no compute kernel
  // overlapped communication and was slowed).
  ASSERT_EQ(run({f[0], f[1], "--alone", f[0], "--json"}, &out), 0);
  EXPECT_EQ(nlohmann::json::parse(out)["diagnosis"]["ranks"][0]["typical"]["compute_slowed_ns"], 0);
}

// cco report never overwrites an input: --merge, --svg or --json=FILE naming one (also through
// another path to it) is refused before anything is written, and the input stays as it was.
TEST(ReportCmd, NeverOverwritesAnInput) {
  const std::string in = rank_file(0);
  const std::string before = read(in);
  for (const auto& flag : {std::string("--merge"), std::string("--svg")})
    expect_throw<cco::cli::Usage>({in, flag, in}, "never overwrites its inputs");
  expect_throw<cco::cli::Usage>({in, "--json=" + in}, "never overwrites its inputs");
  const std::string other = dir() + "./" + in.substr(in.rfind('/') + 1);  // the same file
  expect_throw<cco::cli::Usage>({in, "--merge", other}, "never overwrites its inputs");
  expect_throw<cco::cli::Usage>({in, "--alone", in, "--svg", in}, "never overwrites its inputs");
  EXPECT_EQ(read(in), before);
  // An output is written whole: no temporary file is left beside it.
  const std::string svg = dir() + "cco_whole.svg";
  ASSERT_EQ(run({in, "--svg", svg}), 0);
  EXPECT_NE(read(svg).find("</svg>"), std::string::npos);
  std::FILE* f = std::fopen((svg + ".tmp." + std::to_string(::getpid())).c_str(), "r");
  EXPECT_EQ(f, nullptr);
  if (f) std::fclose(f);
}

namespace {

// What cco run writes beside its table, read back by cco report: a step file (ccoverlap.steps) as
// per-configuration medians, and a comparison (ccoverlap.run_compare) as the table cco run printed;
// the names of earlier versions (cco.steps/1, cco.compare/1) are still read.
// Rank 0 ran 2 warm-up steps under off, then off and priority by turns: off 10, 11, 12, ... ms,
// priority 4, 5, 6, ... ms; one irregular step (left out).
cco::steps::StepFile run_steps() {
  cco::steps::StepFile f;
  f.pid = 42;
  f.rank = 0;
  f.source = "marker";
  f.configs = {"off", "priority"};
  f.warmup = 2;
  for (uint64_t k = 0; k < 22; ++k) {
    cco::steps::StepTime t;
    t.step = k;
    t.config = k < 2 ? 0 : static_cast<int>((k - 2) % 2);
    const double i = static_cast<double>(k < 2 ? 0 : (k - 2) / 2);
    t.host_ms = t.gpu_ms.emplace((t.config == 0 ? 10.0 : 4.0) + i);
    t.regular = k != 21;
    f.steps.push_back(t);
  }
  return f;
}

TEST(ReportCmd, ReadsWhatCcoRunWrites) {
  using cco::cli::Usage;
  const auto f = run_steps();
  const std::string sp = write("cco_steps_rank0.json", cco::steps::to_json(f));
  std::string out;
  ASSERT_EQ(run({sp}, &out), 0);
  EXPECT_NE(out.find("# steps of rank 0: 22 steps (found from marker), GPU time per step in ms"),
            std::string::npos) << out;
  // off: 10..19 (10 steps, median 14.5); priority: 4..12, step 21 left out (9 steps, median 8).
  EXPECT_NE(out.find("\noff                                  10     14.500"), std::string::npos) << out;
  EXPECT_NE(out.find("\npriority                              9      8.000"), std::string::npos) << out;
  const auto cmp = cco::steps::compare({f});
  const std::string cp = write("cco_compare.json", cco::steps::to_json(cmp));
  ASSERT_EQ(run({cp}, &out), 0);
  EXPECT_EQ(out, cco::steps::format_report(cmp));
  EXPECT_NE(out.find("faster"), std::string::npos) << out;
  // The comparison as a chart of the paired differences with their intervals, as CSV and
  // Markdown (one row per configuration) and as JSON (the same comparison again).
  const std::string svg = dir() + "cco_compare_chart.svg";
  ASSERT_EQ(run({cp, "--svg", svg}, &out), 0);
  EXPECT_NE(out.find("# chart written to " + svg), std::string::npos) << out;
  const std::string chart = read(svg);
  EXPECT_EQ(cco::test::check_xml(chart).error, "");
  EXPECT_NE(chart.find("paired difference to off"), std::string::npos) << chart;
  EXPECT_NE(chart.find(">priority</text>"), std::string::npos) << chart;
  EXPECT_NE(chart.find("faster"), std::string::npos) << chart;
  {
    // The verdict right of the plot fits the picture: "within noise" (12 characters of 11 px
    // text, at most about 7 px each) was cut at 40 px.
    const auto w_at = chart.find("width=\"") + 7;
    const double width = std::stod(chart.substr(w_at));
    const auto v = chart.find(">faster</text>");
    const auto x_at = chart.rfind("x=\"", v) + 3;
    EXPECT_LE(std::stod(chart.substr(x_at)) + 12 * 7, width) << chart;
  }
  ASSERT_EQ(run({cp, "--format", "csv"}, &out), 0);
  EXPECT_EQ(out.rfind("config,rounds,median_ms,q1_ms,q3_ms,diff_ms,lo_ms,hi_ms,diff_pct,verdict\n", 0), 0u) << out;
  EXPECT_NE(out.find("\noff,9,"), std::string::npos) << out;
  EXPECT_NE(out.find(",baseline\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\npriority,9,"), std::string::npos) << out;
  EXPECT_NE(out.find(",faster\n"), std::string::npos) << out;
  ASSERT_EQ(run({cp, "--format=md"}, &out), 0);
  EXPECT_NE(out.find("| priority | 9 |"), std::string::npos) << out;
  ASSERT_EQ(run({cp, "--json"}, &out), 0);
  EXPECT_EQ(cco::steps::format_report(cco::steps::parse_compare(out)), cco::steps::format_report(cmp));
  // A step file, one row per step; the JSON is the file again.
  ASSERT_EQ(run({sp, "--format", "csv"}, &out), 0);
  EXPECT_EQ(out.rfind("step,config,name,host_ms,gpu_ms,regular,warmup\n", 0), 0u) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 23) << "a header and 22 steps: " << out;
  ASSERT_EQ(run({sp, "--json"}, &out), 0);
  EXPECT_EQ(cco::steps::parse_step_file(out).steps.size(), 22u);
  expect_throw<Usage>({sp, "--svg", "x.svg"}, "--svg does not apply to");
  expect_throw<Usage>({cp, "--merge", "m.json"}, "--merge does not apply to");
  expect_throw<Usage>({cp, sp}, "is read alone");
  // Malformed files of these kinds are bad input (model::Error: exit 2), like every other input.
  expect_throw<cco::model::Error>({write("cco_compare_bad.json", R"({"schema": "cco.compare/1"})")},
                                  "bad field");
  expect_throw<cco::model::Error>({write("cco_steps_v2.json", R"({"schema": "cco.steps/2"})")},
                                  "cco.steps/2 is a version this cco does not read (ccoverlap.steps 1.x)");
  expect_throw<cco::model::Error>(
      {write("cco_steps_v9.json", R"({"schema": "ccoverlap.steps", "schema_version": "9.0.0"})")},
      "ccoverlap.steps 9.0.0 is a version this cco does not read");
  {  // the names of earlier versions still read
    auto old_steps = nlohmann::json::parse(read(sp));
    old_steps["schema"] = "cco.steps/1";
    old_steps.erase("schema_version");
    ASSERT_EQ(run({write("cco_steps_old.json", old_steps.dump())}, &out), 0);
    auto old_cmp = nlohmann::json::parse(read(cp));
    old_cmp["schema"] = "cco.compare/1";
    old_cmp.erase("schema_version");
    ASSERT_EQ(run({write("cco_compare_old.json", old_cmp.dump())}, &out), 0);
    EXPECT_NE(out.find("paired difference to the first"), std::string::npos) << out;
  }
  auto steps = nlohmann::json::parse(read(sp));
  steps["steps"] = nullptr;
  expect_throw<cco::model::Error>({write("cco_steps_null.json", steps.dump())}, "steps must be an array");
  steps = nlohmann::json::parse(read(sp));
  steps["configs"] = nlohmann::json::array();
  steps["steps"][0]["config"] = 1;
  expect_throw<cco::model::Error>({write("cco_steps_nocfg.json", steps.dump())}, "names configuration 1 of 0");
  auto cmpj = nlohmann::json::parse(read(cp));
  cmpj["configs"] = nlohmann::json::array();
  expect_throw<cco::model::Error>({write("cco_compare_nocfg.json", cmpj.dump())}, "an array of 1 to 64");
  {  // a rotation stopped by its check: the summary holds the steps before the stop, and says so
    auto stopped = run_steps();
    stopped.check = cco::steps::RotationCheck{12, true, "nothing to win here", ""};
    for (auto& st : stopped.steps)
      if (st.step >= 12) st.config = 0;
    ASSERT_EQ(run({write("cco_steps_stopped.json", cco::steps::to_json(stopped))}, &out), 0);
    EXPECT_NE(out.find("# check at step 12: stopped: nothing to win here"), std::string::npos) << out;
    EXPECT_NE(out.find("# the summary holds the 12 steps before the stop; the 10 later ones ran under off alone"),
              std::string::npos) << out;
  }
  {  // what cco run writes when no comparison could be made: no configurations, the reason
    cco::steps::CompareReport refused;
    refused.refused = "no steps were found";
    ASSERT_EQ(run({write("cco_compare_refused.json", cco::steps::to_json(refused))}, &out), 0);
  }
}

}  // namespace

namespace {

// The other files cco writes read back as text (issue 34: one viewer for everything cco writes):
// a decision file (cco tune -- CMD's, or cco run --compare's check), the JSON of cco report
// itself, and a footprint report of `cco plan --json` under its former schema name.
TEST(ReportCmd, ReadsTheOtherFilesCcoWrites) {
  using cco::cli::Usage;
  cco::steps::TuneFile t;
  t.epoch = 1;
  t.candidates = {"off", "priority"};
  t.warmup = 5;
  t.decider.rank = 0;
  t.decider.device_name = "NVIDIA H200";
  t.decider.sms = 132;
  t.stages = {cco::steps::Stage{5, 2, 6}};
  cco::steps::Decision d;
  d.stage = 1;
  d.at_step = 17;
  d.set = {0};
  d.final = true;
  d.why = "nothing to win here: below the noise";
  t.decisions = {d};
  t.diagnosis = "Communication is 98% hidden in this 182 ms step";
  std::string out;
  ASSERT_EQ(run({write("cco_check.json", cco::steps::to_json(t))}, &out), 0);
  EXPECT_NE(out.find("2 candidates, warm-up 5 steps, epoch 1; decided by rank 0 on NVIDIA H200 (132 SMs)"),
            std::string::npos) << out;
  EXPECT_NE(out.find("at step 17: final, runs: off (nothing to win here: below the noise)"),
            std::string::npos) << out;
  EXPECT_NE(out.find("# diagnosis of candidate 0's first steps: Communication is 98% hidden"),
            std::string::npos) << out;
  auto bad = nlohmann::json::parse(cco::steps::to_json(t));
  bad["schema_version"] = "2.0.0";
  expect_throw<cco::model::Error>({write("cco_check_v2.json", bad.dump())},
                                  "ccoverlap.tune_decision 2.0.0 is a version this cco does not read");
  bad = nlohmann::json::parse(cco::steps::to_json(t));
  bad.erase("decisions");
  expect_throw<cco::model::Error>({write("cco_check_bad.json", bad.dump())}, "cco_check_bad.json");

  // cco report --json of two traces, read back: the sentence and the per-rank table.
  const std::string analysis = dir() + "cco_analysis.json";
  ASSERT_EQ(run({rank_file(0), rank_file(1), "--json=" + analysis}, &out), 0);
  ASSERT_EQ(run({analysis}, &out), 0);
  EXPECT_NE(out.find("(ccoverlap.trace_analysis, " + analysis + "): the analysis of 2 input(s)"),
            std::string::npos) << out;
  EXPECT_NE(out.find("\nCommunication is "), std::string::npos) << out;
  EXPECT_NE(out.find("#rank  span  compute_busy  comm_busy  overlapped  exposed_comm"),
            std::string::npos) << out;
  EXPECT_NE(out.find("\n 1     0.15  0.1           0.05       0           0.05\n"), std::string::npos) << out;
  expect_throw<Usage>({analysis, "--format", "csv"}, "--format does not apply to");
  expect_throw<Usage>({analysis, rank_file(0)}, "is read alone");

  // A footprint report under the former name (it shared "ccoverlap.plan" with run plans).
  const std::string fp = write("cco_footprint_old.json", R"({"schema": "ccoverlap.plan",
    "schema_version": "1.0.0", "arch": "sm_90", "device": "H100", "sm_count": 132,
    "footprint": {"threads": 256, "regs": 32, "static_smem": 0, "dynamic_smem": 0},
    "occupancy": {"blocks_per_sm": 8, "limiter": "registers"},
    "plans": [{"target_blocks_per_sm": 4, "pad_bytes": 28928}]})");
  ASSERT_EQ(run({fp}, &out), 0);
  EXPECT_NE(out.find("# blocks per SM: 8 (limited by registers)"), std::string::npos) << out;
  EXPECT_NE(out.find(" 28928  "), std::string::npos) << out;
}

// The kernels by total time: rank 0 and 1 each ran the GEMM 100 us, the all-reduce 40 us (rank
// 0) and 50 us (rank 1): two kinds, the GEMM first (200 us over 2), then the all-reduce (90 us,
// the upper middle of 40 and 50: 50 us); on SMs both.
TEST(ReportCmd, KernelsByTotalTime) {
  std::string out;
  ASSERT_EQ(run({rank_file(0), rank_file(1)}, &out), 0);
  EXPECT_NE(out.find("# kernels by total time (all ranks, the window; 2 kinds)"), std::string::npos) << out;
  const auto gemm = out.find("     0.200       2       100.0  SMs          compute");
  const auto ar = out.find("     0.090       2        50.0  SMs          communication");
  ASSERT_NE(gemm, std::string::npos) << out;
  ASSERT_NE(ar, std::string::npos) << out;
  EXPECT_LT(gemm, ar) << "largest total first";
  const std::string jf = dir() + "cco_kernels.json";
  ASSERT_EQ(run({rank_file(0), rank_file(1), "--json=" + jf}, &out), 0);
  const auto j = nlohmann::json::parse(cco::model::read_file(jf, 1 << 20));
  ASSERT_EQ(j.at("kernels").size(), 2u);
  EXPECT_EQ(j["kernels"][0]["total_ns"], 200'000);
  EXPECT_EQ(j["kernels"][1]["kind"], "communication");
  EXPECT_EQ(j["kernels"][1]["on"], "SMs");
  // A window cuts the kernels in it: [0, 30 us) holds 30 us of each GEMM and 10 us of rank 0's
  // all-reduce.
  ASSERT_EQ(run({rank_file(0), rank_file(1), "--to", "30"}, &out), 0);
  EXPECT_NE(out.find("     0.060       2        30.0  SMs          compute"), std::string::npos) << out;
  EXPECT_NE(out.find("     0.010       1        10.0  SMs          communication"), std::string::npos) << out;
  // --kernels: the breakdown alone, every group, as text, CSV, Markdown or JSON.
  ASSERT_EQ(run({rank_file(0), rank_file(1), "--kernels", "--format", "csv"}, &out), 0);
  EXPECT_EQ(out,
            "name,kind,on,count,total_ms,median_us,bytes\n"
            "gemm,compute,SMs,2,0.200,100.0,\n"
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL,communication,SMs,2,0.090,50.0,\n");
  ASSERT_EQ(run({rank_file(0), rank_file(1), "--kernels", "--format=md"}, &out), 0);
  EXPECT_NE(out.find("| ncclDevKernel_AllReduce_Sum_f32_RING_LL | communication | SMs | 2 | 0.090 | 50.0 |  |"),
            std::string::npos) << out;
  ASSERT_EQ(run({rank_file(0), rank_file(1), "--kernels"}, &out), 0);
  EXPECT_EQ(out.rfind("# kernels by total time (all ranks, the window; 2 kinds)\n", 0), 0u) << out;
  EXPECT_EQ(out.find("Communication is"), std::string::npos) << "--kernels prints the breakdown alone";
  ASSERT_EQ(run({rank_file(0), rank_file(1), "--kernels", "--json"}, &out), 0);
  EXPECT_EQ(nlohmann::json::parse(out).size(), 2u);
  expect_throw<cco::cli::Usage>({CCO_BENCH_EXAMPLE, "--kernels"}, "--kernels apply to traces");
  // A window with no kernel: said, not a crash (review); the tables keep their header.
  ASSERT_EQ(run({rank_file(0), "--kernels", "--from", "100000"}, &out), 0);
  EXPECT_EQ(out, "# no kernels in the window\n");
  ASSERT_EQ(run({rank_file(0), "--kernels", "--from", "100000", "--format", "csv"}, &out), 0);
  EXPECT_EQ(out, "name,kind,on,count,total_ms,median_us,bytes\n");
}

}  // namespace
