// Results read by `cco report`: bench (`cco bench --json`), step (`cco bench --workload --json`)
// and tune (the plan `cco tune` writes) files, the JSON text as report_cmd reads it, then the
// reader of its kind, the table and the chart. Contract: malformed JSON is a
// nlohmann::json::exception at parse time (report_cmd turns it into one line); the readers
// return or throw model::Error; the tables and charts never fail on a result they accepted.
#include <nlohmann/json.hpp>

#include "fuzz_common.hpp"
#include "model/limits.hpp"
#include "report/results.hpp"
#include "report/sweep.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace cco;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(fuzz::as_text(data, size));
  } catch (const nlohmann::json::exception&) {
    return 0;
  }
  if (!report::is_bench_json(j)) {
    if (!report::result_kind(j)) return 0;  // `cco report` reads it as a trace instead
    report::BenchSweep r;
    try {
      r = report::result_from_json(j, "fuzz.json");
    } catch (const model::Error&) {
      return 0;
    }
    (void)report::format_result(r);
    (void)report::format_result(r, report::TableFormat::Csv);
    (void)report::result_json(r).dump();
    (void)report::result_svg(r).str();
    return 0;
  }
  report::BenchSweep s;
  try {
    s = report::sweep_from_json(j, "fuzz.json");
  } catch (const model::Error&) {
    return 0;
  }
  (void)report::format_sweep(s);
  for (auto axis :
       {report::SweepAxis::Auto, report::SweepAxis::BlocksPerSm, report::SweepAxis::Pad}) {
    report::SweepOptions so;
    so.axis = axis;
    so.width = 480;
    (void)report::sweep_svg(s, so).str();
  }
  return 0;
}
