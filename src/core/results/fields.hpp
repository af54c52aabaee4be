// Reading the fields of a result file (bench, step, tune), and the schema check, for the result
// readers (results/bench.hpp, report/results.cpp): every malformed field is one model::Error naming
// the file and where in it ("results[3]: \"t\" is not an object"). GPU-free.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "model/limits.hpp"

namespace cco::results::fields {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

[[noreturn]] inline void fail(const std::string& src, const std::string& what) {
  throw model::Error(src + ": " + what);
}

/// o[key] as a number; NaN when absent or null; an error when it is something else.
inline double num_or_nan(const nlohmann::json& o, const char* key, const std::string& src,
                         const std::string& w) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return kNaN;
  if (!it->is_number()) fail(src, w + ": \"" + key + "\" is not a number");
  return it->get<double>();
}

/// row[key][field]: the object must be there; the number may be absent (NaN).
inline double median_of(const nlohmann::json& row, const char* key, const std::string& src,
                        const std::string& w, const char* field = "median_us") {
  auto it = row.find(key);
  if (it == row.end()) fail(src, w + ": missing \"" + key + "\"");
  if (!it->is_object()) fail(src, w + ": \"" + key + "\" is not an object");
  return num_or_nan(*it, field, src, w + "." + key);
}

inline int64_t int_of(const nlohmann::json& o, const char* key, const std::string& src,
                      const std::string& w, bool required) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) {
    if (required) fail(src, w + ": missing \"" + key + "\"");
    return 0;
  }
  if (!it->is_number_integer() && !it->is_number_unsigned())
    fail(src, w + ": \"" + key + "\" is not an integer");
  return it->get<int64_t>();
}

/// o[key] when it is a string, else "".
inline std::string str_of(const nlohmann::json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

/// The one schema check of the result readers: j names itself `schema` (model/schema_names.hpp),
/// major version 1. `what` ("bench result") and `family` ("bench") word the errors.
inline void check_schema(const nlohmann::json& j, const std::string& src, const std::string& schema,
                         const std::string& what, const std::string& family) {
  if (!j.is_object()) fail(src, "not a " + what + ": expected a JSON object");
  const std::string got = str_of(j, "schema");
  if (got != schema)
    fail(src, "not a " + what + ": schema is \"" + got + "\", expected \"" + schema + "\"");
  const std::string ver = str_of(j, "schema_version");
  if (ver.substr(0, ver.find('.')) != "1")
    fail(src, family + " schema version \"" + ver + "\" is not supported (this cco reads 1.x)");
}

}  // namespace cco::results::fields
