// Bench results (`cco bench --json` files) read by `cco report`: the JSON text as report_cmd
// reads it, then cco::report::sweep_from_json, the table and the chart. Contract: malformed JSON
// is a nlohmann::json::exception at parse time (report_cmd turns it into one line);
// sweep_from_json returns or throws model::Error; the table and chart never fail on a sweep it
// accepted.
#include <nlohmann/json.hpp>

#include "fuzz_common.hpp"
#include "model/limits.hpp"
#include "report/sweep.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace cco;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(fuzz::as_text(data, size));
  } catch (const nlohmann::json::exception&) {
    return 0;
  }
  if (!report::is_bench_json(j)) return 0;  // `cco report` reads it as a trace instead
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
