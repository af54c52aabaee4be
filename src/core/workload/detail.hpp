// The workload language's internals, shared by its translation units (never included outside
// src/core/workload/): a JSON reader that records where every value and key starts (reader.cpp),
// "${...}" expressions (expr.hpp), and small helpers. Errors are StepError with a position.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "workload/workload.hpp"

namespace cco::workload::detail {

// Internal code speaks the model's vocabulary unqualified (types, parsers of names, Error).
using namespace cco::model;

/// Length of the valid UTF-8 sequence at the start of `s` (lead byte >= 0x80), 0 if invalid:
/// bad lead or continuation bytes, overlong forms, surrogates, code points above U+10FFFF.
std::size_t utf8_length(std::string_view s);
/// "FILE:LINE:COLUMN", or "FILE" when the position is unknown.
std::string format_pos(const std::string& file, SourcePos p);
/// Bytes for people: "1.50 MiB".
std::string human(int64_t bytes);
inline int64_t align_up(int64_t v, int64_t a) {
  return (v + a - 1) / a * a;
}

// ---- the JSON reader (reader.cpp) ------------------------------------------------------------

struct Node {
  enum class T { Null, Bool, Int, Float, String, Array, Object };
  T type = T::Null;
  bool b = false;
  int64_t i = 0;
  double d = 0;
  std::string s;
  std::vector<Node> items;        // array
  std::vector<std::string> keys;  // object, in file order
  std::vector<SourcePos> key_pos;
  std::vector<Node> values;
  SourcePos pos;  // first character of the value (the quote of a string)

  const Node* get(std::string_view k) const {
    for (std::size_t j = 0; j < keys.size(); ++j)
      if (keys[j] == k) return &values[j];
    return nullptr;
  }
  SourcePos key_at(std::string_view k) const {
    for (std::size_t j = 0; j < keys.size(); ++j)
      if (keys[j] == k) return key_pos[j];
    return pos;
  }
};

/// "an integer", "a string", ... for messages.
const char* type_name(Node::T t);

/// The document in `text` (from `file`, for messages), with every value's and key's position.
/// Throws StepError ("JSON syntax: ...") at the offending character.
Node read_json(std::string_view text, const std::string& file);

// ---- expressions (expr.hpp, expr.cpp) ----------------------------------------------------------

struct Value {
  bool is_str = false;
  int64_t i = 0;
  std::string s;
  std::string text() const { return is_str ? s : std::to_string(i); }
};

/// Names an expression may not give a parameter: "ranks" and the functions.
const std::set<std::string>& reserved_names();
bool is_identifier(std::string_view s);

}  // namespace cco::workload::detail
