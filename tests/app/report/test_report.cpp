// The SVG writer, the timeline picture and the bench sweep chart: every file parses back as
// well-formed XML with the expected elements; bench JSON errors are one clear line.
// CCO_TEST_SVG_DIR=<dir> keeps the pictures for looking at them.
#include <gtest/gtest.h>

#include <cstdlib>

#include <fmt/format.h>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <typeinfo>

#include "model/limits.hpp"
#include "trace/analysis.hpp"
#include "trace/format.hpp"
#include "report/diagnosis_text.hpp"
#include "report/svg.hpp"
#include "report/sweep.hpp"
#include "report/timeline.hpp"
#include "xml_check.hpp"

namespace {

using cco::trace::KernelCategory;
using cco::trace::KernelEvent;
using cco::trace::Trace;
using cco::test::check_xml;
namespace rp = cco::report;

void keep(const std::string& name, const std::string& svg) {
  if (const char* d = std::getenv("CCO_TEST_SVG_DIR"))
    std::ofstream(std::string(d) + "/" + name) << svg;
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

// Two ranks of a GEMM || all-reduce step, like `cco bench` runs it: compute on a priority-0
// stream, the collective on a priority -5 stream launched with the GEMMs but starting only when
// SMs free up.
Trace bench_like(int iterations = 3) {
  Trace t;
  for (int r = 0; r < 2; ++r) {
    cco::trace::RankInfo ri;
    ri.rank = r;
    ri.device = r;
    ri.device_name = "NVIDIA H200";
    ri.arch = "sm_90";
    ri.sm_count = 132;
    t.ranks.push_back(ri);
    t.streams.push_back({r, r, 13, -5, "comm"});
    t.streams.push_back({r, r, 14, 0, "compute"});
  }
  const int64_t base = 1'000'000'000;
  for (int it = 0; it < iterations; ++it) {
    for (int r = 0; r < 2; ++r) {
      const int64_t t0 = base + it * 2'000'000 + r * 3'000;
      for (int g = 0; g < 2; ++g) {
        KernelEvent k;
        k.name =
            "void cco::workloads::gemm_tiled<__nv_bfloat16, 128, 128>(int, int, int, const "
            "__nv_bfloat16*, const __nv_bfloat16*, __nv_bfloat16*)";
        k.category = KernelCategory::Compute;
        k.rank = r;
        k.device = r;
        k.stream = 14;
        k.start_ns = t0 + g * 600'000;
        k.end_ns = k.start_ns + 590'000;
        k.submitted_ns = t0 - 2'000;
        k.grid = {16, 16, 1};
        k.block = {256, 1, 1};
        k.registers = 63;
        k.static_smem = 16896;
        k.dynamic_smem = 40449;
        k.blocks_per_sm = 3;
        t.kernels.push_back(k);
      }
      KernelEvent c;
      c.name = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
      c.category = KernelCategory::Communication;
      c.rank = r;
      c.device = r;
      c.stream = 13;
      c.start_ns = t0 + 250'000 + r * 20'000;
      c.end_ns = t0 + 1'400'000;
      c.submitted_ns = t0 - 1'000;
      c.grid = {32, 1, 1};
      c.block = {640, 1, 1};
      c.registers = 96;
      t.kernels.push_back(c);
    }
  }
  t.marks = {{base - 5'000, -1, "iteration 0"}, {base + 2'000'000 - 5'000, -1, "iteration 1"}};
  t.normalize();
  return t;
}

std::string read_file(const std::string& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// ------------------------------------------------------------------------------------------
// The writer
// ------------------------------------------------------------------------------------------

TEST(Svg, EscapesText) {
  EXPECT_EQ(rp::xml_escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
  EXPECT_EQ(rp::xml_escape(std::string("x\x01y", 3)), "xy");  // control characters dropped
}

TEST(Svg, NiceTicks) {
  EXPECT_EQ(rp::nice_ticks(0, 10, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(rp::nice_ticks(0, 1, 4), (std::vector<double>{0, 0.5, 1}));
  const auto t = rp::nice_ticks(1555.7, 2558.2, 6);
  ASSERT_FALSE(t.empty());
  EXPECT_GE(t.front(), 1555.7);
  EXPECT_LE(t.back(), 2558.2);
  EXPECT_EQ(rp::nice_ticks(3, 3), (std::vector<double>{3}));
  EXPECT_TRUE(rp::nice_ticks(0, std::nan(""), 5).empty());
  EXPECT_EQ(rp::format_number(2.50, 3), "2.5");
  EXPECT_EQ(rp::format_number(-0.0001, 2), "0");
  EXPECT_EQ(rp::format_number(std::nan(""), 2), "n/a");
}

TEST(Svg, DocumentIsWellFormed) {
  rp::Svg s(200, 100);
  s.clip_rect("c", 0, 0, 100, 100);
  s.open_group("c");
  s.rect(1, 2, 3, 4, rp::fill_style("#f00"), "tip <&> \"here\"");
  s.close_group();
  s.line(0, 0, 10, 10, rp::line_style("#000", 1, "2 2"));
  s.polyline({{0, 0}, {1, 1}, {2, 0}}, rp::line_style("#00f", 2));
  s.circle(5, 5, 2, rp::fill_style("#0f0"));
  s.text(10, 20, "a < b & c", 12, "middle", "#222", "bold", -90);
  const auto x = check_xml(s.str());
  ASSERT_EQ(x.error, "");
  EXPECT_EQ(x.root, "svg");
  EXPECT_EQ(x.count.at("rect"), 3);  // background, clip, ours
  EXPECT_EQ(x.count.at("line"), 1);
  EXPECT_EQ(x.count.at("polyline"), 1);
  EXPECT_EQ(x.count.at("circle"), 1);
  EXPECT_EQ(x.count.at("text"), 1);
  EXPECT_EQ(x.count.at("title"), 1);
  EXPECT_EQ(x.count.at("clipPath"), 1);
  bool found = false;
  for (const auto& t : x.texts) found = found || t == "a < b & c";
  EXPECT_TRUE(found);
  EXPECT_EQ(s.elements(), 5u);
}

TEST(Svg, OpenGroupIsAnError) {
  rp::Svg s(10, 10);
  s.open_group();
  EXPECT_THROW((void)s.str(), std::logic_error);
  s.close_group();
  EXPECT_THROW(s.close_group(), std::logic_error);
}

TEST(Svg, CheckerCatchesBrokenXml) {
  EXPECT_NE(check_xml("<svg><g></svg>").error, "");
  EXPECT_NE(check_xml("<svg a=b></svg>").error, "");
  EXPECT_NE(check_xml("<svg>a & b</svg>").error, "");
  EXPECT_NE(check_xml("<svg></svg><svg></svg>").error, "");
  EXPECT_NE(check_xml("<svg><rect x=\"1\"").error, "");
  EXPECT_EQ(check_xml("<svg><rect x=\"1\"/>&amp;</svg>").error, "");
}

TEST(Svg, CheckerCatchesInvalidUtf8) {
  EXPECT_EQ(check_xml("<svg>caf\xc3\xa9 \xe2\x80\x96 \xf0\x9f\x99\x82</svg>").error, "");
  EXPECT_NE(check_xml("<svg>caf\xc3</svg>").error, "");       // cut sequence
  EXPECT_NE(check_xml("<svg>\xc0\xaf</svg>").error, "");      // overlong
  EXPECT_NE(check_xml("<svg>\xed\xa0\x80</svg>").error, "");  // surrogate
  EXPECT_NE(check_xml("<svg a=\"\xff\"></svg>").error, "");   // never valid
}

TEST(Svg, WriteFailsClearly) {
  rp::Svg s(10, 10);
  EXPECT_THROW(s.write("/nonexistent/dir/x.svg"), std::runtime_error);
}

// ------------------------------------------------------------------------------------------
// Timeline
// ------------------------------------------------------------------------------------------

TEST(Timeline, ShortKernelNames) {
  EXPECT_EQ(rp::short_kernel_name("void cco::workloads::gemm_tiled<__nv_bfloat16, 128>(int, int)"),
            "gemm_tiled");
  EXPECT_EQ(rp::short_kernel_name(
                "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL");
  EXPECT_EQ(rp::short_kernel_name("_Z11gemm_kernelv"), "gemm_kernel");
  EXPECT_EQ(rp::short_kernel_name("abcdefghijklmnop", 8), "abcde...");
  EXPECT_EQ(rp::short_kernel_name("<lambda>"), "<lambda>");
}

// The boxes of the summary rows (overlap, waiting, exposed), without the legend's.
std::size_t summary_boxes(const std::string& svg) {
  std::size_t n = 0;
  for (const char* c : {rp::kOverlapColour, rp::kWaitColour, rp::kExposedColour})
    n += count(svg, std::string("fill=\"") + c + "\"") - 1;
  return n;
}

TEST(Timeline, TwoRanksTwoStreams) {
  const Trace t = bench_like();
  rp::TimelineOptions o;
  o.title = "GEMM || all-reduce <synthetic>";
  const std::string svg = rp::timeline_svg(t, o).str();
  keep("timeline.svg", svg);
  const auto x = check_xml(svg);
  ASSERT_EQ(x.error, "");
  EXPECT_EQ(x.root, "svg");
  // 12 kernels, each a rect with a tooltip, in the two colours.
  EXPECT_EQ(count(svg, std::string("fill=\"") + rp::kComputeColour + "\""), 12u + 1u);  // + legend
  EXPECT_EQ(count(svg, std::string("fill=\"") + rp::kCommColour + "\""), 6u + 1u);
  EXPECT_GE(count(svg, std::string("fill=\"") + rp::kOverlapColour + "\""), 6u + 1u);
  EXPECT_GE(count(svg, std::string("fill=\"") + rp::kWaitColour + "\""), 6u + 1u);
  // kernels + the summary rows' boxes (every box has a tooltip; the legend's three have none)
  EXPECT_EQ(x.count.at("title"), 18u + summary_boxes(svg));
  std::string all;
  for (const auto& s : x.texts) all += s + "\n";
  EXPECT_NE(all.find("rank 0"), std::string::npos);
  EXPECT_NE(all.find("rank 1"), std::string::npos);
  EXPECT_NE(all.find("stream 13  priority -5  (comm)"), std::string::npos);
  EXPECT_NE(all.find("stream 14  priority 0  (compute)"), std::string::npos);
  EXPECT_NE(all.find("GEMM || all-reduce <synthetic>"), std::string::npos);
  // One measure and one wording with cco report's first line (issue 45: the SVG said "overlap
  // efficiency 0.23" where the text said "20% hidden").
  const auto an = cco::trace::analyze(t);
  EXPECT_NE(all.find(fmt::format("communication {:.0f}% hidden (overlapped / comm busy)",
                                 100 * an.all.overlap_ratio)),
            std::string::npos)
      << all;
  EXPECT_EQ(all.find("overlap efficiency"), std::string::npos);
  EXPECT_NE(all.find("communication kernel (NCCL)"), std::string::npos);
  EXPECT_NE(all.find("time (ms)"), std::string::npos);
  EXPECT_NE(all.find("iteration 1"), std::string::npos);  // marks are drawn
  // The urgent stream is drawn first within a rank.
  EXPECT_LT(svg.find("stream 13"), svg.find("stream 14"));
}

// bench_like() with NVTX ranges as `cco bench` pushes them: per rank and iteration an outer range
// around the run and a nested one, plus a long-named one and one outside the window.
Trace with_ranges(int iterations = 3) {
  Trace t = bench_like(iterations);
  const int64_t base = 1'000'000'000;
  for (int it = 0; it < iterations; ++it)
    for (int r = 0; r < 2; ++r) {
      const int64_t t0 = base + it * 2'000'000 + r * 3'000;
      cco::trace::NvtxRange outer;
      outer.name = "concurrent, iteration " + std::to_string(it);
      outer.rank = r;
      outer.thread = 1000 + static_cast<uint64_t>(r);
      outer.start_ns = t0 - 10'000;
      outer.end_ns = t0 + 1'500'000;
      auto inner = outer;
      inner.name = "enqueue <gemm> & \"all-reduce\"";
      inner.domain = "ccoverlap";
      inner.start_ns = t0 - 5'000;
      inner.end_ns = t0 + 200'000;
      t.ranges.push_back(outer);
      t.ranges.push_back(inner);
    }
  cco::trace::NvtxRange utf8;
  utf8.name =
      "\xc3\xa9tape \xe2\x80\x94 " + std::string(200, 'x') + " \xc3\xa9";  // cut in the picture
  utf8.rank = 0;
  utf8.thread = 1000;
  utf8.start_ns = base + 1'600'000;
  utf8.end_ns = base + 1'990'000;
  t.ranges.push_back(utf8);
  t.normalize();
  return t;
}

TEST(Timeline, NvtxRangesOnAThinRowAboveEachRanksStreams) {
  const Trace t = with_ranges();
  const std::string svg = rp::timeline_svg(t).str();
  keep("timeline_nvtx.svg", svg);
  const auto x = check_xml(svg);
  ASSERT_EQ(x.error, "");
  // 13 ranges, each a rect, + the legend's.
  EXPECT_EQ(count(svg, std::string("fill=\"") + rp::kNvtxColour + "\""), 13u + 1u);
  // Kernels and their tooltips are all still there, and every range has one.
  EXPECT_EQ(count(svg, std::string("fill=\"") + rp::kComputeColour + "\""), 12u + 1u);
  EXPECT_EQ(x.count.at("title"), 18u + summary_boxes(svg) + 13u);
  std::string all;
  for (const auto& s : x.texts) all += s + "\n";
  EXPECT_EQ(count(all, "NVTX ranges\n"), 2u) << "one row label per rank";
  EXPECT_NE(all.find("NVTX range\n"), std::string::npos) << "legend";
  EXPECT_NE(all.find("concurrent, iteration 1\nNVTX range, rank 1 thread 1001"), std::string::npos)
      << "tooltip";
  EXPECT_NE(all.find("enqueue <gemm> & \"all-reduce\"\nNVTX range, rank 0 thread 1000, domain "
                     "ccoverlap"),
            std::string::npos);
  // The row is above the rank's streams, below the rank's heading.
  const auto rank0 = svg.find(">rank 0"), row0 = svg.find(">NVTX ranges<"),
             streams0 = svg.find(">stream 13");
  EXPECT_LT(rank0, row0);
  EXPECT_LT(row0, streams0);
  // Nested ranges go one lane down: two distinct y for the NVTX boxes of a rank.
  std::set<std::string> ys;
  for (auto p = svg.find(std::string("fill=\"") + rp::kNvtxColour); p != std::string::npos;
       p = svg.find(std::string("fill=\"") + rp::kNvtxColour, p + 1)) {
    const auto open = svg.rfind("<rect", p);
    const auto y = svg.find(" y=\"", open);
    ys.insert(svg.substr(y, svg.find('"', y + 4) - y));
  }
  EXPECT_GE(ys.size(), 4u + 1u) << "2 lanes x 2 ranks + the legend";
  // Without ranges: no row, no legend entry; and the picture is shorter.
  const std::string plain = rp::timeline_svg(bench_like()).str();
  EXPECT_EQ(plain.find("NVTX"), std::string::npos);
  EXPECT_LT(rp::timeline_svg(bench_like()).height(), rp::timeline_svg(t).height());
}

TEST(Timeline, NvtxLanesAreCappedAndWindowed) {
  Trace t = bench_like(1);
  // 8 nested ranges on rank 0: 4 lanes, the deeper ones share the last.
  for (int d = 0; d < 8; ++d) {
    cco::trace::NvtxRange r;
    r.name = "depth " + std::to_string(d);
    r.rank = 0;
    r.thread = 5;
    r.start_ns = 1'000'000'000 + d * 1000;
    r.end_ns = 1'001'000'000 - d * 1000;
    t.ranges.push_back(r);
  }
  t.normalize();
  const Trace plain = bench_like(1);
  const double h = rp::timeline_svg(t).height() - rp::timeline_svg(plain).height();
  EXPECT_DOUBLE_EQ(h, rp::kNvtxLanes * 10.0 + 4.0);
  EXPECT_EQ(check_xml(rp::timeline_svg(t).str()).error, "");
  // A window that holds none of the ranges: no row.
  rp::TimelineOptions o;
  o.from_ns = 1'001'100'000;  // only the all-reduces run here
  o.to_ns = 1'001'300'000;
  EXPECT_EQ(rp::timeline_svg(t, o).str().find("NVTX ranges"), std::string::npos);
}

TEST(Timeline, WindowAndErrors) {
  const Trace t = bench_like();
  rp::TimelineOptions o;
  o.from_ns = t.kernels.front().start_ns;
  o.to_ns = *o.from_ns + 500'000;
  const std::string svg = rp::timeline_svg(t, o).str();
  keep("timeline_window.svg", svg);
  EXPECT_EQ(check_xml(svg).error, "");
  EXPECT_NE(svg.find("time (us)"), std::string::npos);
  o.from_ns = 1;
  o.to_ns = 2;
  EXPECT_THROW(rp::timeline_svg(t, o), cco::model::Error);
  EXPECT_THROW(rp::timeline_svg(Trace{}), cco::model::Error);
}

TEST(Timeline, ManyTinyKernelsAreMergedAndTooltipsDropped) {
  Trace t;
  for (int i = 0; i < 30000; ++i) {
    KernelEvent k;
    k.name = "tiny";
    k.stream = 1 + i % 2;
    k.start_ns = i * 100;
    k.end_ns = k.start_ns + 90;
    t.kernels.push_back(k);
  }
  t.normalize();
  const std::string svg = rp::timeline_svg(t).str();
  const auto x = check_xml(svg);
  ASSERT_EQ(x.error, "");
  EXPECT_LT(x.count.at("rect"), 2000);  // 30000 kernels, a few rectangles
  EXPECT_EQ(x.count.count("title"), 0u);
}

// ------------------------------------------------------------------------------------------
// Sweep chart
// ------------------------------------------------------------------------------------------

nlohmann::json example() {
  return nlohmann::json::parse(read_file(CCO_BENCH_EXAMPLE));
}

TEST(Sweep, ReadsTheRecordedExample) {
  const auto s = rp::sweep_from_json(example(), "ex.json");
  ASSERT_EQ(s.rows.size(), 9u);
  EXPECT_EQ(s.nranks, 2);
  EXPECT_EQ(s.device, "NVIDIA H200");
  EXPECT_EQ(s.rows[0].mode, "seq");
  EXPECT_EQ(s.rows[6].mode, "shape+priority");
  EXPECT_EQ(s.rows[6].blocks_per_sm, 3);
  EXPECT_EQ(s.rows[6].pad, 40449);
  EXPECT_NEAR(s.rows[6].t_us, 1555.728, 1e-3);
  EXPECT_NEAR(s.rows[6].efficiency, 0.6064, 1e-4);
  const std::string table = rp::format_sweep(s);
  EXPECT_NE(table.find("shape+priority"), std::string::npos);
  EXPECT_NE(table.find("1555.7"), std::string::npos);
}

// The figures above are read back from the recorded file, so a wrong formula in the bench that
// wrote it would pass there. Here every row's reduction and efficiency are derived again from the
// file's own medians, by the definitions of docs/METRICS.md:
//   reduction = 1 - T / T_seq,   E = (T_seq - T) / min(T_comp, T_comm).
TEST(Sweep, RecordedFiguresFollowTheDefinitions) {
  const auto j = example();
  ASSERT_GE(j.at("results").size(), 9u);
  for (const auto& r : j.at("results")) {
    const double t = r.at("t").at("median_us"), seq = r.at("t_seq").at("median_us");
    const double comp = r.at("t_comp").at("median_us"), comm = r.at("t_comm").at("median_us");
    SCOPED_TRACE(r.at("mode").get<std::string>());
    EXPECT_NEAR(r.at("reduction").get<double>(), 1 - t / seq, 1e-9);
    EXPECT_NEAR(r.at("efficiency").get<double>(), (seq - t) / std::min(comp, comm), 1e-9);
    EXPECT_NEAR(r.at("t_ideal_us").get<double>(), std::max(comp, comm), 1e-9);
    EXPECT_NEAR(r.at("ideal_reduction").get<double>(), 1 - std::max(comp, comm) / seq, 1e-9);
  }
  // One row by hand (shape+priority k=3): (2107.280 - 1555.728) / min(1173.248, 909.520).
  const auto s = rp::sweep_from_json(j, "ex.json");
  EXPECT_NEAR(s.rows[6].efficiency, (2107.280 - 1555.728) / 909.520, 1e-4);
  EXPECT_NEAR(s.rows[6].reduction, 1 - 1555.728 / 2107.280, 1e-5);
}

TEST(Sweep, ChartAgainstBlocksPerSm) {
  const auto s = rp::sweep_from_json(example(), "builtin2048x2_ar256M.json");
  const std::string svg = rp::sweep_svg(s).str();
  keep("sweep.svg", svg);
  const auto x = check_xml(svg);
  ASSERT_EQ(x.error, "");
  EXPECT_EQ(x.count.at("polyline"), 4);        // shape, shape+priority x (time, efficiency)
  EXPECT_EQ(x.count.at("circle"), 2 * 6 + 2);  // 6 shaped rows in two panels + legend markers
  std::string all;
  for (const auto& t : x.texts) all += t + "\n";
  for (const char* want : {"compute blocks per SM (k)", "time (us)", "overlap efficiency",
                           "seq 2107 us", "concurrent 1637 us", "priority 1724 us",
                           "ideal max(C, M) 1173 us", "shape\n", "shape+priority\n", "256M"})
    EXPECT_NE(all.find(want), std::string::npos) << want;
}

TEST(Sweep, ChartAgainstPadding) {
  const auto s = rp::sweep_from_json(example(), "ex.json");
  rp::SweepOptions o;
  o.axis = rp::SweepAxis::Pad;
  const std::string svg = rp::sweep_svg(s, o).str();
  keep("sweep_pad.svg", svg);
  EXPECT_EQ(check_xml(svg).error, "");
  EXPECT_NE(svg.find("padding per block (KiB; 0 = as launched)"), std::string::npos);
}

TEST(Sweep, SeveralSizesStack) {
  auto j = example();
  auto extra = j["results"];
  for (auto& r : extra) r["size_bytes"] = 67108864;
  for (auto& r : extra) j["results"].push_back(r);
  const std::string svg = rp::sweep_svg(rp::sweep_from_json(j, "x")).str();
  const auto x = check_xml(svg);
  ASSERT_EQ(x.error, "");
  EXPECT_EQ(x.count.at("polyline"), 8);
  EXPECT_NE(svg.find("64M"), std::string::npos);
}

TEST(Sweep, Errors) {
  auto expect = [](nlohmann::json j, const char* part) {
    try {
      (void)rp::sweep_from_json(j, "b.json");
      ADD_FAILURE() << "no error for " << part;
    } catch (const cco::model::Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("b.json: ", 0), 0u) << e.what();
    }
  };
  auto j = example();
  expect(nlohmann::json::array(), "expected a JSON object");
  auto k = j;
  k["schema"] = "ccoverlap.trace";
  expect(k, "schema is \"ccoverlap.trace\"");
  k = j;
  k["schema_version"] = "2.0.0";
  expect(k, "not supported");
  k = j;
  k.erase("results");
  expect(k, "missing \"results\"");
  k = j;
  k["results"] = nlohmann::json::array();
  expect(k, "empty");
  k = j;
  k["results"][2].erase("t");
  expect(k, "results[2]: missing \"t\"");
  k = j;
  k["results"][1]["t"]["median_us"] = "fast";
  expect(k, "\"median_us\" is not a number");
  k = j;
  k["results"][1]["size_bytes"] = 1.5;
  expect(k, "\"size_bytes\" is not an integer");
  k = j;
  k["results"][0]["t"]["median_us"] = nullptr;
  expect(k, "has no time");
  EXPECT_TRUE(rp::is_bench_json(j));
  EXPECT_FALSE(rp::is_bench_json(nlohmann::json::object()));
}

}  // namespace

namespace {

// Bench files with values swapped for other types or extremes: only model::Error, and every
// chart that is drawn is well formed.
TEST(Sweep, MutatedInputsGiveOnlyModelErrorsOrValidCharts) {
  const std::string good = read_file(CCO_BENCH_EXAMPLE);
  uint64_t seed = 99;
  auto next = [&] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return seed >> 33;
  };
  const char* junk[] = {"-1", "\"x\"", "null", "[]", "{}", "1e300", "0", "-1e300", "7"};
  int drawn = 0, errors = 0;
  for (int i = 0; i < 300; ++i) {
    std::string s = good;
    for (int m = 0; m < 1; ++m) {
      auto p = s.find(':', next() % s.size());
      if (p == std::string::npos) continue;
      auto e = s.find_first_of(",}\n", p + 1);
      if (e == std::string::npos) continue;
      s = s.substr(0, p + 1) + junk[next() % std::size(junk)] + s.substr(e);
    }
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(s);
    } catch (const nlohmann::json::exception&) {
      continue;  // not JSON any more: cco report's reader says so (tested elsewhere)
    }
    try {
      const auto sw = rp::sweep_from_json(j, "m.json");
      const std::string svg = rp::sweep_svg(sw).str();
      const auto x = check_xml(svg);
      ASSERT_EQ(x.error, "") << s;
      EXPECT_EQ(svg.find("nan"), std::string::npos);
      EXPECT_EQ(svg.find("inf"), std::string::npos);
      (void)rp::format_sweep(sw);
      ++drawn;
    } catch (const cco::model::Error&) {
      ++errors;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "escaped as " << typeid(e).name() << ": " << e.what();
      return;
    }
  }
  EXPECT_GT(drawn, 10);
  EXPECT_GT(errors, 10);
}

}  // namespace

// A wait for SMs timed from a launch timestamp is measured; one from a stream gap (no launch
// timestamps, as in traces of other tools) is an upper bound, and the picture says so.
TEST(Timeline, WaitsWithoutLaunchTimestampsAreLabelledUpperBounds) {
  const Trace measured = bench_like();
  const std::string a = rp::timeline_svg(measured).str();
  ASSERT_GE(count(a, std::string("fill=\"") + rp::kWaitColour + "\""), 2u) << "the sample has waits";
  EXPECT_EQ(a.find("(upper bound)"), std::string::npos);
  EXPECT_NE(a.find("from its launch timestamp"), std::string::npos);
  Trace gaps = measured;
  for (auto& k : gaps.kernels) k.queued_ns = k.submitted_ns = 0;
  const std::string b = rp::timeline_svg(gaps).str();
  ASSERT_GE(count(b, std::string("fill=\"") + rp::kWaitColour + "\""), 2u) << "stream-gap waits";
  EXPECT_NE(b.find("overlap / comm waiting (upper bound)"), std::string::npos);
  EXPECT_NE(b.find("an upper bound: no launch timestamps"), std::string::npos);
  EXPECT_EQ(b.find("from its launch timestamp"), std::string::npos);
}

// Each pixel column of a summary row is drawn by what dominated it: a collective that waits for
// SMs 2 us of every 100 us (2%) paints no wait at whole-run zoom, though every wait is real, while
// zoomed in on one wait it fills its columns; the legend gives each state's total.
TEST(Timeline, SummaryColumnsShowWhatDominated) {
  Trace t;
  for (int i = 0; i < 200; ++i) {
    const int64_t b = i * 100'000;
    auto k = [&](KernelCategory c, int64_t s, int64_t e, int64_t stream, int64_t launch) {
      cco::trace::KernelEvent x;
      x.name = c == KernelCategory::Compute ? "gemm" : "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
      x.category = c;
      x.stream = stream;
      x.start_ns = s;
      x.end_ns = e;
      x.submitted_ns = launch;
      t.kernels.push_back(x);
    };
    k(KernelCategory::Compute, b, b + 60'000, 7, b);
    k(KernelCategory::Communication, b + 60'000, b + 70'000, 13, b + 58'000);  // waits 2 us
  }
  t.normalize();
  rp::TimelineOptions o;
  o.width = 1400;
  const std::string whole = rp::timeline_svg(t, o).str();
  ASSERT_EQ(check_xml(whole).error, "");
  EXPECT_EQ(count(whole, std::string("fill=\"") + rp::kWaitColour + "\""), 1u) << "legend only";
  EXPECT_NE(whole.find("communication ready, waiting for SMs (0.4 ms in all)"), std::string::npos);
  o.from_ns = 58'000;
  o.to_ns = 61'000;
  const std::string zoom = rp::timeline_svg(t, o).str();
  EXPECT_GE(count(zoom, std::string("fill=\"") + rp::kWaitColour + "\""), 2u) << "the wait shows";
}

// The step against the alone trace: one line in the text, a table in Markdown, nothing when
// there is no alone trace.
TEST(DiagnosisText, VersusAloneInTextAndMarkdown) {
  cco::trace::Diagnosis d;
  d.sentence = "S";
  cco::trace::RankSteps r;
  r.rank = 0;
  r.steps.resize(1);
  d.ranks.push_back(r);
  const std::string plain = rp::format_diagnosis(d, rp::TableFormat::Text);
  EXPECT_EQ(plain.find("against the alone trace"), std::string::npos);
  cco::trace::VersusAlone v;
  v.rank = 0;
  v.alone_source = "nosync_0.json";
  v.steps = v.alone_steps = 20;
  v.time_ms = 204.62;
  v.alone_time_ms = 184.51;
  v.compute_slowed_ms = 8.44;
  v.compute_slowed_memory_ms = 0.50;
  v.compute_slowed_sms_ms = 3.20;
  v.compute_slowed_other_ms = 4.74;
  v.compute_only_here_ms = 4.06;
  v.exposed_ms = 8.21;
  v.idle_ms = -0.60;
  d.versus_alone.push_back(v);
  const std::string text = rp::format_diagnosis(d, rp::TableFormat::Text);
  EXPECT_NE(text.find("# rank 0 against the alone trace nosync_0.json (means of 20 and 20 steps): "
                      "204.62 ms against 184.51, +20.11 ms = compute slowed 8.44 (device-memory "
                      "bandwidth 0.50, SMs 3.20, other 4.74) + compute only here +4.06 + exposed "
                      "communication +8.21 + host idle -0.60"),
            std::string::npos)
      << text;
  // The twin names its other side (cco run --compare off,nocomm --trace).
  EXPECT_NE(rp::versus_alone_line(v, "nocomm's steps").find("# rank 0 against nocomm's steps (means"),
            std::string::npos);
  const std::string md = rp::format_diagnosis(d, rp::TableFormat::Markdown);
  EXPECT_NE(md.find("| 0 | nosync_0.json | 204.62 | 184.51 | +20.11 | 8.44 | +4.06 | +8.21 | -0.60 |"),
            std::string::npos)
      << md;
}
