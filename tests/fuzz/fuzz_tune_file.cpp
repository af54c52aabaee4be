// The decision file of cco tune -- CMD (cco::steps::parse_tune_file): read by every following rank
// and by cco tune while the program runs. Contract: returns a TuneFile or throws
// std::runtime_error (one line); to_json() of a parsed file parses back to the same text.
#include <stdexcept>
#include <string>

#include "fuzz_common.hpp"
#include "steps/search.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace cco;
  steps::TuneFile f;
  try {
    f = steps::parse_tune_file(std::string(fuzz::as_text(data, size)));
  } catch (const std::runtime_error&) {
    return 0;
  }
  const std::string text = steps::to_json(f);
  try {
    if (steps::to_json(steps::parse_tune_file(text)) != text)
      fuzz::violated("to_json/parse round trip differs", text);
  } catch (const std::runtime_error& e) {
    fuzz::violated("parse refuses what to_json wrote", e.what());
  }
  (void)f.final_decision();
  return 0;
}
