// What cco run writes beside its table and cco report reads back: the comparison
// (cco::steps::parse_compare, ccoverlap.run_compare) and the step file (parse_step_file,
// ccoverlap.steps), under their current and former names.
// Contract: each returns its report or throws std::runtime_error (one line); to_json() of a
// parsed comparison parses back to the same text.
#include <stdexcept>
#include <string>

#include "fuzz_common.hpp"
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
  } catch (const std::runtime_error&) {
  }
  try {
    (void)steps::parse_step_file(in);
  } catch (const std::runtime_error&) {
  }
  return 0;
}
