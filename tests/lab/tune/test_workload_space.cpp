// cco tune --workload's GPU-free core: the step's search space, pruning, model default, cache
// keys and the plan record, with answers checked by hand against the occupancy model (H200:
// 228 KiB of shared memory per SM, 1 KiB reserved per block, 128-byte allocation unit).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "model/limits.hpp"
#include "model/occupancy.hpp"
#include "plan/plan.hpp"
#include "tune/space.hpp"
#include "tune/workload_space.hpp"

using namespace cco;
using bench::Mode;
using bench::RowSpec;

namespace {

// The memory-bound kernel (256 threads, 19 registers: 8 blocks per SM) and the built-in GEMM
// (256 threads, 63 registers, 16.5 KiB static: 4 blocks per SM) on sm_90.
bench::StepKernel membound() {
  return {"membound", {256, 19, 0, 0}, 8};
}
bench::StepKernel builtin_gemm() {
  return {"builtin gemm bfloat16", {256, 63, 16896, 0}, 4};
}

tune::WorkloadSpaceInput input(std::vector<bench::StepKernel> kernels) {
  tune::WorkloadSpaceInput in;
  in.limits = model::find_architecture("h200");
  in.kernels = std::move(kernels);
  return in;
}

int count(const std::vector<RowSpec>& rows, Mode m) {
  return static_cast<int>(
      std::count_if(rows.begin(), rows.end(), [&](auto& r) { return r.mode == m; }));
}

std::set<std::string> labels(const std::vector<RowSpec>& rows) {
  std::set<std::string> out;
  for (const auto& r : rows) out.insert(r.label());
  return out;
}

const char* kDoc = R"({
  "schema": "ccoverlap.workload", "schema_version": "1.0.0", "name": "tiny",
  "parameters": {"layers": 2, "hidden": 256, "gemm": "builtin"},
  "ops": [
    {"repeat": "${layers}", "as": "l", "items": [
      {"id": "L${l}.g", "kind": "gemm", "m": 64, "n": "${hidden}", "k": 64, "engine": "${gemm}"},
      {"id": "L${l}.ar", "kind": "allreduce", "bytes": 1024, "after": ["L${l}.g"]},
      {"id": "L${l}.n", "kind": "norm", "bytes": 4096}
    ]}
  ]
})";

workload::Step load(std::vector<std::pair<std::string, std::string>> overrides,
                 const std::string& file = "tiny.json", int nranks = 2) {
  workload::StepLoadOptions lo;
  lo.nranks = nranks;
  lo.overrides = std::move(overrides);
  return workload::parse_step(kDoc, file, lo);
}

}  // namespace

TEST(WorkloadSpace, ModelAgreesWithTheHandCheckedKernels) {
  const auto lim = model::find_architecture("h200");
  EXPECT_EQ(model::occupancy(lim, membound().footprint).blocks_per_sm, 8);
  EXPECT_EQ(model::occupancy(lim, builtin_gemm().footprint).blocks_per_sm, 4);
}

TEST(WorkloadSpace, ShapeTargetCapsEveryKernelAtK) {
  const auto in = input({membound(), builtin_gemm()});
  // k=5: membound needs > 233472/6 = 38912 B per block (5/SM); the GEMM is already at 4.
  EXPECT_EQ(tune::shaped_occupancy(in, 5), (std::vector<int>{5, 4}));
  EXPECT_EQ(tune::shaped_occupancy(in, 4), (std::vector<int>{4, 4}));
  // k=3: the GEMM's 16.5 KiB static + 1 KiB reserved grows past 233472/4 = 58368 B: 3/SM.
  EXPECT_EQ(tune::shaped_occupancy(in, 3), (std::vector<int>{3, 3}));
  EXPECT_EQ(tune::shaped_occupancy(in, 1), (std::vector<int>{1, 1}));
  EXPECT_EQ(tune::shaped_occupancy(in, 8), (std::vector<int>{8, 4}));  // nothing changes
}

TEST(WorkloadSpace, CrossesTargetsPriorityAndCtas) {
  const auto rows = tune::build_workload_space(input({membound(), builtin_gemm()}), {});
  // (concurrent + k=7..1: each gives another residency pair) x priority off/on x ctas -1,16,32
  EXPECT_EQ(rows.size(), 8u * 2 * 3);
  EXPECT_EQ(count(rows, Mode::Concurrent), 3);
  EXPECT_EQ(count(rows, Mode::Priority), 3);
  EXPECT_EQ(count(rows, Mode::Shape), 21);
  EXPECT_EQ(count(rows, Mode::ShapePriority), 21);
  EXPECT_EQ(labels(rows).size(), rows.size()) << "no candidate twice";
  const auto l = labels(rows);
  for (const char* want : {"concurrent", "priority ctas=16", "shape k=7 ctas=32",
                           "shape+priority k=1", "shape+priority k=4 ctas=16"})
    EXPECT_TRUE(l.count(want)) << want;
  for (const auto& r : rows) {
    EXPECT_FALSE(r.controls.gemm_sms) << "no cuBLASLt SM budget for a step";
    EXPECT_FALSE(r.controls.green_sms) << "no green partition unless asked";
    EXPECT_FALSE(r.controls.pad);
  }
}

TEST(WorkloadSpace, PrunesWhatCannotHelp) {
  tune::WorkloadSpaceOptions opt;
  opt.blocks_per_sm = {8, 9, 5, 5, 3};  // at/above the largest natural (8), a duplicate
  opt.ctas = {-1};
  std::vector<std::string> notes;
  const auto rows = tune::build_workload_space(input({membound(), builtin_gemm()}), opt, &notes);
  EXPECT_EQ(labels(rows),
            (std::set<std::string>{"concurrent", "priority", "shape k=5", "shape+priority k=5",
                                   "shape k=3", "shape+priority k=3"}));
  ASSERT_EQ(notes.size(), 3u);
  EXPECT_NE(notes[0].find("k=8 pruned: every kernel of ours already runs at 8"), std::string::npos)
      << notes[0];
  EXPECT_NE(notes[1].find("k=9 pruned"), std::string::npos) << notes[1];
  EXPECT_NE(notes[2].find("k=5 pruned: the same blocks per SM as k=5 (membound 5/SM, builtin gemm "
                          "bfloat16 4/SM)"),
            std::string::npos)
      << notes[2];
}

TEST(WorkloadSpace, TargetsAboveOneKernelOnlyShapeTheOther) {
  // Only the GEMM (natural 4): k=3..1; a target of 6 is above it.
  tune::WorkloadSpaceOptions opt;
  opt.ctas = {-1};
  std::vector<std::string> notes;
  const auto rows = tune::build_workload_space(input({builtin_gemm()}), opt, &notes);
  EXPECT_EQ(rows.size(), 4u * 2);
  EXPECT_TRUE(notes.empty());
  opt.blocks_per_sm = {6, 2};
  const auto two = tune::build_workload_space(input({builtin_gemm()}), opt, &notes);
  EXPECT_EQ(two.size(), 2u * 2);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("k=6 pruned"), std::string::npos);
}

TEST(WorkloadSpace, NothingToShape) {
  // cuBLASLt GEMMs only: concurrent and priority per CTA count; asked-for targets pruned.
  tune::WorkloadSpaceOptions opt;
  std::vector<std::string> notes;
  const auto rows = tune::build_workload_space(input({}), opt, &notes);
  EXPECT_EQ(labels(rows),
            (std::set<std::string>{"concurrent", "priority", "concurrent ctas=16",
                                   "priority ctas=16", "concurrent ctas=32", "priority ctas=32"}));
  EXPECT_TRUE(notes.empty());
  opt.blocks_per_sm = {2};
  tune::build_workload_space(input({}), opt, &notes);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("no op of the step launches a kernel of ours"), std::string::npos);
  // A kernel already at one block per SM (1024 threads x 64 registers fill the register file).
  notes.clear();
  const bench::StepKernel big{"builtin gemm float", {1024, 64, 0, 0}, 1};
  EXPECT_EQ(model::occupancy(model::find_architecture("h200"), big.footprint).blocks_per_sm, 1);
  tune::WorkloadSpaceOptions one_cta;
  one_cta.ctas = {-1};
  EXPECT_EQ(tune::build_workload_space(input({big}), one_cta, &notes).size(), 2u);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("already runs at 1 block per SM"), std::string::npos);
}

TEST(WorkloadSpace, NoPriorityAndGreenPartitions) {
  tune::WorkloadSpaceOptions opt;
  opt.priority = false;
  opt.ctas = {-1, 8};
  const auto rows = tune::build_workload_space(input({builtin_gemm()}), opt);
  EXPECT_EQ(rows.size(), 4u * 2);  // concurrent, shape k=3,2,1; two CTA counts
  EXPECT_EQ(count(rows, Mode::Priority) + count(rows, Mode::ShapePriority), 0);

  tune::WorkloadSpaceOptions g;
  g.green_sms = {66};
  g.ctas = {-1};
  const auto green = tune::build_workload_space(input({builtin_gemm()}), g);
  // whole device: 4 compute choices x 2 priorities; green=66: concurrent and priority only
  EXPECT_EQ(green.size(), 4u * 2 + 2);
  const auto l = labels(green);
  EXPECT_TRUE(l.count("concurrent green=66"));
  EXPECT_TRUE(l.count("priority green=66"));
  for (const auto& r : green) {
    if (r.controls.green_sms > 0) {
      EXPECT_FALSE(bench::is_shape(r.mode)) << r.label();
    }
  }
}

TEST(WorkloadSpace, BadListsAreOneLineErrors) {
  const auto in = input({membound()});
  for (int c : {0, -2, 65}) {
    tune::WorkloadSpaceOptions opt;
    opt.ctas = {c};
    EXPECT_THROW(tune::build_workload_space(in, opt), bench::UsageError) << c;
  }
  tune::WorkloadSpaceOptions opt;
  opt.blocks_per_sm = {0};
  EXPECT_THROW(tune::build_workload_space(in, opt), bench::UsageError);
  opt = {};
  opt.green_sms = {132};  // H200 has 132 SMs: a partition leaves at least one
  try {
    tune::build_workload_space(in, opt);
    ADD_FAILURE() << "green=132 accepted";
  } catch (const bench::UsageError& e) {
    EXPECT_STREQ(e.what(), "--green-sms: 132 is not within 1..131 SMs");
  }
}

TEST(WorkloadSpace, ModelDefaultIsPriorityWithNcclsCtas) {
  for (const auto& in : {input({}), input({membound(), builtin_gemm()})}) {
    const auto p = tune::predict_workload(in);
    EXPECT_EQ(p.mode, Mode::Priority);
    EXPECT_FALSE(p.controls.nccl_ctas);
    EXPECT_TRUE(p.default_variant());
    EXPECT_EQ(p.label(), "priority");
  }
}

TEST(WorkloadCache, KeyFollowsTheStepNotTheSampleCount) {
  const nlohmann::json devs = nlohmann::json::array({{{"name", "H200"}, {"sms", 132}}});
  const nlohmann::json vers = {{"nccl", "2.28.9"}};
  const auto step = load({});
  bench::Options o;
  const auto k = tune::workload_cache_key(devs, vers, 2, step, o, {});
  EXPECT_EQ(k.size(), 16u);
  auto o2 = o;
  o2.iters = 99;
  o2.warmup = 0;
  o2.quiet = true;
  o2.json_path = "x.json";
  EXPECT_EQ(tune::workload_cache_key(devs, vers, 2, step, o2, {}), k) << "-n, -w, -q, --json";
  // The same workload elsewhere, and an override to the default value: same expanded step.
  EXPECT_EQ(tune::workload_cache_key(devs, vers, 2, load({}, "/elsewhere/tiny.json"), o, {}), k);
  EXPECT_EQ(tune::workload_cache_key(devs, vers, 2, load({{"layers", "2"}}), o, {}), k);
  // Parameters, ranks, devices, versions, the communicator, verification, the space: all count.
  EXPECT_NE(tune::workload_cache_key(devs, vers, 2, load({{"layers", "3"}}), o, {}), k);
  EXPECT_NE(tune::workload_cache_key(devs, vers, 2, load({{"hidden", "512"}}), o, {}), k);
  EXPECT_NE(tune::workload_cache_key(devs, vers, 2, load({{"gemm", "cublaslt"}}), o, {}), k);
  EXPECT_NE(tune::workload_cache_key(devs, vers, 4, load({}, "tiny.json", 4), o, {}), k);
  EXPECT_NE(tune::workload_cache_key(devs, {{"nccl", "2.29.0"}}, 2, step, o, {}), k);
  EXPECT_NE(tune::workload_cache_key(nlohmann::json::array({{{"name", "H100"}, {"sms", 132}}}),
                                     vers, 2, step, o, {}),
            k);
  auto o3 = o;
  o3.nccl_max_ctas = 16;
  EXPECT_NE(tune::workload_cache_key(devs, vers, 2, step, o3, {}), k);
  o3 = o;
  o3.check = false;
  EXPECT_NE(tune::workload_cache_key(devs, vers, 2, step, o3, {}), k);
  tune::WorkloadSpaceOptions s;
  s.ctas = {8};
  EXPECT_NE(tune::workload_cache_key(devs, vers, 2, step, o, s), k);
  s = {};
  s.priority = false;
  EXPECT_NE(tune::workload_cache_key(devs, vers, 2, step, o, s), k);
  // A pair's key never equals a workload's (different records).
  EXPECT_NE(tune::cache_key(devs, vers, 2, o, {}), k);
}

TEST(WorkloadCache, RecordNamesFileParametersAndHash) {
  const auto step = load({{"layers", "3"}}, "w/tiny.json");
  const auto j = tune::workload_json(step);
  EXPECT_EQ(j.at("file"), "w/tiny.json");
  EXPECT_EQ(j.at("name"), "tiny");
  EXPECT_EQ(j.at("ranks"), 2);
  EXPECT_EQ(j.at("ops"), 9);
  EXPECT_EQ(j.at("parameters").at("layers"), 3);
  EXPECT_EQ(j.at("parameters").at("gemm"), "builtin");
  EXPECT_EQ(j.at("overrides"), (nlohmann::json{{"layers", 3}}));
  EXPECT_EQ(j.at("hash"), tune::step_hash(step));
  EXPECT_EQ(j.at("hash").get<std::string>().size(), 16u);
  EXPECT_NE(tune::step_hash(step), tune::step_hash(load({})));
}

namespace {

bench::StepReport final_round() {
  bench::StepReport r;
  r.step = load({{"layers", "3"}});
  r.date = "2026-11-22T00:00:00Z";
  r.nranks = 2;
  r.checked = true;
  r.versions = {{"nccl", "2.28.9"}, {"cuda_runtime", "13.0"}, {"ccoverlap", "0.1.0"}};
  r.devices = nlohmann::json::array({{{"rank", 0}, {"name", "NVIDIA H200"}, {"sms", 132}},
                                     {{"rank", 1}, {"name", "NVIDIA H200"}, {"sms", 132}}});
  r.kernels = {membound(), builtin_gemm()};
  // T_comp 80, T_comm 40, T_seq 120, T_ideal 100
  r.t_comp.samples = {80, 80, 80};
  r.t_comm.samples = {40, 40, 40};
  r.t_seq.samples = {120, 120, 120};
  r.t_ideal.samples = {100, 100, 100};
  bench::StepRow seq;
  seq.spec.mode = Mode::Seq;
  seq.t = r.t_seq;
  bench::StepRow conc;
  conc.spec.mode = Mode::Concurrent;
  conc.t.samples = {108, 110, 112};
  bench::StepRow prio;
  prio.spec.mode = Mode::Priority;
  prio.t.samples = {105, 105, 105};
  bench::StepRow best;
  best.spec.mode = Mode::ShapePriority;
  best.spec.set_k(2);
  best.spec.controls.nccl_ctas = 16;
  best.t.samples = {96, 100, 104};
  best.shaping = "membound +40K (2/SM of 8), builtin gemm bfloat16 +60K (2/SM of 4)";
  r.rows = {seq, conc, prio, best};
  return r;
}

}  // namespace

TEST(WorkloadPlan, TriedRowsAgainstTheRunsTseqAndTideal) {
  const auto r = final_round();
  const auto tried = tune::tried_from_step(r, tune::predict_workload(input({})));
  ASSERT_EQ(tried.size(), 3u);  // seq is the baseline, not a candidate
  EXPECT_EQ(tried[0].spec.label(), "concurrent");
  EXPECT_DOUBLE_EQ(tried[0].t_us, 110);
  EXPECT_DOUBLE_EQ(tried[0].p25_us, 109);
  EXPECT_DOUBLE_EQ(tried[0].p75_us, 111);
  EXPECT_NEAR(tried[0].reduction, 1 - 110.0 / 120, 1e-12);
  EXPECT_NEAR(tried[0].efficiency, 10.0 / 40, 1e-12);  // (T_seq - t) / min(T_comp, T_comm)
  EXPECT_NEAR(tried[0].of_ideal, 10.0 / 20, 1e-12);    // (T_seq - t) / (T_seq - T_ideal)
  EXPECT_FALSE(tried[0].predicted);
  EXPECT_TRUE(tried[1].predicted);  // priority on NCCL's own CTAs
  EXPECT_NEAR(tried[2].of_ideal, 1.0, 1e-12);
  EXPECT_EQ(tune::pick_best(tried), 2u);
  EXPECT_THROW(tune::pick_best(std::vector<tune::StepTried>{}), std::runtime_error);

  const auto table = tune::format_step_tried(tried, 2, 120, 100);
  EXPECT_NE(table.find("# T_seq 120.0 us, T_ideal 100.0 us (ideal reduction 16.7%)"),
            std::string::npos)
      << table;
  const auto first = table.find("shape+priority k=2 ctas=16");
  EXPECT_NE(first, std::string::npos);
  EXPECT_LT(first, table.find("concurrent")) << "fastest first:\n" << table;
  EXPECT_NE(table.find("<- chosen"), std::string::npos);
  EXPECT_NE(table.find("(model default)"), std::string::npos);
  EXPECT_NE(table.find("# shape+priority k=2 ctas=16: membound +40K"), std::string::npos) << table;
}

TEST(WorkloadPlan, PlanHasThePairsSchemaAndTheWorkload) {
  const auto r = final_round();
  const auto tried = tune::tried_from_step(r, tune::predict_workload(input({})));
  const auto j = tune::workload_plan_json(r, tried, 2, "0123456789abcdef");
  EXPECT_EQ(j.at("schema"), "ccoverlap.plan");
  EXPECT_EQ(j.at("schema_version"), "1.0.0");
  EXPECT_EQ(j.at("policy"), "tuned");
  EXPECT_EQ(j.at("shaping").at("default"), 2);
  EXPECT_EQ(j.at("priority").at("nccl"), "high");
  EXPECT_EQ(j.at("nccl").at("min_ctas"), 16);
  EXPECT_EQ(j.at("nccl").at("max_ctas"), 16);
  EXPECT_EQ(j.at("shaping").at("when"), "overlap");
  EXPECT_EQ(j.at("made_for").at("device"), "NVIDIA H200");
  EXPECT_EQ(j.at("made_for").at("sms"), 132);
  EXPECT_EQ(j.at("made_for").at("nranks"), 2);
  EXPECT_EQ(j.at("made_for").at("versions"),
            (nlohmann::json{{"nccl", "2.28.9"}, {"cuda_runtime", "13.0"}}));
  const auto& t = j.at("tuning");
  EXPECT_EQ(t.at("cache_key"), "0123456789abcdef");
  EXPECT_EQ(t.at("date"), "2026-11-22T00:00:00Z");
  EXPECT_EQ(t.at("workload").at("overrides").at("layers"), 3);
  EXPECT_EQ(t.at("workload").at("hash"), tune::step_hash(r.step));
  EXPECT_DOUBLE_EQ(t.at("t_seq_us").get<double>(), 120);
  EXPECT_DOUBLE_EQ(t.at("t_ideal_us").get<double>(), 100);
  EXPECT_EQ(t.at("verified"), true);
  EXPECT_EQ(t.at("choice").at("label"), "shape+priority k=2 ctas=16");
  EXPECT_EQ(t.at("choice").at("blocks_per_sm"), 2);
  EXPECT_EQ(t.at("choice").at("nccl_ctas"), 16);
  EXPECT_DOUBLE_EQ(t.at("choice").at("t_us").get<double>(), 100);
  ASSERT_EQ(t.at("tried").size(), 3u);
  EXPECT_EQ(t.at("tried")[1].at("predicted"), true);
  EXPECT_DOUBLE_EQ(t.at("tried")[0].at("p75_us").get<double>(), 111);
  EXPECT_EQ(t.at("kernels").size(), 2u);
  EXPECT_TRUE(t.at("notes").empty()) << "builtin GEMMs only: nothing ran unpadded";

  // `cco run` reads it as a plan.
  const auto p = plan::parse(j.dump());
  EXPECT_EQ(p.policy, "tuned");
  EXPECT_EQ(p.made_for.device, "NVIDIA H200");
  EXPECT_EQ(p.shaping.target.blocks_per_sm, 2);

  // Priority alone on NCCL's CTAs: no shaping, no environment.
  const auto j1 = tune::workload_plan_json(r, tried, 1, "0123456789abcdef");
  EXPECT_FALSE(plan::parse(j1.dump()).shaping.active());
  EXPECT_TRUE(j1.at("environment").empty());
  EXPECT_EQ(j1.at("priority").at("nccl"), "high");
  EXPECT_NO_THROW(plan::parse(j1.dump()));
  // Concurrent: default priority.
  EXPECT_EQ(tune::workload_plan_json(r, tried, 0, "k").at("priority").at("nccl"), "default");

  // A choice with a green partition: `cco run` gets the fastest candidate it can apply whole.
  auto green = tried;
  green[2].spec.controls.green_sms = 64;
  const std::size_t expect = green[0].t_us < green[1].t_us ? 0 : 1;
  const auto jg = tune::workload_plan_json(r, green, 2, "k");
  EXPECT_EQ(jg.at("tuning").at("applied").at("label"), green[expect].spec.label());
  EXPECT_EQ(jg.at("tuning").at("choice").at("label"), green[2].spec.label());
  EXPECT_FALSE(plan::parse(jg.dump()).shaping.active()) << "the shaping came with the green partition";
  ASSERT_FALSE(jg.at("tuning").at("notes").empty());
  EXPECT_NE(jg.at("tuning").at("notes").back().get<std::string>().find("`cco run` applies"), std::string::npos);
}

TEST(WorkloadPlan, NotesSayWhatThePlanCannotCarry) {
  auto r = final_round();
  r.step = load({{"gemm", "cublaslt"}});
  r.checked = false;
  const auto tried = tune::tried_from_step(r, tune::predict_workload(input({})));
  const auto notes = tune::workload_plan_json(r, tried, 2, "k").at("tuning").at("notes");
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].get<std::string>().find("not verified (-c 0)"), std::string::npos);
  EXPECT_NE(notes[1].get<std::string>().find("cuBLASLt GEMMs ran unpadded"), std::string::npos);
}

// CTA policies in a step's space (issue 18, item 3): zero is one candidate where the step has an
// all-gather or all-to-all, none where it has not; efficiency is crossed with priority, never
// with CTA counts; neither is what `cco run` can hand to a program when it needs a window.
TEST(WorkloadSpace, ZeroCtaIsOneCandidateWhereTheStepHasCopyEngineCollectives) {
  auto in = input({});
  const auto plain = tune::build_workload_space(in, {});
  in.copy_engine = true;
  std::vector<std::string> notes;
  const auto rows = tune::build_workload_space(in, {}, &notes);
  ASSERT_EQ(rows.size(), plain.size() + 1);
  EXPECT_EQ(rows.back().label(), "concurrent reg=window cta=zero");
  EXPECT_FALSE(tune::run_applicable(rows.back()));
  EXPECT_TRUE(std::any_of(notes.begin(), notes.end(),
                          [](auto& n) { return n.find("cta=zero: one row") != std::string::npos; }));
  in.copy_engine = false;
  in.cta_policies = {model::CtaPolicy::Zero, model::CtaPolicy::Efficiency};
  notes.clear();
  const auto eff = tune::build_workload_space(in, {}, &notes);
  EXPECT_TRUE(std::any_of(notes.begin(), notes.end(),
                          [](auto& n) { return n.find("cta=zero pruned") != std::string::npos; }));
  std::size_t n_eff = 0;
  for (const auto& r : eff) {
    EXPECT_NE(r.controls.cta_policy, model::CtaPolicy::Zero) << r.label();
    if (r.controls.cta_policy == model::CtaPolicy::Efficiency) {
      ++n_eff;
      EXPECT_FALSE(r.controls.nccl_ctas) << r.label();
    }
  }
  EXPECT_EQ(n_eff, 2u) << "concurrent and priority (no shapeable kernel)";
  // The run's own policy is not repeated as a row.
  in.run_policy = model::CtaPolicy::Efficiency;
  in.cta_policies = {model::CtaPolicy::Efficiency};
  EXPECT_EQ(tune::build_workload_space(in, {}).size(), plain.size());
}

TEST(WorkloadSpace, NeighboursStepOneControlAtATime) {
  const auto in = input({membound(), builtin_gemm()});
  RowSpec r{Mode::ShapePriority, 4};
  // Priority flipped, the CTA rungs around NCCL's default 24 (16 and 32), and k +-1: k=3 pads
  // both kernels to 3/SM, k=5 the memory-bound one to 5/SM (the GEMM keeps its own 4).
  EXPECT_EQ(labels(tune::workload_neighbours(in, r)),
            (std::set<std::string>{"shape k=4", "shape+priority k=4 ctas=16",
                                   "shape+priority k=4 ctas=32", "shape+priority k=3",
                                   "shape+priority k=5"}));
  // One step above the largest kernel's own 8/SM is no shaping at all.
  const auto up = tune::workload_neighbours(in, {Mode::Shape, 7});
  EXPECT_TRUE(labels(up).count("concurrent")) << testing::PrintToString(labels(up));
  EXPECT_TRUE(labels(up).count("shape k=6"));
  // A row on its own CTA count steps along the ladder; never the row itself.
  RowSpec c{Mode::Concurrent};
  c.controls.nccl_ctas = 16;
  EXPECT_EQ(labels(tune::workload_neighbours(in, c)),
            (std::set<std::string>{"priority ctas=16", "concurrent ctas=12", "concurrent ctas=24"}));
  // The copy engines use no SM a control divides: a zero-CTA row has no neighbour.
  RowSpec z{Mode::Concurrent};
  z.controls.cta_policy = model::CtaPolicy::Zero;
  EXPECT_TRUE(tune::workload_neighbours(in, z).empty());
}
