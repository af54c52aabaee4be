// Step and tune results read back, printed, drawn and compared (issue 19, item 4;
// report/results.hpp, report/compare.hpp), from the hand-made results in tests/fixtures/report and
// the recorded ones of tests/fixtures/recorded (GPU runs of docs/results): values derived by hand, well-formed charts, one clear error
// per malformed input. CCO_TEST_SVG_DIR=<dir> keeps the pictures for looking at them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <typeinfo>
#include <vector>

#include "model/limits.hpp"
#include "report/compare.hpp"
#include "report/results.hpp"
#include "report/svg.hpp"
#include "report/sweep.hpp"
#include "xml_check.hpp"

namespace {

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

std::string read_file(const std::string& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

// Step and tune results (issue 19, item 4), from the hand-made files in tests/fixtures/report:
// step_a has T_seq 1000, T_comp 600, T_comm 400, T_ideal 600 us, so a row of time T has
// reduction 1 - T/1000, E = (1000 - T)/400 and of_ideal = (1000 - T)/(1000 - 600).
namespace {

std::string fixture(const std::string& name) {
  return std::string(CCO_SOURCE_DIR) + "/tests/fixtures/report/" + name;
}
std::string recorded(const std::string& name) {
  return std::string(CCO_SOURCE_DIR) + "/tests/fixtures/recorded/" + name;
}
nlohmann::json fixture_json(const std::string& name) {
  return nlohmann::json::parse(read_file(fixture(name)));
}
rp::BenchSweep result(const std::string& name) {
  return rp::result_from_json(fixture_json(name), name);
}
std::string line_with(const std::string& text, const std::string& start) {
  const auto p = text.find(start);
  return p == std::string::npos ? std::string() : text.substr(p, text.find('\n', p) - p);
}

TEST(StepResult, ReadsTheRowsAndTheirFigures) {
  const auto s = result("step_a.json");
  EXPECT_EQ(s.kind, rp::ResultKind::Step);
  EXPECT_EQ(rp::result_kind(fixture_json("step_a.json")), rp::ResultKind::Step);
  EXPECT_EQ(s.workload, "tiny (workloads/tiny.json)");
  EXPECT_EQ(s.device, "NVIDIA H200");
  EXPECT_EQ(s.nranks, 2);
  EXPECT_DOUBLE_EQ(s.t_seq_us, 1000);
  EXPECT_DOUBLE_EQ(s.t_ideal_us, 600);
  ASSERT_EQ(s.rows.size(), 4u);
  const auto& c = s.rows[1];
  EXPECT_EQ(c.label, "concurrent");
  EXPECT_EQ(c.mode, "concurrent");
  EXPECT_DOUBLE_EQ(c.t_us, 800);
  EXPECT_DOUBLE_EQ(c.t_p25_us, 790);
  EXPECT_DOUBLE_EQ(c.t_p75_us, 810);
  EXPECT_DOUBLE_EQ(rp::row_spread(c), 20.0 / 800);
  EXPECT_DOUBLE_EQ(c.reduction, 1 - 800.0 / 1000);
  EXPECT_DOUBLE_EQ(c.efficiency, (1000.0 - 800) / 400);
  EXPECT_DOUBLE_EQ(c.of_ideal, (1000.0 - 800) / (1000 - 600));
  EXPECT_TRUE(std::isnan(c.efficiency_best));
  EXPECT_EQ(s.rows[3].label, "shape k=4");
  EXPECT_EQ(s.rows[3].target_k, 4);
  EXPECT_EQ(s.rows[3].wrong, 3);
}

TEST(StepResult, TableCsvMarkdownAndJson) {
  const auto s = result("step_a.json");
  const std::string text = rp::format_result(s);
  EXPECT_NE(text.find("# T_seq 1000 us, T_ideal 600 us, T_comp 600 us, T_comm 400 us\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("# parameters: hidden=1024 layers=2\n"), std::string::npos) << text;
  // priority: 900 us, spread 40/900 = 4.4%, reduction 10%, E 0.25, of_ideal 25%.
  EXPECT_EQ(line_with(text, "  priority "),
            "  priority                                900     4.4       10   0.25    n/a       25      0");
  EXPECT_EQ(line_with(text, "  shape k=4 "),
            "  shape k=4                               700     4.3       30   0.75    n/a       75      3");
  const std::string csv = rp::format_result(s, rp::TableFormat::Csv);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "label,mode,t_us,p25_us,p75_us,spread,t_seq_us,t_ideal_us,reduction,efficiency,"
            "efficiency_best,of_ideal,wrong,pick");
  EXPECT_NE(csv.find("\nconcurrent,concurrent,800,790,810,0.025,1000,600,0.2,0.5,,0.5,0,\n"),
            std::string::npos) << csv;
  EXPECT_NE(csv.find("\nshape k=4,shape,700,690,720,0.0428571,1000,600,0.3,0.75,,0.75,3,\n"),
            std::string::npos) << csv;
  EXPECT_EQ(count(csv, "\n"), 5u);
  const std::string md = rp::format_result(s, rp::TableFormat::Markdown);
  EXPECT_NE(md.find("| concurrent | 800 | 2.5 | 20 | 0.5 | n/a | 50 | 0 |\n"), std::string::npos) << md;
  const auto j = rp::result_json(s);
  EXPECT_EQ(j["schema"], "ccoverlap.result_report");
  EXPECT_EQ(j["kind"], "step");
  EXPECT_EQ(j["rows"].size(), 4u);
  EXPECT_DOUBLE_EQ(j["rows"][2]["spread"].get<double>(), 40.0 / 900);
  EXPECT_TRUE(j["rows"][2]["efficiency_best"].is_null());
}

TEST(TuneResult, TableMarksTheChoiceAndWhatIsApplied) {
  const auto s = result("tune_step_a.plan.json");
  EXPECT_EQ(s.kind, rp::ResultKind::Tune);
  EXPECT_EQ(s.choice, "shape k=3");
  EXPECT_EQ(s.applied, "concurrent");
  EXPECT_EQ(s.device, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(s.nranks, 1);
  ASSERT_EQ(s.rows.size(), 3u);
  EXPECT_EQ(s.rows[2].mode, "shape");  // the label's first word
  EXPECT_DOUBLE_EQ(s.rows[2].t_seq_us, 1000);
  const std::string text = rp::format_result(s);
  EXPECT_NE(text.find("# choice: shape k=3 (the fastest row); applied: concurrent"), std::string::npos);
  // shape k=3: 760 us, spread 20/760 = 2.6%, reduction 24%, E (1000 - 760)/400 = 0.6.
  EXPECT_EQ(line_with(text, "  shape k=3 "),
            "  shape k=3                               760     2.6       24    0.6    n/a       60      0  choice");
  EXPECT_NE(line_with(text, "  concurrent ").find("  applied"), std::string::npos);
  const std::string csv = rp::format_result(s, rp::TableFormat::Csv);
  EXPECT_NE(csv.find("\nshape k=3,shape,760,750,770,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",0.6,,0.6,0,choice\n"), std::string::npos) << csv;
  EXPECT_EQ(rp::result_json(s)["rows"][0]["pick"], "applied");
}

// A pair tune records no T_seq: it comes back as T / (1 - reduction) of a row, E_best is read.
TEST(TuneResult, PairTuneDerivesTSeqAndKeepsEBest) {
  const auto s = result("tune_pair.plan.json");
  ASSERT_EQ(s.rows.size(), 3u);
  EXPECT_EQ(s.workload, "cublaslt || allreduce bfloat16");
  EXPECT_NEAR(s.t_seq_us, 910.0959897041321 / (1 - 0.00950773844125008), 1e-9);
  EXPECT_NEAR(s.rows[1].t_seq_us, s.t_seq_us, 1e-6);  // every row shares one T_seq
  EXPECT_NEAR(s.rows[1].efficiency_best, 0.1392964033736064, 1e-12);
  EXPECT_EQ(s.rows[1].wrong, -1);
  EXPECT_EQ(s.choice, "priority ctas=32");
  const std::string text = rp::format_result(s);
  EXPECT_NE(text.find("# T_seq 918.8 us\n"), std::string::npos) << text;
  EXPECT_NE(text.find("a pair tune records none"), std::string::npos);
}

TEST(ResultCompare, TwoStepsRowByRow) {
  const auto a = result("step_a.json"), b = result("step_b.json");
  const auto rows = rp::compare_rows(a, b);
  ASSERT_EQ(rows.size(), 5u);  // seq, concurrent, priority, shape k=4 (A), shape k=2 (B)
  EXPECT_DOUBLE_EQ(rows[0].ratio(), 1.0);
  EXPECT_EQ(rows[0].verdict(), "~");
  EXPECT_DOUBLE_EQ(rows[1].ratio(), 600.0 / 800);  // B's 590..610 wholly below A's 790..810
  EXPECT_EQ(rows[1].verdict(), "faster");
  EXPECT_DOUBLE_EQ(rows[2].ratio(), 950.0 / 900);  // B's 940..960 wholly above A's 880..920
  EXPECT_EQ(rows[2].verdict(), "slower");
  EXPECT_EQ(rows[3].b, nullptr);
  EXPECT_EQ(rows[4].a, nullptr);
  EXPECT_EQ(rows[4].label, "shape k=2");
  const auto cav = rp::compare_caveats(a, b);
  ASSERT_EQ(cav.size(), 2u);
  EXPECT_EQ(cav[0], "the device differs: 'NVIDIA H200' in A, 'NVIDIA H100 80GB HBM3' in B");
  EXPECT_EQ(cav[1], "wrong results in A: 'shape k=4' (3 elements)");
  const std::string text = rp::format_compare(a, b);
  EXPECT_EQ(line_with(text, "  concurrent "),
            "  concurrent                           800.0   2.5%     600.0   3.3%  0.750  faster   0.50   1.00");
  EXPECT_NE(line_with(text, "  shape k=4 ").find("only A"), std::string::npos);
  EXPECT_EQ(line_with(text, "# row ").find("E_b A"), std::string::npos) << "no E_best in steps";
  const std::string csv = rp::format_compare(a, b, rp::TableFormat::Csv);
  EXPECT_NE(csv.find("\npriority,900,0.0444444,950,0.0210526,1.05556,slower,0.1,0.05,0.25,0.125,,,0,0\n"),
            std::string::npos) << csv;
  const auto j = rp::compare_json(a, b);
  EXPECT_EQ(j["kind"], "step");
  EXPECT_DOUBLE_EQ(j["rows"][1]["ratio"].get<double>(), 0.75);
  EXPECT_EQ(j["rows"][1]["verdict"], "faster");
  EXPECT_FALSE(j["rows"][1].contains("size_bytes"));
  EXPECT_TRUE(j["rows"][3]["b"].is_null());
}

TEST(ResultCompare, TwoTunesWithTheirParameterCaveat) {
  const auto a = result("tune_step_a.plan.json"), b = result("tune_step_b.plan.json");
  const auto rows = rp::compare_rows(a, b);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_DOUBLE_EQ(rows[0].ratio(), 700.0 / 800);  // 690..710 below 790..810
  EXPECT_EQ(rows[0].verdict(), "faster");
  EXPECT_DOUBLE_EQ(rows[1].ratio(), 890.0 / 900);  // 870..915 overlaps 880..920
  EXPECT_EQ(rows[1].verdict(), "~");
  EXPECT_EQ(rows[2].verdict(), "~");
  EXPECT_EQ(rp::compare_caveats(a, b),
            std::vector<std::string>{"parameter layers differs: '2' in A, '4' in B"});
  const std::string md = rp::format_compare(a, b, rp::TableFormat::Markdown);
  EXPECT_NE(md.find("| concurrent | 800.0 | 2.5% | 700.0 | 2.9% | 0.875 | faster | 0.50 | 0.75 |\n"),
            std::string::npos) << md;
  EXPECT_NE(md.find("- caveat: parameter layers differs"), std::string::npos);
  // Pair tunes have E_best: the text table gains its two columns.
  const auto p = result("tune_pair.plan.json");
  EXPECT_NE(line_with(rp::format_compare(p, p), "# row ").find("E_b A  E_b B"), std::string::npos);
}

TEST(ResultCompare, KindsDoNotMix) {
  try {
    (void)rp::compare_rows(result("step_a.json"), result("tune_step_a.plan.json"));
    ADD_FAILURE() << "no error";
  } catch (const cco::model::Error& e) {
    EXPECT_NE(std::string(e.what()).find("is a step result and tune_step_a.plan.json a tune "
                                         "result: compare two of one kind"),
              std::string::npos) << e.what();
  }
  auto b = fixture_json("step_b.json");
  for (auto& r : b["rows"]) r["label"] = "other " + r["label"].get<std::string>();
  try {
    (void)rp::compare_rows(result("step_a.json"), rp::step_from_json(b, "b.json"));
    ADD_FAILURE() << "no error";
  } catch (const cco::model::Error& e) {
    EXPECT_NE(std::string(e.what()).find("share no row (same row label)"), std::string::npos);
  }
}

TEST(ResultChart, WellFormedWithEveryRowLabel) {
  for (const char* name : {"step_a.json", "tune_step_a.plan.json", "tune_pair.plan.json"}) {
    SCOPED_TRACE(name);
    const auto s = result(name);
    const std::string svg = rp::result_svg(s).str();
    keep(std::string("result_") + name + ".svg", svg);
    const auto x = check_xml(svg);
    ASSERT_EQ(x.error, "");
    // A bar per row, the plot box and the page background.
    EXPECT_EQ(x.count.at("rect"), static_cast<int>(s.rows.size()) + 2);
    std::string all;
    for (const auto& t : x.texts) all += t + "\n";
    for (const auto& r : s.rows) EXPECT_NE(all.find("\n" + r.label), std::string::npos) << r.label;
    EXPECT_NE(all.find("T_seq "), std::string::npos);
    EXPECT_EQ(svg.find("nan"), std::string::npos);
  }
  const std::string step = rp::result_svg(result("step_a.json")).str();
  EXPECT_NE(step.find(">E 0.5<"), std::string::npos);  // concurrent's E beside its bar
  EXPECT_NE(step.find(">wrong 3<"), std::string::npos);
  EXPECT_NE(step.find(">T_ideal 600 us<"), std::string::npos);
  EXPECT_NE(rp::result_svg(result("tune_step_a.plan.json")).str().find(">shape k=3 (choice)<"),
            std::string::npos);
}

// Results recorded on GPU machines (tests/fixtures/recorded, from the runs of docs/results) read, print and draw.
TEST(ResultChart, RecordedStepAndTuneResults) {
  for (const char* name : {"2026-11-24-h100-cta/step_tp_llama7b.json",
                           "2026-11-22-h200x2-suite/step_moe_mixtral.json",
                           "2026-11-24-h100-search/tune_step.plan.json",
                           "2026-11-24-h100-search/tune_pair.plan.json"}) {
    SCOPED_TRACE(name);
    const auto s = rp::result_from_json(nlohmann::json::parse(read_file(recorded(name))), name);
    EXPECT_GE(s.rows.size(), 5u);
    EXPECT_EQ(check_xml(rp::result_svg(s).str()).error, "");
    EXPECT_NE(rp::format_result(s).find(s.rows.back().label), std::string::npos);
  }
}

TEST(ResultErrors, OneLineNamingTheFileAndField) {
  auto expect = [](const nlohmann::json& j, const char* part) {
    try {
      (void)rp::result_from_json(j, "r.json");
      ADD_FAILURE() << "no error for " << part;
    } catch (const cco::model::Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("r.json: ", 0), 0u) << e.what();
    }
  };
  const auto step = fixture_json("step_a.json");
  auto k = step;
  k["schema_version"] = "2.0.0";
  expect(k, "step bench schema version \"2.0.0\" is not supported (this cco reads 1.x)");
  k = step;
  k.erase("rows");
  expect(k, "missing \"rows\"");
  k = step;
  k["rows"] = nlohmann::json::array();
  expect(k, "\"rows\" is empty: nothing to report");
  k = step;
  k["rows"][1].erase("time_us");
  expect(k, "rows[1]: missing \"time_us\"");
  k = step;
  k["rows"][1]["time_us"]["median"] = nullptr;
  expect(k, "rows[1]: the row has no time");
  k = step;
  k["rows"][0].erase("label");
  k["rows"][0].erase("mode");
  expect(k, "rows[0]: missing \"label\"");
  k = step;
  k.erase("times_us");
  expect(k, "missing \"times_us\"");
  k = step;
  k["rows"][2]["efficiency"] = "high";
  expect(k, "rows[2]: \"efficiency\" is not a number");
  const auto tune = fixture_json("tune_step_a.plan.json");
  k = tune;
  k.erase("tuning");
  expect(k, "not a tune result: the plan has no \"tuning\" section");
  k = tune;
  k["schema_version"] = "3.1";
  expect(k, "plan schema version \"3.1\" is not supported");
  k = tune;
  k["tuning"]["tried"] = nlohmann::json::array();
  expect(k, "\"tuning.tried\" is empty: nothing to report");
  k = tune;
  k["tuning"]["tried"][1].erase("t_us");
  expect(k, "tuning.tried[1]: missing \"t_us\"");
  k = tune;
  k["tuning"]["tried"][0]["wrong"] = 0.5;
  expect(k, "tuning.tried[0]: \"wrong\" is not an integer");
  // The readers by name refuse the other kinds.
  try {
    (void)rp::step_from_json(tune, "t.json");
    ADD_FAILURE() << "no error";
  } catch (const cco::model::Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a step bench result: schema is \"ccoverlap.plan\""),
              std::string::npos) << e.what();
  }
}

// Step and tune files with values swapped for other types or extremes: only model::Error, and
// every table and chart that comes back is well formed.
TEST(ResultErrors, MutatedInputsGiveOnlyModelErrorsOrValidCharts) {
  uint64_t seed = 7;
  auto next = [&] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return seed >> 33;
  };
  const char* junk[] = {"-1", "\"x\"", "null", "[]", "{}", "1e300", "0", "-1e300", "7"};
  int drawn = 0, errors = 0;
  for (const char* name : {"step_a.json", "tune_pair.plan.json"}) {
    const std::string good = read_file(fixture(name));
    for (int i = 0; i < 200; ++i) {
      std::string s = good;
      auto p = s.find(':', next() % s.size());
      auto e = p == std::string::npos ? p : s.find_first_of(",}\n", p + 1);
      if (e == std::string::npos) continue;
      s = s.substr(0, p + 1) + junk[next() % std::size(junk)] + s.substr(e);
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(s);
      } catch (const nlohmann::json::exception&) {
        continue;
      }
      try {
        const auto r = rp::result_from_json(j, "m.json");
        const std::string svg = rp::result_svg(r).str();
        ASSERT_EQ(check_xml(svg).error, "") << s;
        EXPECT_EQ(svg.find("nan"), std::string::npos) << s;
        EXPECT_EQ(svg.find("inf"), std::string::npos) << s;
        (void)rp::format_result(r, rp::TableFormat::Csv);
        (void)rp::format_compare(r, r);
        ++drawn;
      } catch (const cco::model::Error&) {
        ++errors;
      } catch (const std::exception& ex) {
        ADD_FAILURE() << "escaped as " << typeid(ex).name() << ": " << ex.what();
        return;
      }
    }
  }
  EXPECT_GT(drawn, 20);
  EXPECT_GT(errors, 5);
}

}  // namespace
