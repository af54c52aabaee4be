// Integer lists on the command line (cco::bench::parse_int_list: --blocks-per-sm "1,2,4").
// Contract: returns a non-empty list of positive ints or throws UsageError.
#include "bench/options.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace cco;
  std::vector<int> v;
  try {
    v = bench::parse_int_list(std::string(fuzz::as_text(data, size)), "--blocks-per-sm");
  } catch (const bench::UsageError&) {
    return 0;
  }
  if (v.empty()) fuzz::violated("empty list accepted");
  for (int x : v)
    if (x < 1) fuzz::violated("non-positive value accepted");
  return 0;
}
