// Report formats: the table against a golden file, JSON schema and round trip, CSV columns.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "bench/comm_path.hpp"
#include "bench/report.hpp"
#include "model/types.hpp"

using namespace cco::bench;

namespace {

Report sample_report() {
  Report r;
  r.argv = {"bench", "-g", "2", "--compute", "builtin"};
  r.date = "2026-11-22T00:00:00Z";
  r.host = "testhost";
  r.nranks = 2;
  r.versions = {{"cuda_driver", "13.0"}, {"nccl", "2.28.9"}};
  r.devices = nlohmann::json::array({{{"rank", 0}, {"device", 0}, {"name", "GPU A"}, {"pci_bus_id", "0000:01:00.0"}, {"sms", 132}},
                                     {{"rank", 1}, {"device", 1}, {"name", "GPU B"}, {"pci_bus_id", "0000:02:00.0"}, {"sms", 132}}});
  r.compute = "builtin bfloat16 4096x4096x4096 x4";
  r.collective = "allreduce";
  r.dtype = "float";
  r.redop = "sum";
  r.notes = {"a note"};
  // T_comp = 1000, T_comm = 600, T_seq = 1600.
  auto base = [](Row& row) {
    row.bytes = 256 << 20;
    row.count = 64 << 20;
    row.t_comp.samples = {1000, 990, 1010};
    row.t_comm.samples = {600, 610, 590};
    row.t_seq.samples = {1600, 1590, 1610};
    row.t_comp_alone = row.t_comp;
    row.flops = 2.0 * 4096.0 * 4096.0 * 4096.0 * 4;
    row.comm_busbw_factor = 1.0;  // 2 ranks all-reduce: 2(n-1)/n = 1
    row.checked = true;
  };
  Row seq;
  base(seq);
  seq.spec.mode = Mode::Seq;
  seq.t = seq.t_seq;
  seq.t_comp_part.samples = {1000, 1000, 1000};
  seq.t_comm_part.samples = {1600, 1600, 1600};
  seq.blocks_per_sm = 4;
  Row conc;
  base(conc);
  conc.spec.mode = Mode::Concurrent;
  conc.t.samples = {1300, 1290, 1310};  // reduction 1 - 1300/1600 = 18.75%, E = 300/600 = 0.5
  conc.t_comp_part.samples = {1250, 1250, 1250};
  conc.t_comm_part.samples = {1280, 1280, 1280};
  conc.blocks_per_sm = 4;
  Row shp;
  base(shp);
  shp.spec.mode = Mode::ShapePriority;
  shp.spec.set_k(2);
  shp.pad = 49152;
  shp.blocks_per_sm = 2;
  shp.t.samples = {1100, 1090, 1110};  // reduction 31.25%, E = 500/600 = 0.83
  shp.t_comp_part.samples = {1100, 1100, 1100};
  shp.t_comm_part.samples = {800, 800, 800};
  shp.t_comp_alone.samples = {1050, 1050, 1050};
  // Its own communicator is faster alone (500 vs 600): the best sequential time is 1000 + 500.
  shp.t_comm_alone.samples = {500, 500, 500};
  shp.wrong = 0;
  r.rows = {seq, conc, shp};
  return r;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string full_text(const Report& r) {
  std::string t = format_header(r) + format_table_header();
  for (const auto& row : r.rows) t += format_row(row, r);
  return t + format_footer(r);
}

/// The report's full text against tests/lab/bench/golden/NAME; CCO_UPDATE_GOLDEN=1 rewrites the file
/// instead (and the test says so by skipping).
void expect_golden_text(const std::string& name, const std::string& text) {
  const std::string path = std::string(CCO_GOLDEN_DIR) + "/" + name;
  if (std::getenv("CCO_UPDATE_GOLDEN")) {
    std::ofstream(path) << text;
    GTEST_SKIP() << "golden file rewritten: " << path;
  }
  const std::string golden = read_file(path);
  ASSERT_FALSE(golden.empty()) << "missing golden file " << path;
  EXPECT_EQ(text, golden);
}

void expect_golden(const std::string& name, const Report& r) { expect_golden_text(name, full_text(r)); }

}  // namespace

TEST(Report, TableMatchesGolden) { expect_golden("table.txt", sample_report()); }

TEST(Report, TableFiguresAreTheMetrics) {
  const auto r = sample_report();
  const auto line = format_row(r.rows[1], r);
  EXPECT_NE(line.find("18.8"), std::string::npos) << line;     // reduction %
  EXPECT_NE(line.find("37.5"), std::string::npos) << line;     // ideal reduction 1 - 1000/1600
  EXPECT_NE(line.find(" 0.50 "), std::string::npos) << line;   // efficiency
  const auto footer = format_footer(r);
  EXPECT_NE(footer.find("Out of bounds values : 0 OK"), std::string::npos) << footer;
  // nccl-tests' summary: 256 MiB in the collective's 600 us alone, busbw factor 1 at 2 ranks.
  EXPECT_NE(footer.find("# Avg bus bandwidth    : 447.39 "), std::string::npos) << footer;
  EXPECT_NE(footer.find("best at 256M: shape+priority bps=2 pad=49152"), std::string::npos) << footer;
}

// The best row's own settings are named in the footer, as in the table's label: a row that won on
// the copy engines must not read as plain `priority` (2-GPU run of 2026-11-26).
TEST(Report, FooterNamesTheBestRowsSettings) {
  auto r = sample_report();
  Row zero = r.rows[1];  // concurrent, 1300 us
  zero.spec.mode = Mode::Priority;
  zero.spec.controls.nccl_reg = cco::model::CommRegister::Window;
  zero.spec.controls.cta_policy = cco::model::CtaPolicy::Zero;
  zero.t.samples = {900, 890, 910};
  r.rows.push_back(zero);
  const auto footer = format_footer(r);
  EXPECT_NE(footer.find("# best at 256M: priority reg=window cta=zero  reduction"), std::string::npos)
      << footer;
}

// The memory-traffic floor: printed under the best row, and T_ideal where it binds (above
// max(C, M) = 1000 us), in the table's figures and the JSON.
TEST(Report, MemoryTrafficFloorIsPrintedAndBindsAboveMaxCM) {
  for (const double floor : {800.0, 1200.0}) {
    auto r = sample_report();
    for (auto& row : r.rows) row.t_mem_us = floor;
    const auto footer = format_footer(r);
    const std::string said = floor > 1000 ? ": it, not max(C, M), is T_ideal here"
                                          : ": below max(C, M), not binding";
    EXPECT_NE(footer.find("#   memory-traffic floor " + std::string(floor > 1000 ? "1200.0" : "800.0") +
                          " us (the least bytes both parts move, at the device's peak bandwidth)" + said),
              std::string::npos) << footer;
    const auto j = to_json(r);
    EXPECT_DOUBLE_EQ(j["results"][1]["t_mem_us"].get<double>(), floor);
    EXPECT_DOUBLE_EQ(j["results"][1]["t_ideal_us"].get<double>(), std::max(1000.0, floor));
  }
  EXPECT_TRUE(to_json(sample_report())["results"][1]["t_mem_us"].is_null());  // unknown: null
}

// E_best (issue 18) derived by hand from the sample: the fastest compute alone is the baseline's
// 1000 us (the shaped row's own is 1050), the fastest collective alone the shaped row's own
// communicator, 500 us (the baseline's is 600). S = 1500, S - L = min(1000, 500) = 500.
// concurrent: (1500 - 1300) / 500 = 0.40 (E says 0.50: it credits the faster collective);
// shape+priority: (1500 - 1100) / 500 = 0.80; seq: (1500 - 1600) / 500 = -0.20.
TEST(Report, EfficiencyAgainstTheBestPartsMeasured) {
  const auto r = sample_report();
  const auto b = best_parts(r, 256 << 20);
  EXPECT_DOUBLE_EQ(b.comp, 1000.0);
  EXPECT_DOUBLE_EQ(b.comm, 500.0);
  EXPECT_NEAR(efficiency_best(r.rows[0], r), -0.20, 1e-12);
  EXPECT_NEAR(efficiency_best(r.rows[1], r), 0.40, 1e-12);
  EXPECT_NEAR(efficiency_best(r.rows[2], r), 0.80, 1e-12);
  const auto line = format_row(r.rows[1], r);
  EXPECT_NE(line.find(" 0.50   0.40 "), std::string::npos) << line;  // eff, then E_best
  const auto j = to_json(r);
  EXPECT_NEAR(j.at("results")[2].at("efficiency_best").get<double>(), 0.80, 1e-12);
  EXPECT_DOUBLE_EQ(j.at("results")[2].at("best_parts_us").at("collective").get<double>(), 500.0);
  EXPECT_NE(format_footer(r).find("efficiency 0.83, E_best 0.80"), std::string::npos)
      << format_footer(r);
  // Another size's parts do not count.
  EXPECT_DOUBLE_EQ(best_parts(r, 64 << 20).comp, 0.0);
  EXPECT_TRUE(std::isnan(cco::model::efficiency_best(0, 500, 100))) << "a part never measured";
}

TEST(Report, WrongElementsAreReportedAsFailed) {
  auto r = sample_report();
  r.rows[2].wrong = 3;
  EXPECT_NE(format_footer(r).find("Out of bounds values : 3 FAILED"), std::string::npos);
  EXPECT_NE(format_row(r.rows[2], r).find(" 3\n"), std::string::npos);
}

TEST(Report, JsonSchemaAndRoundTrip) {
  const auto r = sample_report();
  const auto j = nlohmann::json::parse(to_json(r).dump());
  EXPECT_EQ(j.at("schema"), "ccoverlap.bench");
  EXPECT_EQ(j.at("schema_version"), "1.0.0");
  EXPECT_EQ(j.at("argv").size(), 5u);
  EXPECT_EQ(j.at("devices").size(), 2u);
  EXPECT_EQ(j.at("versions").at("nccl"), "2.28.9");
  ASSERT_EQ(j.at("results").size(), 3u);
  const auto& row = j.at("results")[2];
  EXPECT_EQ(row.at("mode"), "shape+priority");
  EXPECT_EQ(row.at("pad_bytes"), 49152);
  EXPECT_EQ(row.at("t").at("samples_us").size(), 3u);
  EXPECT_DOUBLE_EQ(row.at("t").at("median_us").get<double>(), 1100.0);
  EXPECT_NEAR(row.at("reduction").get<double>(), 0.3125, 1e-12);
  EXPECT_NEAR(row.at("efficiency").get<double>(), 500.0 / 600.0, 1e-12);
  EXPECT_NEAR(row.at("t_ideal_us").get<double>(), 1000.0, 1e-12);
  // busbw: 256 MiB in 800 us, factor 1; algbw the same before the factor
  EXPECT_NEAR(row.at("busbw_gbps").get<double>(), 268435456.0 / 800e-6 / 1e9, 1e-9);
  EXPECT_NEAR(row.at("algbw_gbps").get<double>(), 268435456.0 / 800e-6 / 1e9, 1e-9);
  // TFLOP/s from the compute part under overlap (1100 us)
  EXPECT_NEAR(row.at("tflops").get<double>(), 2.0 * 4096.0 * 4096.0 * 4096.0 * 4 / 1100e-6 / 1e12, 1e-9);
}

// nccl-tests' two bandwidths: algbw = size / time; busbw = algbw x the collective's factor
// (all-reduce on 4 ranks: 2(n-1)/n = 1.5). 256 MiB in 800 us: 335.5 and 503.3 GB/s.
TEST(Report, AlgbwAndBusbw) {
  auto r = sample_report();
  for (auto& row : r.rows) row.comm_busbw_factor = 1.5;
  const auto j = to_json(r);
  const auto& row = j.at("results")[2];
  EXPECT_NEAR(row.at("algbw_gbps").get<double>(), 268435456.0 / 800e-6 / 1e9, 1e-9);
  EXPECT_NEAR(row.at("busbw_gbps").get<double>(), 1.5 * 268435456.0 / 800e-6 / 1e9, 1e-9);
  const auto line = format_row(r.rows[2], r);
  EXPECT_NE(line.find("  335.5   503.3 "), std::string::npos) << line;
}

TEST(Report, CsvHasOneLinePerRowAndTheColumns) {
  const auto r = sample_report();
  const auto csv = to_csv(r);
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  const auto cols = csv_columns();
  std::string expect;
  for (std::size_t i = 0; i < cols.size(); ++i) expect += (i ? "," : "") + cols[i];
  EXPECT_EQ(line, expect);
  int rows = 0;
  while (std::getline(in, line)) {
    ++rows;
    EXPECT_EQ(std::count(line.begin(), line.end(), ','), static_cast<long>(cols.size() - 1)) << line;
  }
  EXPECT_EQ(rows, 3);
}

TEST(Report, EmptySamplesAreNotANumberNotACrash) {
  Report r;
  Row row;
  r.rows = {row};
  EXPECT_NE(format_row(row, r).find("n/a"), std::string::npos);
  const auto j = to_json(r);
  EXPECT_TRUE(j.at("results")[0].at("reduction").is_null());
}

// Found by fuzz_bench_options (tests/fuzz/regressions/bench_options/latin1_json_path): argv in
// Latin-1 made the report unwritable after the whole run. json_text replaces such bytes.
TEST(Report, NonUtf8ArgvStillWrites) {
  auto r = sample_report();
  r.argv.push_back("--json");
  r.argv.push_back("r\xE9sultat.json");
  EXPECT_THROW((void)to_json(r).dump(1), nlohmann::json::type_error);
  const auto text = json_text(to_json(r));
  EXPECT_NE(text.find("r\xEF\xBF\xBDsultat.json"), std::string::npos);  // U+FFFD
  EXPECT_EQ(nlohmann::json::parse(text).at("argv").size(), r.argv.size());
}

namespace {
cco::trace::KernelEvent kernel(const std::string& name, int rank, int64_t start, int ctas) {
  cco::trace::KernelEvent k;
  k.name = name;
  k.rank = rank;
  k.device = rank;
  k.start_ns = start;
  k.end_ns = start + 10;
  k.grid = {ctas, 1, 1};
  return k;
}
}  // namespace

TEST(CommPath, CountsOnlyTheRanksNcclKernelsBetweenItsMarks) {
  cco::trace::Trace t;
  const std::string zero = "cta=zero reg=window, 256M", dflt = "cta=default, 256M";
  t.marks = {{100, 0, probe_mark(zero, true)},  {200, 0, probe_mark(zero, false)},
             {300, 0, probe_mark(dflt, true)},  {400, 0, probe_mark(dflt, false)},
             {100, 1, probe_mark(zero, true)},  {200, 1, probe_mark(zero, false)}};
  t.kernels = {kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 0, 50, 24),  // before
               kernel("gemm_kernel", 0, 150, 132),                                     // not NCCL
               kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 1, 150, 16),  // rank 1
               kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 0, 310, 24),
               kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 0, 320, 8)};
  const auto z0 = classify_comm_path(t, 0, zero);
  EXPECT_TRUE(z0.known);
  EXPECT_EQ(z0.nccl_kernels, 0) << "a GEMM and kernels outside the marks are not the collective";
  EXPECT_EQ(comm_path_json(z0)["path"], "copy-engine");
  const auto z1 = classify_comm_path(t, 1, zero);
  EXPECT_EQ(z1.nccl_kernels, 1);
  EXPECT_EQ(z1.max_ctas, 16);
  EXPECT_EQ(comm_path_json(z1)["path"], "sm");
  const auto d0 = classify_comm_path(t, 0, dflt);
  EXPECT_EQ(d0.nccl_kernels, 2);
  EXPECT_EQ(d0.max_ctas, 24);
  EXPECT_EQ(d0.names.size(), 1u) << "names are distinct";
  // An all-reduce split: its reduce-scatter kernels are SMs by design; only an all-gather kernel
  // means the copy engines were not used.
  cco::trace::Trace s = t;
  s.kernels = {kernel("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", 0, 310, 24)};
  const auto rs_only = classify_comm_path(s, 0, dflt);
  EXPECT_EQ(rs_only.allgather_kernels, 0);
  EXPECT_EQ(comm_path_json(rs_only, true)["path"], "sm+copy-engine");
  EXPECT_EQ(comm_path_json(rs_only, false)["path"], "sm");
  EXPECT_EQ(comm_path_json(d0, true)["path"], "sm") << "an all-gather kernel ran";
  const auto none = classify_comm_path(t, 1, dflt);
  EXPECT_FALSE(none.known) << "rank 1 has no marks for it";
  EXPECT_EQ(comm_path_json(none)["path"], "unknown");
  EXPECT_TRUE(comm_path_json(none).contains("why"));
}

// A collective on a buffer in a symmetric window runs NCCL 2.28's symmetric kernels
// (ncclSymkDevKernel_*): SMs, not the copy engines. On 2 H100s (2026-11-26) the TP step's
// reduce-scatters under cta=zero were reported "no NCCL kernel ran (copy engines)" because only
// ncclDevKernel_* names counted.
TEST(CommPath, SymmetricKernelsAreSms) {
  cco::trace::Trace t;
  const std::string zero = "cta=zero, reducescatter";
  t.marks = {{100, 0, probe_mark(zero, true)}, {200, 0, probe_mark(zero, false)}};
  t.kernels = {kernel("ncclSymkDevKernel_ReduceScatter_LD_sum_bf16(ncclSymkDevWorkArgs4K)", 0, 150, 32)};
  const auto p = classify_comm_path(t, 0, zero);
  EXPECT_EQ(p.nccl_kernels, 1);
  EXPECT_EQ(comm_path_json(p)["path"], "sm");
  // A symmetric all-gather kernel in an all-reduce split means the copy engines were not used.
  t.kernels.push_back(kernel("ncclSymkDevKernel_AllGather_ST(ncclSymkDevWorkArgs4K)", 0, 170, 32));
  EXPECT_EQ(comm_path_json(classify_comm_path(t, 0, zero), true)["path"], "sm");
}

// The notes: a zero-CTA collective on SMs is a warning where NCCL could have used the copy engines,
// and expected where it has no such path (a step's reduce-scatters on its zero-CTA communicator).
TEST(CommPath, NotesSayWhetherSmsWereExpected) {
  const auto zero = cco::model::CtaPolicy::Zero;
  const nlohmann::json sm = {{"path", "sm"}, {"nccl_kernels", 32}, {"max_ctas", 9}};
  EXPECT_EQ(path_note("cta=zero, the step's allgathers", zero, sm, 2, true),
            "collective cta=zero, the step's allgathers: on SMs (32 NCCL kernels, up to 9 CTAs); NCCL "
            "did not honour CTA policy zero here: these rows measure its SM path");
  EXPECT_EQ(path_note("cta=zero, the step's reducescatters", zero, sm, 2, false),
            "collective cta=zero, the step's reducescatters: on SMs (32 NCCL kernels, up to 9 CTAs); "
            "as expected under CTA policy zero: NCCL has no copy-engine path for it");
  EXPECT_EQ(path_note("cta=default, 256M", cco::model::CtaPolicy::Default, sm, 2, false),
            "collective cta=default, 256M: on SMs (32 NCCL kernels, up to 9 CTAs)");
  EXPECT_EQ(path_note("cta=zero, 64M", zero, {{"path", "copy-engine"}}, 1),
            "collective cta=zero, 64M: no NCCL kernel ran (copy engines; with one rank NCCL copies "
            "locally whatever the policy)");
}

// Each part under overlap against itself alone (issue 18, item 4), by hand from the sample: the
// shaped row's compute took 1100 us beside the collective and 1050 us alone (1.05x); its
// collective 800 us beside the compute and 500 us alone on its own communicator (1.60x). So the
// collective is what overlap slowed.
TEST(Report, SlowdownNamesThePartOverlapSlowedMost) {
  const auto r = sample_report();
  const auto s = slowdown(r.rows[2]);
  EXPECT_NEAR(s.comp, 1100.0 / 1050.0, 1e-12);
  EXPECT_NEAR(s.comm, 800.0 / 500.0, 1e-12);
  const auto v = slowdown_verdict(r.rows[2]);
  EXPECT_NE(v.find("compute part took 1.05x its time alone, the collective 1.60x"), std::string::npos) << v;
  EXPECT_NE(v.find("the collective is slowed most: it waits for SMs"), std::string::npos) << v;
  EXPECT_EQ(slowdown_verdict(r.rows[0]), "") << "seq has nothing overlapped";
  const auto j = to_json(r);
  EXPECT_NEAR(j.at("results")[2].at("comm_slowdown").get<double>(), 1.6, 1e-12);
  EXPECT_NE(format_footer(r).find("#   under overlap the compute part took 1.05x"), std::string::npos);
  // The same row on the copy engines names memory bandwidth, and a compute part slowed most
  // names the collective's traffic.
  auto ce = r.rows[2];
  ce.comm_path = {{"path", "copy-engine"}};
  EXPECT_NE(slowdown_verdict(ce).find("shares memory bandwidth, not SMs"), std::string::npos);
  auto comp = r.rows[2];
  comp.t_comp_part.samples = {1400, 1400, 1400};
  comp.t_comm_part.samples = {510, 510, 510};
  EXPECT_NE(slowdown_verdict(comp).find("the compute part is slowed most"), std::string::npos);
  auto none = r.rows[2];
  none.t_comp_part.samples = {1060, 1060, 1060};
  none.t_comm_part.samples = {510, 510, 510};
  EXPECT_NE(slowdown_verdict(none).find("neither slowed by more than 5%"), std::string::npos);
}

namespace {
// The sample run again with -d all and --in-place 1 (issue 19, item 6): float as in the sample,
// half with every time 10% lower and its own collective alone (T_comm 540, in place 500).
Report typed_report() {
  Report r = sample_report();
  r.dtype = "all";
  r.in_place = "measured";
  const auto floats = r.rows;
  r.rows.clear();
  for (const char* t : {"float", "half"}) {
    for (auto row : floats) {
      row.dtype = t;
      row.in_place = true;
      row.t_comm_in_place.samples = {580, 570, 590};
      if (std::string(t) == "half") {
        for (Timing* x : {&row.t_comp, &row.t_comm, &row.t_seq, &row.t, &row.t_comp_part,
                          &row.t_comm_part, &row.t_comp_alone, &row.t_comm_alone})
          for (double& v : x->samples) v *= 0.9;
        row.t_comm_in_place.samples = {500, 500, 500};
        row.count *= 2;
      }
      r.rows.push_back(row);
    }
  }
  return r;
}
}  // namespace

TEST(Report, TypedInPlaceTableMatchesGolden) { expect_golden("table_all_in_place.txt", typed_report()); }

// The JSON result (ccoverlap.bench) byte for byte: its writer may move (issue 35 item 2: one
// writer per format, in the core) but what it writes does not change.
TEST(Report, JsonMatchesGolden) {
  auto r = sample_report();
  r.config = {{"average", 3}};
  r.rows[2].spec.controls.cta_policy = cco::model::CtaPolicy::Efficiency;
  r.rows[2].cta_policy = cco::model::CtaPolicy::Efficiency;
  r.rows[2].t_mem_us = 1200;
  r.rows[1].comm_path = {{"path", "sms"}, {"ranks", 2}};
  expect_golden_text("result.json", json_text(to_json(r)) + "\n");
}
TEST(Report, TypedInPlaceJsonMatchesGolden) {
  expect_golden_text("result_all_in_place.json", json_text(to_json(typed_report())) + "\n");
}

// Each row names its type (table, JSON, CSV); E_best and the footer's best row are per type and
// size, never across types.
TEST(Report, SeveralTypesAreTellApartEverywhere) {
  const auto r = typed_report();
  EXPECT_NE(format_row(r.rows[4], r).find("  half "), std::string::npos)
      << format_row(r.rows[4], r);
  EXPECT_NE(format_row(r.rows[1], r).find(" float "), std::string::npos);
  EXPECT_EQ(row_dtype(r.rows[4], r), "half");
  Row plain;
  EXPECT_EQ(row_dtype(plain, r), "all") << "a row naming no type: the report's";
  // half's parts alone are 10% faster; float's best parts stay the sample's (1000, 500).
  EXPECT_DOUBLE_EQ(best_parts(r, 256 << 20, "float").comm, 500.0);
  EXPECT_DOUBLE_EQ(best_parts(r, 256 << 20, "half").comm, 450.0);
  EXPECT_DOUBLE_EQ(best_parts(r, 256 << 20).comm, 450.0) << "no type given: every row of the size";
  EXPECT_NEAR(efficiency_best(r.rows[2], r), 0.80, 1e-12);
  EXPECT_NEAR(efficiency_best(r.rows[5], r), 0.80, 1e-12) << "half against half's own parts";
  const auto footer = format_footer(r);
  EXPECT_NE(footer.find("# best at 256M float: shape+priority"), std::string::npos) << footer;
  EXPECT_NE(footer.find("# best at 256M half: shape+priority"), std::string::npos) << footer;
  EXPECT_LT(footer.find("best at 256M float"), footer.find("best at 256M half")) << "in run order";
  const auto j = to_json(r);
  EXPECT_EQ(j.at("workload").at("datatype"), "all");
  ASSERT_EQ(j.at("results").size(), 6u);
  EXPECT_EQ(j.at("results")[0].at("dtype"), "float");
  EXPECT_EQ(j.at("results")[5].at("dtype"), "half");
  EXPECT_NEAR(j.at("results")[5].at("efficiency_best").get<double>(), 0.80, 1e-12);
  std::istringstream csv(to_csv(r));
  std::string line;
  std::getline(csv, line);
  std::vector<std::string> types;
  while (std::getline(csv, line)) {
    const auto a = line.find(','), b = line.find(',', a + 1), c = line.find(',', b + 1);
    types.push_back(line.substr(b + 1, c - b - 1));
  }
  EXPECT_EQ(types, (std::vector<std::string>{"float", "float", "float", "half", "half", "half"}));
  // One type: no type in the footer, "dtype" in every JSON row all the same.
  const auto one = sample_report();
  EXPECT_NE(format_footer(one).find("# best at 256M: shape+priority"), std::string::npos);
  EXPECT_EQ(to_json(one).at("results")[0].at("dtype"), "float");
}

// The collective alone in place beside out of place, as nccl-tests prints both: 256 MiB in
// 600 us out of place (447.4 GB/s), 580 us in place (462.8 GB/s); factor 1 on 2 ranks.
TEST(Report, InPlaceBesideOutOfPlace) {
  const auto r = typed_report();
  const auto lines = format_in_place(r);
  EXPECT_NE(lines.find("# collective alone at 256M float: out of place 600.0 us (algbw 447.4, "
                       "busbw 447.4 GB/s), in place 580.0 us (algbw 462.8, busbw 462.8 GB/s), "
                       "in-place #wrong 0\n"),
            std::string::npos)
      << lines;
  EXPECT_NE(lines.find("# collective alone at 256M half: out of place 540.0 us"), std::string::npos)
      << lines;
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 2) << "one line per size and type";
  EXPECT_NE(format_footer(r).find(lines), std::string::npos) << "the footer ends with them";
  const auto j = to_json(r);
  EXPECT_EQ(j.at("in_place").at("measured"), true);
  const auto& x = j.at("results")[1];
  EXPECT_DOUBLE_EQ(x.at("t_comm_in_place").at("median_us").get<double>(), 580.0);
  EXPECT_NEAR(x.at("in_place_algbw_gbps").get<double>(), 268435456.0 / 580e-6 / 1e9, 1e-9);
  EXPECT_NEAR(x.at("in_place_busbw_gbps").get<double>(), 268435456.0 / 580e-6 / 1e9, 1e-9);
  EXPECT_NEAR(x.at("comm_algbw_gbps").get<double>(), 268435456.0 / 600e-6 / 1e9, 1e-9);
  EXPECT_EQ(x.at("in_place_wrong"), 0);
  // CSV: the in-place columns at the end, every line as wide as the header.
  const auto cols = csv_columns(r);
  ASSERT_EQ(cols.size(), csv_columns().size() + 6);
  EXPECT_EQ(cols.back(), "in_place_wrong");
  std::istringstream csv(to_csv(r));
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line.substr(line.rfind(',') + 1), "in_place_wrong");
  while (std::getline(csv, line))
    EXPECT_EQ(std::count(line.begin(), line.end(), ','), static_cast<long>(cols.size() - 1))
        << line;
  // Wrong in place, and unchecked: the footer says so.
  auto bad = r;
  bad.rows[0].in_place_wrong = 2;
  bad.rows[0].wrong += 2;  // the runner counts them once, in the size's first row
  EXPECT_NE(format_footer(bad).find("in-place #wrong 2"), std::string::npos);
  EXPECT_NE(format_footer(bad).find("Out of bounds values : 2 FAILED"), std::string::npos);
  auto unchecked = r;
  for (auto& row : unchecked.rows) row.checked = false;
  EXPECT_NE(format_in_place(unchecked).find("in-place #wrong n/a"), std::string::npos);
  // Asked for, but the collective has no in-place form: said in the JSON, no row fields.
  auto skipped = sample_report();
  skipped.in_place = "alltoall has no in-place form in NCCL";
  const auto js = to_json(skipped);
  EXPECT_EQ(js.at("in_place").at("measured"), false);
  EXPECT_EQ(js.at("in_place").at("why"), "alltoall has no in-place form in NCCL");
  EXPECT_FALSE(js.at("results")[0].contains("t_comm_in_place"));
  EXPECT_EQ(format_in_place(skipped), "");
  EXPECT_EQ(csv_columns(skipped), csv_columns()) << "off: the CSV is as it was";
  EXPECT_FALSE(to_json(sample_report()).contains("in_place"));
}
