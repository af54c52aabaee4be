// Helpers shared by the libFuzzer targets (tests/fuzz/fuzz_*.cpp). A target's contract: for any
// input, the parser either returns or throws the one error type its header documents. Anything
// else (a crash, a sanitizer report, another exception type escaping, a hang, unbounded memory)
// is a bug: libFuzzer stops and saves the input (docs/FUZZING.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace cco::fuzz {

inline std::string_view as_text(const uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// Splits at `sep`; an input of n separators gives n + 1 pieces (empty pieces kept).
inline std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t end = s.find(sep, begin);
    out.emplace_back(s.substr(begin, end == std::string_view::npos ? s.npos : end - begin));
    if (end == std::string_view::npos) break;
    begin = end + 1;
  }
  return out;
}

/// A property of the parser that does not hold: report it and abort, so libFuzzer keeps the input.
[[noreturn]] inline void violated(const char* what, std::string_view detail = {}) {
  std::fprintf(stderr, "cco fuzz: property violated: %s%s%.*s\n", what, detail.empty() ? "" : ": ",
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

}  // namespace cco::fuzz
