// Numbers in JSON files. Read: whole numbers (step files, comparisons, tune files): a float, a
// string or a number out of [lo, hi] is refused with one line, never cast. nlohmann's get<int>() on 2.2e25 is a
// float-to-integer conversion out of range: undefined behaviour, found by the compare_file fuzzer.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace cco::model {

/// v as a whole number in [lo, hi]; std::runtime_error "FIELD must be a whole number" or
/// "FIELD out of range (lo..hi)" otherwise.
inline int64_t whole_number(const nlohmann::json& v, const std::string& field,
                            int64_t lo = 0, int64_t hi = std::numeric_limits<int64_t>::max()) {
  if (!v.is_number_integer()) throw std::runtime_error(field + " must be a whole number");
  const int64_t x = v.is_number_unsigned() &&
                            v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                        ? std::numeric_limits<int64_t>::max()
                        : v.get<int64_t>();
  if (x < lo || x > hi)
    throw std::runtime_error(field + " out of range (" + std::to_string(lo) + ".." +
                             std::to_string(hi) + ")");
  return x;
}

/// Written: v, or null where it is NaN (a figure that is not defined; JSON has no NaN).
inline nlohmann::json number_or_null(double v) {
  return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v);
}

}  // namespace cco::model
