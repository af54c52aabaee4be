// ASCII case folding for names read from flags, plans and environment variables (every name cco
// accepts is ASCII; std::tolower's locale is never consulted beyond the C locale's letters).
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

namespace cco::model {

/// `s` with A-Z as a-z.
inline std::string ascii_lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace cco::model
