// `cco bench --workload` without a GPU: option parsing and the three renderings of a made-up
// report (table, JSON schema ccoverlap.step_bench 1.0.0, CSV).
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "bench/workload_bench.hpp"

namespace {

using namespace cco;

const char* kDoc = R"({
  "schema": "ccoverlap.workload", "schema_version": "1.0.0", "name": "tiny",
  "parameters": {"layers": 2},
  "ops": [
    {"id": "g", "kind": "gemm", "m": 64, "n": 64, "k": 64, "engine": "builtin"},
    {"id": "ar", "kind": "allreduce", "bytes": 1024, "after": ["g"]},
    {"id": "n", "kind": "norm", "bytes": 4096}
  ]
})";

bench::StepReport made_up() {
  bench::StepReport r;
  workload::StepLoadOptions lo;
  lo.nranks = 2;
  lo.overrides = {{"layers", "3"}};
  r.step = workload::parse_step(kDoc, "tiny.json", lo);
  r.argv = {"bench", "--workload", "tiny.json"};
  r.date = "2026-01-01T00:00:00Z";
  r.host = "h";
  r.nranks = 2;
  r.checked = true;
  r.memory_bytes = 1 << 20;
  r.versions = {{"nccl", "2.27.3"}};
  r.devices = nlohmann::json::array({{{"rank", 0}, {"device", 0}, {"name", "GPU"}, {"sms", 132}}});
  // ops alone: g 60, ar 40, n 20 (two samples each); T_comp 80, T_comm 40, T_seq 120, T_ideal 100
  r.ops = {{"g", "gemm", "compute", {{60, 60}}, 1, 1, true, 0},
           {"ar", "allreduce", "comm", {{40, 40}}, 0, 1024, false, 0},
           {"n", "norm", "compute", {{20, 20}}, 0, 3 * 4096, true, 0}};
  r.t_comp.samples = {80, 80};
  r.t_comm.samples = {40, 40};
  r.t_seq.samples = {120, 120};
  r.t_ideal.samples = {100, 100};
  bench::StepRow seq;
  seq.spec.mode = bench::Mode::Seq;
  seq.t = r.t_seq;
  bench::StepRow conc;
  conc.spec.mode = bench::Mode::Concurrent;
  conc.t.samples = {110, 110};
  bench::StepRow shape;
  shape.spec.mode = bench::Mode::Shape;
  shape.spec.set_k(2);
  shape.t.samples = {104, 104};
  shape.shaping = "membound +40K (2/SM of 8)";
  shape.wrong = 3;
  r.rows = {seq, conc, shape};
  r.notes = {"a note"};
  return r;
}

TEST(StepReport, TableHasTheFiguresAndTheVerdict) {
  const auto r = made_up();
  const std::string t = bench::format_step_report(r);
  EXPECT_NE(t.find("workload tiny (tiny.json) on 2 ranks"), std::string::npos) << t;
  EXPECT_NE(t.find("layers=3*"), std::string::npos) << t;  // overridden
  EXPECT_NE(t.find("# T_comp          80.0 us"), std::string::npos) << t;
  EXPECT_NE(t.find("# T_ideal        100.0 us"), std::string::npos) << t;
  EXPECT_NE(t.find("ideal reduction 16.67%"), std::string::npos) << t;
  // concurrent: reduction 1 - 110/120 = 8.33%, eff (120-110)/40 = 0.25, of_ideal 10/20 = 50%
  EXPECT_NE(t.find("concurrent      110.0"), std::string::npos) << t;
  EXPECT_NE(t.find("8.33%"), std::string::npos) << t;
  EXPECT_NE(t.find("0.250"), std::string::npos) << t;
  EXPECT_NE(t.find("50.0%"), std::string::npos) << t;
  EXPECT_NE(t.find("# shape k=2: membound +40K (2/SM of 8)"), std::string::npos) << t;
  EXPECT_NE(t.find("# note: a note"), std::string::npos) << t;
  EXPECT_NE(t.find("Out of bounds values : 3 FAILED"), std::string::npos) << t;
  EXPECT_NE(t.find("# best: shape k=2 104.0 us"), std::string::npos) << t;
}

// The memory-traffic floor: said beside T_ideal, binding or not, and in the JSON.
TEST(StepReport, MemoryTrafficFloor) {
  auto r = made_up();
  EXPECT_EQ(bench::format_step_report(r).find("# T_mem"), std::string::npos);  // unknown: not said
  EXPECT_TRUE(bench::step_report_json(r)["t_mem_us"].is_null());
  r.t_mem_us = 70;
  std::string t = bench::format_step_report(r);
  EXPECT_NE(t.find("# T_mem           70.0 us  (memory-traffic floor: the ops' least bytes at peak "
                   "bandwidth; below T_ideal, not binding)"),
            std::string::npos) << t;
  r.t_mem_us = 100;  // T_ideal's samples are at least the floor (workload_bench.cpp)
  t = bench::format_step_report(r);
  EXPECT_NE(t.find("it is T_ideal here"), std::string::npos) << t;
  EXPECT_DOUBLE_EQ(bench::step_report_json(r)["t_mem_us"].get<double>(), 100.0);
}

TEST(StepReport, JsonAndCsv) {
  const auto r = made_up();
  const auto j = bench::step_report_json(r);
  EXPECT_EQ(j["schema"], "ccoverlap.step_bench");
  EXPECT_EQ(j["schema_version"], "1.0.0");
  EXPECT_EQ(j["workload"]["name"], "tiny");
  EXPECT_EQ(j["workload"]["parameters"]["layers"], 3);
  EXPECT_EQ(j["workload"]["ops"].size(), 3u);
  EXPECT_DOUBLE_EQ(j["times_us"]["t_ideal"]["median"].get<double>(), 100.0);
  EXPECT_EQ(j["rows"].size(), 3u);
  EXPECT_NEAR(j["rows"][1]["reduction"].get<double>(), 1 - 110.0 / 120.0, 1e-12);
  EXPECT_NEAR(j["rows"][1]["efficiency"].get<double>(), 0.25, 1e-12);
  EXPECT_NEAR(j["rows"][2]["of_ideal"].get<double>(), 16.0 / 20.0, 1e-12);
  EXPECT_EQ(j["wrong"], 3);
  EXPECT_EQ(j["ops"][0]["alone_us"]["samples"].size(), 2u);

  const std::string csv = bench::step_report_csv(r);
  std::istringstream in(csv);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    EXPECT_EQ(static_cast<std::size_t>(std::count(line.begin(), line.end(), ',')),
              bench::step_csv_columns().size() - 1)
        << line;
  }
  EXPECT_EQ(lines, 4);
}

TEST(StepOptions, ParsesTheFlagsThatApply) {
  const auto o = bench::parse_step_options(
      {"bench", "--workload", "./w.json",   "-g",       "2",       "-n",        "7",
       "-w",    "1",          "--param",  "layers=2", "--modes", "seq,shape", "--blocks-per-sm",
       "1,2",   "--json",     "out.json", "-q",       "-c",      "0"});
  EXPECT_EQ(o.workload, "./w.json");
  EXPECT_EQ(o.params.size(), 1u);
  EXPECT_EQ(o.common.ngpus, 2);
  EXPECT_EQ(o.common.iters, 7);
  EXPECT_EQ(o.common.warmup, 1);
  EXPECT_FALSE(o.common.check);
  EXPECT_TRUE(o.common.quiet);
  EXPECT_EQ(o.common.modes.size(), 2u);
  EXPECT_EQ(o.common.blocks_per_sm, (std::vector<int>{1, 2}));
  EXPECT_EQ(o.common.json_path, "out.json");
}

// The run-wide budgets of pairs apply to steps too (issue 17, item 4).
TEST(StepOptions, TakesTheRunWideBudgetsOfPairs) {
  const auto o = bench::parse_step_options(
      {"bench", "--workload", "./w.json", "--gemm-sms", "66", "--nccl-register", "buffer"});
  EXPECT_EQ(o.common.gemm_sms, 66);
  EXPECT_TRUE(o.common.nccl_register_given);
  EXPECT_EQ(o.common.nccl_register, cco::model::CommRegister::Buffer);
  const auto plain = bench::parse_step_options({"bench", "--workload", "./w.json"});
  EXPECT_EQ(plain.common.gemm_sms, 0);
  EXPECT_FALSE(plain.common.nccl_register_given);
  EXPECT_THROW(bench::parse_step_options({"bench", "--workload", "./w", "--gemm-sms", "-1"}),
               bench::UsageError);
  EXPECT_THROW(bench::parse_step_options({"bench", "--workload", "./w", "--nccl-register", "x"}),
               bench::UsageError);
}

TEST(StepOptions, RefusesWhatDoesNotApply) {
  EXPECT_THROW(bench::parse_step_options({"bench", "--workload", "./w", "-b", "1M"}),
               bench::UsageError);
  EXPECT_THROW(bench::parse_step_options({"bench", "--workload", "./w", "--gemm=1024"}),
               bench::UsageError);
  EXPECT_THROW(bench::parse_step_options({"bench", "--workload", "./w", "--validate"}),
               bench::UsageError);
  EXPECT_THROW(bench::parse_step_options({"bench", "-g", "2"}), bench::UsageError);
  EXPECT_THROW(bench::parse_step_options({"bench", "--workload", "./w", "-n", "0"}),
               bench::UsageError);
  EXPECT_THROW(bench::parse_step_options({"bench", "--workload", "./w", "--bogus"}),
               bench::UsageError);
  EXPECT_THROW(
      bench::parse_step_options({"bench", "--workload", "./w", "--modes", "seq", "--pad", "1K"}),
      bench::UsageError);
  try {
    bench::parse_step_options({"bench", "--workload", "./w", "-d", "half"});
  } catch (const bench::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("-d does not apply to --workload"), std::string::npos)
        << e.what();
  }
}

}  // namespace
