// cco tune's GPU-free core: search space, pruning, model default, cache keys, plan record.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "model/limits.hpp"
#include "plan/plan.hpp"
#include "tune/space.hpp"

using namespace cco;
using bench::Mode;
using bench::RowSpec;

namespace {

tune::SpaceInput builtin_input() {
  tune::SpaceInput in;
  in.limits = model::find_architecture("h200");
  in.shapeable = true;
  in.footprint = {256, 63, 16896, 0};  // the built-in GEMM on sm_90: 4 blocks per SM
  in.natural_bps = model::occupancy(in.limits, in.footprint).blocks_per_sm;
  return in;
}

tune::SpaceInput cublas_input() {
  tune::SpaceInput in;
  in.limits = model::find_architecture("h200");
  in.vendor_gemm = true;
  return in;
}

int count(const std::vector<RowSpec>& rows, Mode m) {
  return static_cast<int>(std::count_if(rows.begin(), rows.end(), [&](auto& r) { return r.mode == m; }));
}

}  // namespace

TEST(Space, BuiltinGemmCrossesTargetsPriorityAndCtas) {
  const auto in = builtin_input();
  ASSERT_EQ(in.natural_bps, 4);
  const auto rows = tune::build_space(in, {});
  // (concurrent + k=3,2,1) x priority on/off x ctas {-1,16,32,48}
  EXPECT_EQ(rows.size(), 4u * 2 * 4);
  EXPECT_EQ(count(rows, Mode::Concurrent), 4);
  EXPECT_EQ(count(rows, Mode::Priority), 4);
  EXPECT_EQ(count(rows, Mode::Shape), 12);
  EXPECT_EQ(count(rows, Mode::ShapePriority), 12);
  for (const auto& r : rows) EXPECT_FALSE(r.controls.gemm_sms) << "no SM budget for our own kernels";
}

TEST(Space, CublasLtSearchesSmBudgetsNotShaping) {
  const auto rows = tune::build_space(cublas_input(), {});
  // SM budgets {all, 116, 108, 100, 92, 84, 76, 68} x ctas {-1,16,32,48} x priority {off,on}
  EXPECT_EQ(rows.size(), 8u * 4 * 2);
  EXPECT_EQ(count(rows, Mode::Shape) + count(rows, Mode::ShapePriority), 0);
  std::vector<int> sms;
  for (const auto& r : rows) sms.push_back(bench::budget_number(r.controls.gemm_sms));
  std::sort(sms.begin(), sms.end());
  sms.erase(std::unique(sms.begin(), sms.end()), sms.end());
  EXPECT_EQ(sms, (std::vector<int>{-1, 68, 76, 84, 92, 100, 108, 116}));
}

TEST(Space, PrunesWhatCannotHelp) {
  auto in = builtin_input();
  tune::SpaceOptions opt;
  opt.blocks_per_sm = {4, 5, 2, 2};  // at/above natural, and a duplicate
  opt.ctas = {-1};
  std::vector<std::string> notes;
  const auto rows = tune::build_space(in, opt, &notes);
  EXPECT_EQ(rows.size(), 2u * 2);  // concurrent, k=2; each with and without priority
  EXPECT_EQ(notes.size(), 3u);     // k=4, k=5 at/above natural; second k=2 duplicate
  in.natural_bps = 1;
  in.footprint = {1024, 64, 0, 0};
  notes.clear();
  tune::SpaceOptions only_default;
  only_default.ctas = {-1};
  const auto one = tune::build_space(in, only_default, &notes);
  EXPECT_EQ(one.size(), 2u);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("already runs at 1 block"), std::string::npos);
}

TEST(Space, NoPriorityHalvesTheSpace) {
  tune::SpaceOptions opt;
  opt.priority = false;
  opt.ctas = {-1};
  const auto rows = tune::build_space(builtin_input(), opt);
  EXPECT_EQ(rows.size(), 4u);
  EXPECT_EQ(count(rows, Mode::Priority) + count(rows, Mode::ShapePriority), 0);
}

TEST(Space, InvalidBudgetsAreOneLineErrors) {
  tune::SpaceOptions opt;
  opt.sm_budgets = {200};
  EXPECT_THROW(tune::build_space(cublas_input(), opt), bench::UsageError);
  opt = {};
  opt.ctas = {0};
  EXPECT_THROW(tune::build_space(cublas_input(), opt), bench::UsageError);
  opt = {};
  opt.ctas = {65};
  EXPECT_THROW(tune::build_space(cublas_input(), opt), bench::UsageError);
  opt = {};
  opt.sm_budgets = {100};
  EXPECT_THROW(tune::build_space(builtin_input(), opt), bench::UsageError);  // not cuBLASLt
  opt = {};
  opt.blocks_per_sm = {0};
  EXPECT_THROW(tune::build_space(builtin_input(), opt), bench::UsageError);
}

TEST(Predict, ModelDefault) {
  auto in = builtin_input();  // natural 4, ctas 24, 132 SMs: cut = round(2*4*24/132) = round(1.45) = 1
  auto p = tune::predict(in);
  EXPECT_EQ(p.mode, Mode::ShapePriority);
  EXPECT_EQ(p.k(), 3);
  in.footprint = {256, 19, 0, 0};  // the memory-bound kernel: 8 blocks per SM
  in.natural_bps = 8;              // cut = round(2*8*24/132) = round(2.91) = 3
  EXPECT_EQ(tune::predict(in).k(), 5);
  const auto lt = tune::predict(cublas_input());  // 132 - 24
  EXPECT_EQ(lt.mode, Mode::Priority);
  EXPECT_EQ(lt.controls.gemm_sms, 108);
  in.natural_bps = 1;
  EXPECT_EQ(tune::predict(in).mode, Mode::Priority);
}

TEST(Cache, KeyIgnoresTimingButNotWorkloadDeviceOrVersions) {
  const nlohmann::json devs = nlohmann::json::array({{{"name", "H200"}, {"sms", 132}}});
  const nlohmann::json vers = {{"nccl", "2.28.9"}};
  bench::Options o;
  const auto k = tune::cache_key(devs, vers, 2, o, {});
  EXPECT_EQ(k.size(), 16u);
  auto o2 = o;
  o2.iters = 99;
  o2.warmup = 1;
  EXPECT_EQ(tune::cache_key(devs, vers, 2, o2, {}), k);
  o2.min_bytes = o2.max_bytes = 64 << 20;
  EXPECT_NE(tune::cache_key(devs, vers, 2, o2, {}), k);
  EXPECT_NE(tune::cache_key(devs, {{"nccl", "2.29.0"}}, 2, o, {}), k);
  EXPECT_NE(tune::cache_key(nlohmann::json::array({{{"name", "H100"}, {"sms", 132}}}), vers, 2, o, {}), k);
  EXPECT_NE(tune::cache_key(devs, vers, 4, o, {}), k);
  tune::SpaceOptions s;
  s.ctas = {8};
  EXPECT_NE(tune::cache_key(devs, vers, 2, o, s), k);
  EXPECT_EQ(tune::stable_hash("abc"), "e71fa2190541574b");  // FNV-1a 64 of "abc"
}

// E_best in the tuner (issue 18): a candidate whose own communicator is faster alone does not
// get that speed counted as overlap. Final round: baselines C = 1000, M = 600, seq 1600;
// "concurrent" 1300; "concurrent ctas=32" 1200 with its collective alone at 400. Best parts:
// C 1000, M 400, S = 1400, S - L = 400. E (run's own parts): (1600 - 1200) / 600 = 0.67 for the
// budget row; E_best: (1400 - 1200) / 400 = 0.50; concurrent: (1400 - 1300) / 400 = 0.25.
TEST(Plan, EfficiencyAgainstTheBestPartsOfTheFinalRound) {
  bench::Report rep;
  auto base = [](bench::Row& r) {
    r.bytes = 64 << 20;
    r.t_comp.samples = {1000};
    r.t_comm.samples = {600};
    r.t_seq.samples = {1600};
    r.t_comp_alone = r.t_comp;
    r.t_comm_alone = r.t_comm;
  };
  bench::Row seq, conc, budget;
  base(seq);
  seq.spec = {Mode::Seq};
  seq.t = seq.t_seq;
  base(conc);
  conc.spec = {Mode::Concurrent};
  conc.t.samples = {1300};
  base(budget);
  budget.spec = {Mode::Concurrent};
  budget.spec.controls.nccl_ctas = 32;
  budget.t.samples = {1200};
  budget.t_comm_alone.samples = {400};
  rep.rows = {seq, conc, budget};
  const auto tried = tune::tried_from(rep, bench::RowSpec{Mode::Concurrent});
  ASSERT_EQ(tried.size(), 2u);
  EXPECT_NEAR(tried[1].efficiency, 400.0 / 600.0, 1e-12);
  EXPECT_NEAR(tried[1].efficiency_best, 0.50, 1e-12);
  EXPECT_NEAR(tried[0].efficiency_best, 0.25, 1e-12);
  const auto j = tune::plan_json(rep, tried, 1, "k");
  EXPECT_NEAR(j.at("tuning").at("choice").at("efficiency_best").get<double>(), 0.50, 1e-12);
  EXPECT_NEAR(j.at("tuning").at("tried")[0].at("efficiency_best").get<double>(), 0.25, 1e-12);
  EXPECT_DOUBLE_EQ(j.at("tuning").at("best_parts_us").at("collective").get<double>(), 400.0);
}

TEST(Plan, PickBestAndRecord) {
  std::vector<tune::Tried> tried(3);
  tried[0].spec = {Mode::Concurrent};
  tried[0].t_us = 1200;
  tried[1].spec = {Mode::ShapePriority, 3};
  tried[1].t_us = 1100;
  tried[1].blocks_per_sm = 3;
  tried[1].pad = 40449;
  tried[1].predicted = true;
  tried[2].spec = {Mode::Priority};
  tried[2].spec.controls.nccl_ctas = 32;
  tried[2].t_us = 1150;
  EXPECT_EQ(tune::pick_best(tried), 1u);
  EXPECT_THROW(tune::pick_best({}), std::runtime_error);
  bench::Report rep;
  rep.date = "2026-11-22T00:00:00Z";
  rep.nranks = 2;
  rep.devices = nlohmann::json::array({{{"name", "NVIDIA H200"}, {"sms", 132}}});
  rep.versions = {{"nccl", "2.28.9"}};
  const auto j = tune::plan_json(rep, tried, 1, "0123456789abcdef");
  EXPECT_EQ(j.at("schema"), "ccoverlap.plan");
  EXPECT_EQ(j.at("schema_version"), "1.0.0");
  EXPECT_EQ(j.at("policy"), "tuned");
  EXPECT_EQ(j.at("made_for").at("device"), "NVIDIA H200");
  EXPECT_EQ(j.at("made_for").at("versions").at("nccl"), "2.28.9");
  EXPECT_EQ(j.at("shaping").at("default"), 3);
  EXPECT_EQ(j.at("priority").at("nccl"), "high");
  const auto& t = j.at("tuning");
  EXPECT_EQ(t.at("choice").at("mode"), "shape+priority");
  EXPECT_EQ(t.at("choice").at("blocks_per_sm"), 3);
  EXPECT_EQ(t.at("choice").at("pad_bytes"), 40449);
  EXPECT_EQ(t.at("choice").at("priority"), true);
  EXPECT_EQ(t.at("tried").size(), 3u);
  EXPECT_EQ(t.at("tried")[2].at("label"), "priority ctas=32");
  // the CTA budget of a choice becomes the plan's nccl section (NCCL_MIN/MAX_CTAS under cco run)
  const auto j2 = tune::plan_json(rep, tried, 2, "0123456789abcdef");
  EXPECT_EQ(j2.at("nccl").at("max_ctas"), 32);
  EXPECT_EQ(j2.at("nccl").at("min_ctas"), 32);
  EXPECT_TRUE(j2.at("environment").empty());
  EXPECT_FALSE(plan::parse(j2.dump()).shaping.active());
  // The plan module's own reader takes what the tuner wrote with the plan module's own writer.
  const plan::Plan pj = plan::parse(j.dump());
  EXPECT_EQ(pj.shaping.target.blocks_per_sm, 3);
  EXPECT_EQ(pj.shaping.when, plan::When::Overlap);
  EXPECT_TRUE(pj.priority.active());
  EXPECT_EQ(plan::parse(j2.dump()).nccl.max_ctas, 32);
  // round trip through text
  EXPECT_EQ(nlohmann::json::parse(j.dump()), j);
}

TEST(Space, GreenPartitionsAreTheirOwnComputeBudget) {
  tune::SpaceOptions opt;
  opt.green_sms = {100};
  opt.ctas = {-1};
  const auto rows = tune::build_space(cublas_input(), opt);
  // 8 SM budgets x 2 priorities, plus green=100 (all SMs target only) x 2 priorities
  EXPECT_EQ(rows.size(), 8u * 2 + 2);
  int green = 0;
  for (const auto& r : rows)
    if (r.controls.green_sms == 100) {
      ++green;
      EXPECT_FALSE(r.controls.gemm_sms);
      EXPECT_NE(r.label().find("green=100"), std::string::npos);
    }
  EXPECT_EQ(green, 2);
  opt.green_sms = {132};
  EXPECT_THROW(tune::build_space(cublas_input(), opt), bench::UsageError);
}

namespace {

bool has(const std::vector<RowSpec>& rows, Mode m, int k, int sms, int ctas, int green = -1) {
  return std::any_of(rows.begin(), rows.end(), [&](const RowSpec& r) {
    return r.mode == m && r.k() == k && r.controls.gemm_sms == bench::budget_from_number(sms) &&
           r.controls.nccl_ctas == bench::budget_from_number(ctas) &&
           r.controls.green_sms == bench::budget_from_number(green);
  });
}

}  // namespace

TEST(Neighbours, CublasLtStepsOneControlAtATime) {
  const auto in = cublas_input();  // 132 SMs, NCCL's default 24 CTAs
  RowSpec r{Mode::Priority};
  r.controls.gemm_sms = 92;
  r.controls.nccl_ctas = 32;
  const auto n = tune::neighbours(in, r);
  // priority flipped; SM target 88 and 96; CTAs 24 and 48 (the ladder's rungs beside 32)
  EXPECT_EQ(n.size(), 5u);
  EXPECT_TRUE(has(n, Mode::Concurrent, 0, 92, 32));
  EXPECT_TRUE(has(n, Mode::Priority, 0, 88, 32));
  EXPECT_TRUE(has(n, Mode::Priority, 0, 96, 32));
  EXPECT_TRUE(has(n, Mode::Priority, 0, 92, 24));
  EXPECT_TRUE(has(n, Mode::Priority, 0, 92, 48));
  for (const auto& x : n) EXPECT_FALSE(x.mode == r.mode && x.controls.gemm_sms == 92 && x.controls.nccl_ctas == 32);
}

TEST(Neighbours, FromDefaultsAndAtTheEdges) {
  const auto in = cublas_input();
  // All SMs and NCCL's default CTAs: SM targets 128 and 124; CTAs 16 and 32 beside the default 24.
  const auto n = tune::neighbours(in, RowSpec{Mode::Concurrent});
  EXPECT_TRUE(has(n, Mode::Priority, 0, -1, -1));
  EXPECT_TRUE(has(n, Mode::Concurrent, 0, 128, -1));
  EXPECT_TRUE(has(n, Mode::Concurrent, 0, 124, -1));
  EXPECT_TRUE(has(n, Mode::Concurrent, 0, -1, 16));
  EXPECT_TRUE(has(n, Mode::Concurrent, 0, -1, 32));
  EXPECT_EQ(n.size(), 5u);
  // The ladder's ends and the SM floor (a quarter of the SMs): 64 CTAs has no rung above; an SM
  // target of 33 has none below.
  RowSpec low{Mode::Concurrent};
  low.controls.gemm_sms = 33;
  low.controls.nccl_ctas = 64;
  const auto e = tune::neighbours(in, low);
  EXPECT_TRUE(has(e, Mode::Concurrent, 0, 37, 64));
  EXPECT_TRUE(has(e, Mode::Concurrent, 0, 33, 48));
  EXPECT_FALSE(has(e, Mode::Concurrent, 0, 29, 64));
  EXPECT_EQ(e.size(), 3u);  // + priority
}

TEST(Neighbours, ShapeTargetsAndGreenPartitions) {
  const auto in = builtin_input();  // 4 blocks per SM as launched
  RowSpec r{Mode::ShapePriority};
  r.set_k(3);
  const auto n = tune::neighbours(in, r);
  EXPECT_TRUE(has(n, Mode::Shape, 3, -1, -1));          // priority off
  EXPECT_TRUE(has(n, Mode::ShapePriority, 2, -1, -1));  // k-1
  EXPECT_TRUE(has(n, Mode::Priority, 0, -1, -1));       // k+1 = the natural 4: unshaped
  EXPECT_TRUE(has(n, Mode::ShapePriority, 3, -1, 16));
  EXPECT_TRUE(has(n, Mode::ShapePriority, 3, -1, 32));
  for (const auto& x : n) EXPECT_FALSE(x.controls.gemm_sms) << "no SM target for our own kernels";
  EXPECT_EQ(n.size(), 5u);
  // k=1 has no k-1.
  r.set_k(1);
  const auto one = tune::neighbours(in, r);
  EXPECT_TRUE(has(one, Mode::ShapePriority, 2, -1, -1));
  EXPECT_FALSE(has(one, Mode::ShapePriority, 0, -1, -1));
  // A green partition steps by the driver's 8 SMs, within the device.
  RowSpec g{Mode::Concurrent};
  g.controls.green_sms = 128;
  const auto gn = tune::neighbours(in, g);
  EXPECT_TRUE(has(gn, Mode::Concurrent, 0, -1, -1, 120));
  EXPECT_FALSE(has(gn, Mode::Concurrent, 0, -1, -1, 136));
}

namespace {

tune::SpaceInput registering(tune::SpaceInput in, int run_reg = 0) {
  in.registrations = {0, 1, 2};
  in.run_reg = run_reg;
  return in;
}

int count_reg(const std::vector<RowSpec>& rows, std::optional<model::CommRegister> reg) {
  return static_cast<int>(std::count_if(rows.begin(), rows.end(), [&](auto& r) { return r.controls.nccl_reg == reg; }));
}

}  // namespace

TEST(Space, RegistrationScreensTheRunsOwnAndAWindowByDefault) {
  const auto plain = tune::build_space(cublas_input(), {});
  EXPECT_EQ(count_reg(plain, std::nullopt), static_cast<int>(plain.size())) << "no registrations: every row plain";
  const auto rows = tune::build_space(registering(cublas_input()), {});
  ASSERT_EQ(rows.size(), 2 * plain.size());
  EXPECT_EQ(count_reg(rows, std::nullopt), static_cast<int>(plain.size()));
  EXPECT_EQ(count_reg(rows, model::CommRegister::Window), static_cast<int>(plain.size()));
  EXPECT_EQ(count_reg(rows, model::CommRegister::Buffer), 0) << "buffer registration is left to the neighbour round";
  // A run that registers windows itself: its own rows are -1, the other screened value is none's
  // absence (the window is the run's own, so only -1).
  const auto win = tune::build_space(registering(cublas_input(), 2), {});
  EXPECT_EQ(win.size(), plain.size());
  EXPECT_EQ(count_reg(win, std::nullopt), static_cast<int>(plain.size()));
  // An explicit list is what is screened; the run's own value maps to -1.
  tune::SpaceOptions opt;
  opt.registers = {0, 1};
  const auto listed = tune::build_space(registering(cublas_input()), opt);
  EXPECT_EQ(count_reg(listed, std::nullopt), static_cast<int>(plain.size()));
  EXPECT_EQ(count_reg(listed, model::CommRegister::Buffer), static_cast<int>(plain.size()));
  EXPECT_EQ(count_reg(listed, model::CommRegister::Window), 0);
  for (const auto& r : listed)
    if (r.controls.nccl_reg == model::CommRegister::Buffer) {
      EXPECT_NE(r.label().find(" reg=buffer"), std::string::npos) << r.label();
    }
}

TEST(Space, RegistrationErrorsAreOneLine) {
  tune::SpaceOptions opt;
  opt.registers = {2};
  // Workloads offer none: a list is refused, saying why.
  try {
    (void)tune::build_space(cublas_input(), opt);
    FAIL() << "registration accepted where rows cannot register";
  } catch (const bench::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--registers"), std::string::npos) << e.what();
  }
  opt.registers = {3};
  EXPECT_THROW((void)tune::build_space(registering(cublas_input()), opt), bench::UsageError);
  opt.registers = {-1};
  EXPECT_THROW((void)tune::build_space(registering(cublas_input()), opt), bench::UsageError);
}

TEST(Neighbours, RegistrationFlipsToEachOther) {
  const auto in = registering(cublas_input());
  RowSpec r{Mode::Priority};
  r.controls.nccl_ctas = 48;
  const auto n = tune::neighbours(in, r);
  auto has = [&](model::CommRegister reg) {
    return std::any_of(n.begin(), n.end(), [&](auto& x) {
      return x.controls.nccl_reg == reg && x.mode == Mode::Priority && x.controls.nccl_ctas == 48 && !x.controls.gemm_sms;
    });
  };
  EXPECT_TRUE(has(model::CommRegister::Buffer));
  EXPECT_TRUE(has(model::CommRegister::Window));
  EXPECT_EQ(std::count(n.begin(), n.end(), r), 0) << "never the candidate itself";
  // From a window row: back to the run's own (-1) and to buffer.
  r.controls.nccl_reg = model::CommRegister::Window;
  const auto back = tune::neighbours(in, r);
  EXPECT_TRUE(std::any_of(back.begin(), back.end(), [](auto& x) { return !x.controls.nccl_reg && x.controls.nccl_ctas == 48; }));
  EXPECT_TRUE(std::any_of(back.begin(), back.end(), [](auto& x) { return x.controls.nccl_reg == model::CommRegister::Buffer && x.controls.nccl_ctas == 48; }));
  // Without registrations (workloads) no neighbour changes it.
  for (const auto& x : tune::neighbours(cublas_input(), RowSpec{Mode::Priority})) EXPECT_FALSE(x.controls.nccl_reg);
}

TEST(Cache, KeySeesRegistrationsAndSearchDepth) {
  const nlohmann::json devs = nlohmann::json::array({{{"name", "H200"}, {"sms", 132}}});
  bench::Options o;
  const auto k = tune::cache_key(devs, {}, 2, o, {});
  tune::SpaceOptions s;
  s.registers = {2};
  EXPECT_NE(tune::cache_key(devs, {}, 2, o, s), k);
  s = {};
  s.rounds = 1;
  EXPECT_NE(tune::cache_key(devs, {}, 2, o, s), k);
  s = {};
  s.refine = 0;
  EXPECT_NE(tune::cache_key(devs, {}, 2, o, s), k);
  auto o2 = o;
  o2.nccl_register = model::CommRegister::Window;
  EXPECT_NE(tune::cache_key(devs, {}, 2, o2, {}), k) << "the run's own registration is the workload's";
}

TEST(Plan, RegistrationAndOwnTimesAreRecorded) {
  std::vector<tune::Tried> tried(2);
  tried[0].spec = {Mode::Concurrent};
  tried[0].t_us = 400;
  tried[1].spec = {Mode::Concurrent};
  tried[1].spec.controls.nccl_ctas = 48;
  tried[1].spec.controls.nccl_reg = model::CommRegister::Window;
  tried[1].t_us = 330;
  tried[1].comp_alone_us = 210;
  tried[1].comm_alone_us = 228;
  bench::Report rep;
  rep.nranks = 2;
  rep.devices = nlohmann::json::array({{{"name", "NVIDIA H200"}, {"sms", 132}}});
  const auto j = tune::plan_json(rep, tried, tune::pick_best(tried), "0123456789abcdef");
  const auto& c = j.at("tuning").at("choice");
  EXPECT_EQ(c.at("label"), "concurrent ctas=48 reg=window");
  EXPECT_EQ(c.at("nccl_register"), 2);
  EXPECT_DOUBLE_EQ(c.at("comp_alone_us").get<double>(), 210);
  EXPECT_DOUBLE_EQ(c.at("comm_alone_us").get<double>(), 228);
  EXPECT_DOUBLE_EQ(j.at("tuning").at("tried")[1].at("comm_alone_us").get<double>(), 228);
  // Against its own parts: (210 + 228 - 330) / min(210, 228).
  EXPECT_NEAR(c.at("own_efficiency").get<double>(), 108.0 / 210.0, 1e-12);
  EXPECT_NEAR(tried[1].own_efficiency(), 108.0 / 210.0, 1e-12);
  // Parts not timed: no figure (null in JSON, never NaN).
  EXPECT_TRUE(std::isnan(tried[0].own_efficiency()));
  EXPECT_TRUE(j.at("tuning").at("tried")[0].at("own_efficiency").is_null());
  // `cco run` cannot register a program's buffers: it gets the fastest candidate it can apply
  // whole (here plain concurrent), not the window's 48 CTAs on unregistered buffers.
  EXPECT_EQ(j.at("tuning").at("applied").at("label"), "concurrent");
  EXPECT_TRUE(j.at("environment").empty()) << j.at("environment");
  EXPECT_EQ(j.at("priority").at("nccl"), "default");
  bool noted = false;
  for (const auto& n : j.at("tuning").at("notes"))
    noted = noted || n.get<std::string>().find("`cco run` applies 'concurrent'") != std::string::npos;
  EXPECT_TRUE(noted) << j.at("tuning").at("notes");
  // A faster applicable candidate is preferred over slower ones, and an applicable choice is
  // applied itself, with no note.
  tried.push_back(tried[0]);
  tried[2].spec = {Mode::Priority};
  tried[2].spec.controls.nccl_ctas = 32;
  tried[2].t_us = 380;
  EXPECT_EQ(tune::applied_index(tried, 1), 2u);
  const auto j2 = tune::plan_json(rep, tried, 1, "0123456789abcdef");
  EXPECT_EQ(j2.at("nccl").at("max_ctas"), 32);
  EXPECT_EQ(j2.at("nccl").at("min_ctas"), 32);
  EXPECT_TRUE(j2.at("environment").empty());
  EXPECT_EQ(j2.at("priority").at("nccl"), "high");
  EXPECT_EQ(tune::applied_index(tried, 2), 2u);
  EXPECT_TRUE(tune::plan_json(rep, tried, 2, "k").at("tuning").at("notes").empty());
  for (const bool green : {true, false}) {
    RowSpec r{Mode::Priority};
    EXPECT_TRUE(tune::run_applicable(r));
    if (green) r.controls.green_sms = 64;
    else r.controls.nccl_reg = model::CommRegister::Window;
    EXPECT_FALSE(tune::run_applicable(r)) << r.label();
  }
  // The GEMMs' SM target now reaches programs (the library's sm-target): a choice with one is
  // applied whole, and the plan carries it in its gemm section, communication-aware.
  tried[2].spec.controls.gemm_sms = 100;
  tried[2].t_us = 300;  // now the fastest
  EXPECT_TRUE(tune::run_applicable(tried[2].spec));
  EXPECT_EQ(tune::applied_index(tried, 2), 2u);
  const auto j3 = tune::plan_json(rep, tried, 2, "k");
  EXPECT_EQ(j3.at("gemm").at("sm_target"), 100);
  EXPECT_EQ(j3.at("gemm").at("when"), "overlap");
  EXPECT_TRUE(j3.at("tuning").at("tried")[2].at("run_applicable").get<bool>());
  EXPECT_FALSE(j3.at("tuning").at("tried")[1].at("run_applicable").get<bool>());  // a window
  // And it parses as a plan that asks for exactly that.
  const auto p3 = cco::plan::parse(j3.dump());
  EXPECT_EQ(p3.gemm.sm_target, 100);
  EXPECT_EQ(p3.gemm.when, cco::plan::When::Overlap);
  EXPECT_EQ(p3.nccl.max_ctas, 32);
}

TEST(Space, ZeroCtaPolicyIsOneRowWhereTheCopyEnginesCanCarryIt) {
  auto in = cublas_input();
  const auto plain = tune::build_space(in, {});
  in.copy_engine = true;  // all-gather or all-to-all, a window available
  std::vector<std::string> notes;
  const auto rows = tune::build_space(in, {}, &notes);
  ASSERT_EQ(rows.size(), plain.size() + 1) << "zero adds exactly one candidate by default";
  const auto& z = rows.front();
  EXPECT_EQ(z.label(), "concurrent reg=window cta=zero");
  EXPECT_FALSE(z.controls.gemm_sms);
  EXPECT_FALSE(z.controls.nccl_ctas);
  EXPECT_TRUE(std::any_of(notes.begin(), notes.end(),
                          [](auto& n) { return n.find("uses no SMs") != std::string::npos; }));
  EXPECT_TRUE(tune::neighbours(in, z).empty()) << "no SM control to step on the copy engines";
  EXPECT_FALSE(tune::run_applicable(z)) << "a program's buffers are not in a symmetric window";
  // The run's own registration is a window already: the row uses it.
  in.run_reg = 2;
  EXPECT_FALSE(tune::build_space(in, {}).front().controls.nccl_reg);
  // Asked for where it cannot apply: pruned with a note, never a row that would run on SMs.
  in.copy_engine = false;
  tune::SpaceOptions opt;
  opt.cta_policies = {model::CtaPolicy::Zero};
  notes.clear();
  EXPECT_EQ(tune::build_space(in, opt, &notes).size(), plain.size());
  EXPECT_TRUE(std::any_of(notes.begin(), notes.end(),
                          [](auto& n) { return n.find("cta=zero pruned") != std::string::npos; }));
}

TEST(Space, EfficiencyPolicyIsCrossedWithoutCtaCounts) {
  auto in = cublas_input();
  tune::SpaceOptions opt;
  opt.cta_policies = {model::CtaPolicy::Efficiency};
  const auto rows = tune::build_space(in, opt);
  const auto plain = tune::build_space(in, {});
  std::vector<RowSpec> eff;
  for (const auto& r : rows)
    if (r.controls.cta_policy == model::CtaPolicy::Efficiency) eff.push_back(r);
  EXPECT_EQ(eff.size(), 8u * 2) << "SM budgets x priority, one CTA setting: the policy's own";
  EXPECT_EQ(rows.size(), plain.size() + eff.size());
  for (const auto& r : eff) EXPECT_FALSE(r.controls.nccl_ctas);
  for (const auto& n : tune::neighbours(in, eff[0])) EXPECT_FALSE(n.controls.nccl_ctas) << n.label();
  EXPECT_TRUE(tune::run_applicable(eff[0])) << "NCCL_CTA_POLICY reaches a program";
  const auto plan = tune::plan_base(eff[0], 0, nlohmann::json::array(), 2, nlohmann::json::object(), "t");
  EXPECT_EQ(plan["nccl"]["cta_policy"], "efficiency");
  // The plan the tuner writes is one `cco run` reads back.
  EXPECT_EQ(cco::plan::parse(plan.dump()).nccl.cta_policy, model::CtaPolicy::Efficiency);
}
