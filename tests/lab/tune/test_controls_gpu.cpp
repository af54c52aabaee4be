// The resource controls do what they claim, seen in a CUPTI trace of a real `cco bench` run:
// NCCL's CTA budget (minCTAs = maxCTAs) is the grid of every NCCL kernel, and a cuBLASLt SM-count
// target changes the GEMM launches (the grids are printed; which kernels honour a target is
// cuBLASLt's choice, so only the NCCL count is asserted exactly).
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>

#include "bench/runner.hpp"
#include "trace/format.hpp"
#include "runtime/device.hpp"

using namespace cco;

namespace {

std::string temp_trace(const std::string& tag) {
  return (std::filesystem::temp_directory_path() /
          ("cco-controls-" + tag + "-" + std::to_string(::getpid()) + ".json"))
      .string();
}

trace::Trace traced_bench(std::vector<std::string> args, const std::string& tag) {
  const auto path = temp_trace(tag);
  args.insert(args.end(), {"--trace", path, "-q"});
  auto o = bench::parse_options(args);
  std::ostringstream progress;
  const auto rep = bench::run(o, [](const bench::Report&, std::size_t) {}, progress);
  unsigned long long wrong = 0;
  for (const auto& r : rep.rows) wrong += r.wrong;
  EXPECT_EQ(wrong, 0u) << tag;
  auto t = trace::read_trace_file(path);
  std::filesystem::remove(path);
  return t;
}

std::set<unsigned> nccl_grids(const trace::Trace& t) {
  std::set<unsigned> g;
  for (const auto& k : t.kernels)
    if (k.name.rfind("ncclDevKernel", 0) == 0 || k.name.rfind("ncclKernel", 0) == 0)
      g.insert(k.grid.x * k.grid.y * k.grid.z);
  return g;
}

}  // namespace

TEST(Controls, NcclCtaBudgetIsTheGridOfEveryNcclKernel) {
  const int n = std::min(2, rt::device_count());
  if (n < 2) GTEST_SKIP() << "needs 2 GPUs (NCCL runs no kernel on one rank)";
  for (int ctas : {4, 8, 32}) {
    const auto t = traced_bench({"bench", "-g", "2", "--compute", "membound", "--mem-bytes", "64M",
                                 "-b", "32M", "-n", "3", "-w", "1", "--modes", "seq,concurrent",
                                 "-c", "1", "--nccl-min-ctas", std::to_string(ctas), "--nccl-max-ctas",
                                 std::to_string(ctas)},
                                "ctas" + std::to_string(ctas));
    const auto grids = nccl_grids(t);
    ASSERT_FALSE(grids.empty()) << "no NCCL kernel in the trace";
    EXPECT_EQ(grids, (std::set<unsigned>{static_cast<unsigned>(ctas)}))
        << "NCCL kernels ran with other grids than the CTA budget " << ctas;
  }
}

TEST(Controls, CublasLtSmTargetChangesTheGemmLaunches) {
  const int n = std::min(2, rt::device_count());
  if (n < 2) GTEST_SKIP() << "needs 2 GPUs";
  auto gemm_grids = [](const trace::Trace& t) {
    std::multiset<unsigned> g;
    for (const auto& k : t.kernels)
      if (k.name.find("cco::") == std::string::npos &&
          (k.name.find("nvjet") != std::string::npos || k.name.find("gemm") != std::string::npos ||
           k.name.find("cutlass") != std::string::npos || k.name.find("xmma") != std::string::npos))
        g.insert(k.grid.x * k.grid.y * k.grid.z);
    return g;
  };
  const std::vector<std::string> base = {"bench", "-g", "2", "--gemm", "4096", "--count", "2", "-b",
                                         "16M", "-n", "3", "-w", "1", "--modes", "seq,concurrent"};
  auto all = base;
  auto target = base;
  target.insert(target.end(), {"--gemm-sms", "66"});
  const auto g_all = gemm_grids(traced_bench(all, "sms-all"));
  const auto g_66 = gemm_grids(traced_bench(target, "sms-66"));
  ASSERT_FALSE(g_all.empty());
  ASSERT_FALSE(g_66.empty());
  std::ostringstream s;
  s << "GEMM grids, all SMs: max " << *g_all.rbegin() << ", SM target 66: max " << *g_66.rbegin();
  std::cout << s.str() << std::endl;
  RecordProperty("grids", s.str());
  EXPECT_NE(g_all, g_66) << "an SM-count target of 66 of 132 left every GEMM launch unchanged";
}

// Registered buffers (ncclCommRegister, or a symmetric window) must give the same answers under
// overlap as plain ones; which kernels NCCL then runs is its choice, so they are printed.
TEST(Controls, RegisteredBuffersKeepEveryAnswer) {
  const int n = std::min(2, rt::device_count());
  if (n < 2) GTEST_SKIP() << "needs 2 GPUs";
  for (const char* coll : {"allreduce", "reducescatter", "allgather"})
    for (const char* reg : {"none", "buffer", "window"}) {
      const std::string tag = std::string(coll) + "-" + reg;
      const auto t = traced_bench({"bench", "-g", "2", "--compute", "membound", "--mem-bytes", "64M",
                                   "-b", "64M", "-d", "bfloat16", "--collective", coll, "-n", "3",
                                   "-w", "1", "--modes", "seq,concurrent,priority", "-c", "1",
                                   "--nccl-register", reg},
                                  tag);
      std::set<std::string> names;
      for (const auto& k : t.kernels)
        if (k.name.find("nccl") != std::string::npos || k.name.find("Sym") != std::string::npos)
          names.insert(k.name.substr(0, 60));
      ASSERT_FALSE(names.empty()) << tag << ": no NCCL kernel in the trace";
      std::cout << tag << ":";
      for (const auto& s : names) std::cout << " " << s;
      std::cout << std::endl;
    }
}

// NCCL's CTA policies as rows (issue 18): a policy that cannot apply is refused per row with the
// reason and the other rows run; a policy that runs is verified and its path is probed in a
// trace ("sm" or "copy-engine", never "unknown" where CUPTI works). One GPU is enough for the
// option handling, the refusals, the probe and the new collectives' answers.
namespace {
bench::Report quiet_bench(std::vector<std::string> args) {
  args.push_back("-q");
  auto o = bench::parse_options(args);
  std::ostringstream progress;
  return bench::run(o, [](const bench::Report&, std::size_t) {}, progress);
}
bool has_note(const bench::Report& r, const std::string& needle) {
  return std::any_of(r.notes.begin(), r.notes.end(),
                     [&](const std::string& n) { return n.find(needle) != std::string::npos; });
}
}  // namespace

TEST(CtaPolicy, ARowThatWouldRunOnSmsIsRefusedAndTheOthersRun) {
  if (rt::device_count() < 1) GTEST_SKIP() << "needs a GPU";
  const auto rep = quiet_bench({"bench", "-g", "1", "--compute", "membound", "--mem-bytes", "16M",
                                "-b", "8M", "-n", "3", "-w", "1", "--modes", "seq,concurrent", "-c",
                                "1", "--collective", "reducescatter", "--nccl-cta-policy", "default,zero"});
  ASSERT_EQ(rep.rows.size(), 2u) << "seq and concurrent on the default policy; zero refused";
  for (const auto& r : rep.rows) {
    EXPECT_FALSE(r.spec.controls.cta_policy);
    EXPECT_EQ(r.cta_policy, model::CtaPolicy::Default) << "the run's own communicator has policy default";
    EXPECT_EQ(r.wrong, 0u);
    ASSERT_TRUE(r.comm_path.is_object()) << "a set policy is probed";
    EXPECT_NE(r.comm_path["path"], "unknown") << r.comm_path.dump();
  }
  EXPECT_TRUE(has_note(rep, "row 'concurrent reg=window cta=zero' skipped: CTA policy zero"))
      << "the refusal names the row and the reason";
  // The run's own policy cannot be refused row by row: one usage error.
  try {
    quiet_bench({"bench", "-g", "1", "-b", "1M", "-n", "1", "-w", "0", "--nccl-cta-policy", "zero"});
    FAIL() << "zero on an all-reduce must be refused";
  } catch (const bench::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("allreduce would run on SMs"), std::string::npos) << e.what();
  }
}

TEST(CtaPolicy, CopyEngineCollectivesRunVerifiedUnderEveryPolicy) {
  if (rt::device_count() < 1) GTEST_SKIP() << "needs a GPU";
  for (const char* coll : {"allgather", "alltoall", "gather", "scatter"}) {
    const auto rep = quiet_bench({"bench", "-g", "1", "--compute", "membound", "--mem-bytes", "16M",
                                  "-b", "8M", "-n", "3", "-w", "1", "--modes", "seq,concurrent",
                                  "-c", "1", "--collective", coll, "--nccl-cta-policy",
                                  "default,efficiency,zero"});
    ASSERT_EQ(rep.rows.size(), 4u) << coll << ": seq, concurrent, and concurrent per further policy";
    EXPECT_EQ(rep.rows[3].spec.label(), "concurrent reg=window cta=zero") << coll;
    EXPECT_EQ(rep.rows[3].cta_policy, model::CtaPolicy::Zero);
    EXPECT_EQ(rep.rows[2].cta_policy, model::CtaPolicy::Efficiency);
    for (const auto& r : rep.rows) {
      EXPECT_TRUE(r.checked);
      EXPECT_EQ(r.wrong, 0u) << coll << " " << r.spec.label();
      ASSERT_TRUE(r.comm_path.is_object()) << coll;
      EXPECT_NE(r.comm_path["path"], "unknown") << coll << " " << r.comm_path.dump();
      std::cout << coll << " " << r.spec.label() << ": " << r.comm_path.dump() << std::endl;
    }
    if (std::string(coll) == "alltoall") {
      EXPECT_TRUE(has_note(rep, "one ncclAlltoAll call in every row"));
    }
  }
}

// Zero on an all-reduce: the row runs it split (reduce-scatter on SMs, in-place all-gather on a
// zero-CTA communicator into a window), and the answers stay exact.
TEST(CtaPolicy, AllReduceUnderZeroRunsSplitAndVerified) {
  if (rt::device_count() < 1) GTEST_SKIP() << "needs a GPU";
  for (const char* op : {"sum", "max"}) {
    const auto rep = quiet_bench({"bench", "-g", std::to_string(std::min(2, rt::device_count())),
                                  "--compute", "membound", "--mem-bytes", "16M", "-b", "8M", "-n",
                                  "3", "-w", "1", "--modes", "seq,concurrent,priority", "-c", "1",
                                  "-d", "bfloat16", "-o", op, "--nccl-cta-policy", "default,zero"});
    ASSERT_EQ(rep.rows.size(), 5u) << op;
    EXPECT_EQ(rep.rows[3].spec.label(), "concurrent reg=window cta=zero");
    for (const auto& r : rep.rows) EXPECT_EQ(r.wrong, 0u) << op << " " << r.spec.label();
    EXPECT_NE(rep.rows[3].comm_path.value("path", std::string()), "unknown");
    EXPECT_TRUE(has_note(rep, "allreduce under cta=zero runs split"));
    std::cout << op << " split: " << rep.rows[3].comm_path.dump() << std::endl;
  }
}

TEST(CtaPolicy, ZeroRunsAllGatherWithoutNcclKernels) {
  if (rt::device_count() < 2) GTEST_SKIP() << "needs 2 GPUs (one rank's NCCL copies locally)";
  const auto rep = quiet_bench({"bench", "-g", "2", "--compute", "membound", "--mem-bytes", "64M",
                                "-b", "64M", "-n", "3", "-w", "1", "--modes", "seq,concurrent", "-c",
                                "1", "--collective", "allgather", "--nccl-cta-policy", "default,zero"});
  ASSERT_EQ(rep.rows.size(), 3u);
  EXPECT_EQ(rep.rows[1].comm_path["path"], "sm") << rep.rows[1].comm_path.dump();
  EXPECT_EQ(rep.rows[2].comm_path["path"], "copy-engine") << rep.rows[2].comm_path.dump();
  for (const auto& r : rep.rows) EXPECT_EQ(r.wrong, 0u);
}
