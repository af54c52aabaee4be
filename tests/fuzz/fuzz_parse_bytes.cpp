// Byte sizes on the command line (cco::model::parse_bytes: -b, -e, --mem-bytes, --pad,
// --gpu-memory, `cco plan` sizes). Contract: returns a value >= 0 or throws model::Error; what
// format_bytes writes parses back to the same value.
#include "fuzz_common.hpp"
#include "model/limits.hpp"
#include "model/occupancy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace cco;
  const std::string text(fuzz::as_text(data, size));
  int64_t v = 0;
  try {
    v = model::parse_bytes(text);
  } catch (const model::Error&) {
    return 0;
  }
  if (v < 0) fuzz::violated("negative size", text);
  const std::string f = model::format_bytes(v);
  try {
    if (model::parse_bytes(f) != v) fuzz::violated("format_bytes/parse_bytes round trip", f);
  } catch (const model::Error& e) {
    fuzz::violated("parse_bytes refuses what format_bytes wrote", e.what());
  }
  return 0;
}
