// Training steps on GPUs: every shipped workload measured with -c on 2 GPUs (and, smaller, on 1),
// the built-in GEMM with shape modes, the executor's verification catching an op that ran before
// its input was ready, memory refusal before anything runs, and --trace on a step.
#include <gtest/gtest.h>
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bench/workload_bench.hpp"
#include "runtime/check.hpp"
#include "runtime/comm.hpp"
#include "runtime/device.hpp"
#include "trace/format.hpp"
#include "kernels/workload_exec.hpp"

namespace {

using namespace cco;

std::string workload(const std::string& name) {
  return std::string(CCO_WORKLOADS_DIR) + "/" + name;
}

bench::StepReport run(std::vector<std::string> args) {
  args.insert(args.begin(), "bench");
  const auto o = bench::parse_step_options(args);
  std::ostringstream progress;
  return bench::run_step(o, progress);
}

/// Every row verified with no wrong element, every figure present and consistent.
void expect_ok(const bench::StepReport& r, std::size_t min_rows, int iters) {
  ASSERT_GE(r.rows.size(), min_rows);
  EXPECT_TRUE(r.checked);
  for (const auto& row : r.rows) {
    EXPECT_EQ(row.wrong, 0u) << r.step.name << " " << row.spec.label();
    EXPECT_EQ(row.t.samples.size(), static_cast<std::size_t>(iters)) << row.spec.label();
    EXPECT_GT(row.t.median(), 0.0);
  }
  for (const auto& op : r.ops) {
    EXPECT_EQ(op.wrong, 0u) << r.step.name << " op " << op.id;
    EXPECT_EQ(op.alone.samples.size(), static_cast<std::size_t>(iters));
  }
  ASSERT_EQ(r.t_ideal.samples.size(), static_cast<std::size_t>(iters));
  for (std::size_t j = 0; j < r.t_ideal.samples.size(); ++j) {
    // The ideal schedule runs each stream serially: at least each stream's sum, at most both.
    EXPECT_GE(r.t_ideal.samples[j] + 1e-6, std::max(r.t_comp.samples[j], r.t_comm.samples[j]));
    EXPECT_LE(r.t_ideal.samples[j], r.t_comp.samples[j] + r.t_comm.samples[j] + 1e-6);
  }
  EXPECT_GT(r.t_seq.median(), 0.0);
  const std::string table = bench::format_step_report(r);
  EXPECT_NE(table.find("Out of bounds values : 0 OK"), std::string::npos) << table;
}

// --trace on a step (as on a pair): every kernel of the run, a mark at the last run of each slot
// and the NVTX range of every run, in a file cco report reads. First in the file (gtest keeps a
// file's order): NVTX attaches a tool at its first call in the process, so ranges are recorded
// only when the trace starts before any run has opened one (as in `cco bench --trace`).
TEST(StepTrace, RecordsTheKernelsMarksAndRanges) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("cco-step-trace-" + std::to_string(getpid()) + ".json");
  const auto r = run({"--workload", workload("ddp_llama7b.json"), "-g", "1", "-n", "2", "-w", "1",
                      "--param", "layers=1", "--modes", "seq,concurrent", "--trace",
                      path.string(), "-q"});
  expect_ok(r, 2, 2);
  bool noted = false;
  for (const auto& n : r.notes) noted = noted || n.rfind("trace: ", 0) == 0;
  EXPECT_TRUE(noted) << "the report says where the trace went";
  const auto t = trace::read_trace_file(path.string());
  // Every op ran alone, in seq and in concurrent, (1 + 2) iterations each: at least one kernel
  // per op that launches one, three times over.
  EXPECT_GE(t.kernels.size(), 3 * r.ops.size() / 2) << "kernels: " << t.kernels.size();
  std::set<std::string> marks, ranges;
  for (const auto& m : t.marks) marks.insert(m.name);
  for (const auto& g : t.ranges) ranges.insert(g.name);
  EXPECT_TRUE(marks.count("seq")) << "no mark for seq";
  EXPECT_TRUE(marks.count("concurrent")) << "no mark for concurrent";
  EXPECT_TRUE(marks.count(r.ops.front().id + " alone")) << "no mark for the first op alone";
  EXPECT_TRUE(ranges.count("seq, iteration 2")) << "no NVTX range for seq's last run";
  std::filesystem::remove(path);
}

class Shipped : public ::testing::TestWithParam<std::string> {};

TEST_P(Shipped, VerifiedOnTwoGpus) {
  if (rt::device_count() < 2) GTEST_SKIP() << "needs 2 GPUs";
  // Default sizes; shape modes on the memory-bound ops with two targets to bound the run time.
  const auto r = run({"--workload", workload(GetParam()), "-g", "2", "-n", "3", "-w", "1", "-c",
                      "1", "--blocks-per-sm", "1,4", "-q"});
  expect_ok(r, 3 + 4, 3);  // seq, concurrent, priority, shape k=1,4, shape+priority k=1,4
  std::printf("%s\n", bench::format_step_report(r).c_str());
}

TEST_P(Shipped, VerifiedOnOneGpuSmall) {
  const auto r = run({"--workload", workload(GetParam()), "-g", "1", "-n", "2", "-w", "0", "-c",
                      "1", "--param", "layers=1", "--modes", "seq,concurrent,priority", "-q"});
  expect_ok(r, 3, 2);
}

INSTANTIATE_TEST_SUITE_P(Step, Shipped,
                         ::testing::Values("ddp_llama7b.json", "ddp_llama13b.json",
                                           "fsdp_llama7b.json", "tp_llama7b.json",
                                           "moe_mixtral.json"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           n = n.substr(0, n.find('.'));
                           return n;
                         });

// The zero-CTA policy as rows of a step (issue 18, item 2): the MoE step's all-to-alls and the
// FSDP and TP steps' all-gathers on zero-CTA communicators, the arena one symmetric window; every
// row verified. A step without an all-gather or all-to-all (DDP) refuses the rows with the reason.
TEST(StepBench, ZeroCtaRowsVerifiedWhereTheStepHasCopyEngineCollectives) {
  const int n = std::min(2, rt::device_count());
  for (const char* w : {"moe_mixtral.json", "fsdp_llama7b.json", "tp_llama7b.json"}) {
    const auto r = run({"--workload", workload(w), "-g", std::to_string(n), "-n", "2", "-w", "1",
                        "-c", "1", "--param", "layers=1", "--modes", "seq,concurrent,priority",
                        "--nccl-cta-policy", "default,zero", "-q"});
    expect_ok(r, 5, 2);  // seq, concurrent, priority, and the two again under zero
    ASSERT_EQ(r.rows.size(), 5u) << w;
    EXPECT_EQ(r.rows[3].spec.label(), "concurrent reg=window cta=zero") << w;
    // The path probe (issue 18): each communicator whose policy was set (the run's own default,
    // the zero variant) runs the step's collectives once per kind, each path known; across GPUs
    // the zero communicator's all-gathers and all-to-alls leave the SMs, the default's do not.
    bool zero_probed = false;
    for (const auto& p : r.comm_paths) {
      const std::string policy = p.at("cta_policy"), coll = p.at("collective");
      EXPECT_TRUE(policy == "zero" || policy == "default") << w << " " << p.dump();
      zero_probed = zero_probed || policy == "zero";
      const std::string path = p.value("path", std::string("unknown"));
      EXPECT_TRUE(path == "sm" || path == "copy-engine") << w << " " << p.dump();
      if (n > 1 && (coll == "allgather" || coll == "alltoall")) {
        EXPECT_EQ(path, policy == "zero" ? "copy-engine" : "sm") << w << " " << p.dump();
      }
    }
    EXPECT_TRUE(zero_probed) << w << " " << r.comm_paths.dump();
    EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& x) {
      return x.find("collective cta=zero, the step's ") != std::string::npos;
    })) << w;
    EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& x) {
      return x.find("cta=zero rows: the step's all-gathers and all-to-alls") != std::string::npos;
    })) << w;
  }
  const auto ddp = run({"--workload", workload("ddp_llama7b.json"), "-g", std::to_string(n), "-n",
                        "2", "-w", "0", "-c", "1", "--param", "layers=1", "--modes",
                        "seq,concurrent", "--nccl-cta-policy", "default,zero", "-q"});
  ASSERT_EQ(ddp.rows.size(), 2u) << "the zero row of a step without copy-engine collectives is refused";
  EXPECT_TRUE(std::any_of(ddp.notes.begin(), ddp.notes.end(), [](const std::string& x) {
    return x.find("skipped: CTA policy zero: the step has no all-gather or all-to-all") != std::string::npos;
  }));
}

// The run-wide budgets of pairs on a step (issue 17, item 4): every cuBLASLt GEMM under an
// SM-count target, the arena registered (buffer, window) with every communicator; every run
// verified. The target has the effect it claims: the TP step's GEMMs alone take longer on a
// quarter of the SMs than on all of them (measured in the same process, medians of 5).
TEST(StepBench, RunWideGemmSmsAndRegistrationVerified) {
  const int n = std::min(2, rt::device_count());
  const int sms = rt::device_info(0).limits.sm_count;
  auto gemm_alone_us = [](const bench::StepReport& r) {
    double t = 0;
    for (std::size_t i = 0; i < r.ops.size(); ++i)
      if (r.step.ops[i].kind == workload::OpKind::Gemm) t += r.ops[i].alone.median();
    return t;
  };
  std::vector<std::string> base = {"--workload", workload("tp_llama7b.json"), "-g", std::to_string(n),
                                   "-n", "5", "-w", "1", "-c", "1", "--param", "layers=1",
                                   "--modes", "seq,concurrent", "-q"};
  auto with = [&](std::vector<std::string> extra) {
    auto a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return run(a);
  };
  const auto all = with({});
  expect_ok(all, 2, 5);
  const auto quarter = with({"--gemm-sms", std::to_string(sms / 4), "--nccl-register", "buffer"});
  expect_ok(quarter, 2, 5);
  EXPECT_EQ(quarter.config.at("gemm_sms"), sms / 4);
  EXPECT_EQ(quarter.config.at("nccl_register"), "buffer");
  EXPECT_TRUE(std::any_of(quarter.notes.begin(), quarter.notes.end(), [](const std::string& x) {
    return x.find("registered with every communicator: buffer") != std::string::npos;
  }));
  EXPECT_GT(gemm_alone_us(quarter), 1.5 * gemm_alone_us(all))
      << "an SM-count target of " << sms / 4 << " of " << sms << " SMs must slow the GEMMs";
  const auto window = with({"--nccl-register", "window"});
  expect_ok(window, 2, 5);
  // A step with built-in GEMMs only has nothing for the target to act on: refused.
  EXPECT_THROW(with({"--param", "gemm=builtin", "--gemm-sms", "66"}), bench::UsageError);
  EXPECT_THROW(with({"--gemm-sms", std::to_string(sms + 1)}), bench::UsageError);
}

TEST(StepBench, BuiltinGemmShapedOnTwoGpus) {
  const int n = std::min(2, rt::device_count());
  const auto r = run({"--workload", workload("tp_llama7b.json"), "-g", std::to_string(n), "-n", "2",
                      "-w", "1", "--param", "gemm=builtin", "--param", "layers=1", "--param",
                      "seq_len=1024", "--blocks-per-sm", "1,2", "-q"});
  expect_ok(r, 3 + 4, 2);
  bool gemm_shaped = false;
  for (const auto& row : r.rows)
    gemm_shaped = gemm_shaped || row.shaping.find("builtin gemm") != std::string::npos;
  EXPECT_TRUE(gemm_shaped);
}

TEST(StepBench, RefusedBeforeRunningWhenOverMemory) {
  // 13B with 400 layers and snapshots: terabytes.
  try {
    run({"--workload", workload("ddp_llama13b.json"), "-g", "1", "--param", "layers=400", "-q"});
    ADD_FAILURE() << "not refused";
  } catch (const workload::StepError& e) {
    EXPECT_NE(std::string(e.what()).find("the step needs"), std::string::npos) << e.what();
    EXPECT_GT(e.pos().line, 0);
  }
}

TEST(StepBench, UncheckableReductionRefusedWithMinusC) {
  // A file with prod written to the build tree's temp directory.
  const std::string path = testing::TempDir() + "/prod.json";
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(R"({"schema": "ccoverlap.workload", "schema_version": "1.0.0", "name": "p",
  "ops": [{"id": "ar", "kind": "allreduce", "bytes": 1024, "op": "prod"}]})",
             f);
  std::fclose(f);
  EXPECT_THROW(run({"--workload", path, "-g", "1", "-n", "1", "-w", "0", "-q"}), workload::StepError);
  EXPECT_NO_THROW(run({"--workload", path, "-g", "1", "-n", "1", "-w", "0", "-c", "0", "-q"}));
}

// ---- the executor on its own -----------------------------------------------------------------

const char* kFlow = R"({
  "schema": "ccoverlap.workload", "schema_version": "1.0.0", "name": "flow",
  "buffers": [{"name": "x", "dtype": "bfloat16", "elements": 65536}],
  "ops": [
    {"id": "ag", "kind": "allgather", "elements": 65536, "recv": "x"},
    {"id": "g", "kind": "gemm", "m": 256, "n": 128, "k": 256, "a": "x", "after": ["ag"]},
    {"id": "h", "kind": "gemm", "m": 128, "n": 128, "k": 128, "engine": "builtin"},
    {"id": "n", "kind": "elementwise", "bytes": 1048576},
    {"id": "ar", "kind": "allreduce", "elements": 4096, "after": ["h"]}
  ]
})";

class OneRank : public ::testing::Test {
 protected:
  void SetUp() override {
    CCO_CUDA_CHECK(cudaSetDevice(0));
    workload::StepLoadOptions lo;
    lo.nranks = 1;
    step_ = workload::parse_step(kFlow, "flow.json", lo);
    const auto id = rt::make_unique_id();
    comm_ = std::make_unique<rt::Comm>(id, 1, 0, rt::CommConfig{});
    ex_ = std::make_unique<wl::StepExec>(step_, *comm_);
    CCO_CUDA_CHECK(cudaStreamCreateWithFlags(&a_, cudaStreamNonBlocking));
    CCO_CUDA_CHECK(cudaStreamCreateWithFlags(&b_, cudaStreamNonBlocking));
    ex_->enqueue_seq(a_);
    CCO_CUDA_CHECK(cudaStreamSynchronize(a_));
    ex_->snapshot(a_);
  }
  void TearDown() override {
    ex_.reset();
    comm_.reset();
    cudaStreamDestroy(a_);
    cudaStreamDestroy(b_);
  }
  unsigned long long total(const std::vector<unsigned long long>& w) {
    unsigned long long t = 0;
    for (auto x : w) t += x;
    return t;
  }
  workload::Step step_;
  std::unique_ptr<rt::Comm> comm_;
  std::unique_ptr<wl::StepExec> ex_;
  cudaStream_t a_ = nullptr, b_ = nullptr;
};

TEST_F(OneRank, SeqAndStreamsReproduceTheSnapshot) {
  EXPECT_EQ(total(ex_->verify(true, a_)), 0u);  // also the naive reference, once per shape
  for (int rep = 0; rep < 3; ++rep) {
    ex_->poison(a_);
    ex_->enqueue_streams(a_, b_);
    EXPECT_EQ(total(ex_->verify(false, a_)), 0u);
  }
  ex_->set_extra_smem_for_kernel(ex_->kernel(static_cast<std::size_t>(step_.find_op("n"))),
                                 64 << 10);
  ex_->set_extra_smem(static_cast<std::size_t>(step_.find_op("h")), 32 << 10);
  ex_->poison(a_);
  ex_->enqueue_streams(a_, b_);
  EXPECT_EQ(total(ex_->verify(false, a_)), 0u);  // shaping never changes an answer
}

TEST_F(OneRank, CatchesAnOpThatDidNotWaitForItsInput) {
  ex_->poison(a_);
  // g alone, without its all-gather: it reads the poisoned x and must differ from the snapshot.
  ex_->enqueue_op(static_cast<std::size_t>(step_.find_op("g")), a_);
  const auto w = ex_->verify(false, a_);
  EXPECT_GT(w[static_cast<std::size_t>(step_.find_op("g"))], 0u);
  EXPECT_GT(w[static_cast<std::size_t>(step_.find_op("ag"))], 0u);  // never ran: still poisoned
  EXPECT_GT(w[static_cast<std::size_t>(step_.find_op("n"))], 0u);
  EXPECT_GT(w[static_cast<std::size_t>(step_.find_op("ar"))], 0u);
}

TEST_F(OneRank, PaddingOnlyForOurKernels) {
  EXPECT_TRUE(ex_->shapeable(static_cast<std::size_t>(step_.find_op("h"))));
  EXPECT_TRUE(ex_->shapeable(static_cast<std::size_t>(step_.find_op("n"))));
  EXPECT_FALSE(ex_->shapeable(static_cast<std::size_t>(step_.find_op("g"))));  // cuBLASLt
  EXPECT_THROW(ex_->set_extra_smem(static_cast<std::size_t>(step_.find_op("g")), 1024),
               model::Error);
  EXPECT_NO_THROW(ex_->set_extra_smem(static_cast<std::size_t>(step_.find_op("g")), 0));
  EXPECT_EQ(ex_->arena_bytes(), workload::layout_step(step_, true).total);
}

TEST(StepExecTest, RanksMustMatch) {
  CCO_CUDA_CHECK(cudaSetDevice(0));
  workload::StepLoadOptions lo;
  lo.nranks = 2;
  const auto step = workload::parse_step(kFlow, "flow.json", lo);
  rt::Comm comm(rt::make_unique_id(), 1, 0, rt::CommConfig{});
  EXPECT_THROW(wl::StepExec(step, comm), model::Error);
}

}  // namespace
