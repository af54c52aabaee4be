// What cco run writes beside its table and cco report reads back: the comparison
// (cco::steps::parse_compare, ccoverlap.run_compare) and the step file (parse_step_file,
// ccoverlap.steps), under their current and former names.
// Contract: each returns its report or throws std::runtime_error (one line); to_json() of a
// parsed comparison parses back to the same text. cco report's renderings of both (tables, the
// comparison's chart) and its reader of the other files cco writes (report::describe_written:
// text, or model::Error with one line) never crash on what the parsers accept.
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_common.hpp"
#include "model/limits.hpp"
#include "report/run_output.hpp"
#include "report/written_files.hpp"
#include "steps/compare.hpp"
#include "steps/record.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace cco;
  const std::string in(fuzz::as_text(data, size));
  try {
    const steps::CompareReport r = steps::parse_compare(in);
    const std::string text = steps::to_json(r);
    try {
      if (steps::to_json(steps::parse_compare(text)) != text)
        fuzz::violated("to_json/parse_compare round trip differs", text);
    } catch (const std::runtime_error& e) {
      fuzz::violated("parse_compare refuses what to_json wrote", e.what());
    }
    (void)steps::format_report(r);
    for (auto f : {report::TableFormat::Csv, report::TableFormat::Markdown})
      (void)report::format_compare(r, f);
    (void)report::compare_svg(r, "fuzz");
  } catch (const std::runtime_error&) {
  }
  try {
    const steps::StepFile f = steps::parse_step_file(in);
    for (auto t : {report::TableFormat::Text, report::TableFormat::Csv, report::TableFormat::Markdown})
      (void)report::format_step_file(f, t);
  } catch (const std::runtime_error&) {
  }
  try {
    const nlohmann::json doc = nlohmann::json::parse(in);
    (void)report::describe_written(doc, "fuzz.json");
  } catch (const nlohmann::json::exception&) {
  } catch (const model::Error&) {
  }
  return 0;
}
