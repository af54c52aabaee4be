// A small JSON reader for one value at a time (issue 46 item 1): the events of a trace, parsed
// into a reusable arena with the read-only part of nlohmann::json's interface the trace reader
// uses (is_*, get<T>, find/end, contains, size, operator[]), so one reader serves both. GPU-free.
//
// It takes only what is valid JSON and gives every value as nlohmann::json would parse it
// (numbers: an integer without fraction or exponent is signed when negative and unsigned
// otherwise, a double when it does not fit; strings: escapes decoded, UTF-8 checked; a key given
// twice: the last one counts). Anything else -- invalid JSON, nesting deeper than kMaxDepth --
// throws LiteInvalid, and the caller reads the text again with nlohmann's parser, for its error
// message; the end of the data before the value ends throws LiteNeedMore (more data may follow).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cco::trace::lite {

struct LiteInvalid {};   ///< not valid JSON (or deeper than kMaxDepth): read it the other way
struct LiteNeedMore {};  ///< the data ended inside the value

inline constexpr int kMaxDepth = 64;

class Doc;

/// One value of a Doc (valid until the Doc parses its next value).
class Value {
 public:
  enum class Kind : uint8_t { Null, Bool, Int, Uint, Float, String, Array, Object };

  bool is_null() const { return kind_ == Kind::Null; }
  bool is_boolean() const { return kind_ == Kind::Bool; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Uint || kind_ == Kind::Float; }
  bool is_number_integer() const { return kind_ == Kind::Int || kind_ == Kind::Uint; }
  bool is_number_unsigned() const { return kind_ == Kind::Uint; }
  bool is_number_float() const { return kind_ == Kind::Float; }
  bool is_array() const { return kind_ == Kind::Array; }
  bool is_object() const { return kind_ == Kind::Object; }

  /// std::string (of a string), double, int64_t or uint64_t (of a number, converted as
  /// nlohmann::json converts); anything else is the caller's mistake (checked by is_* first).
  template <class T>
  T get() const;

  /// Elements of an array or members of an object; 0 for null, 1 for any other value (as
  /// nlohmann::json::size()).
  std::size_t size() const;
  /// The i-th element of an array (i < size()).
  const Value& operator[](std::size_t i) const;
  /// The member named `key` (the last one of that name), or end() (nullptr).
  const Value* find(std::string_view key) const;
  const Value* end() const { return nullptr; }
  bool contains(std::string_view key) const { return find(key) != nullptr; }

  std::string_view string_view() const;

 private:
  friend class Doc;
  const Doc* doc_ = nullptr;
  Kind kind_ = Kind::Null;
  bool bool_ = false;
  uint32_t key_off_ = 0, key_len_ = 0;  // in the Doc's text, for a member of an object
  uint32_t str_off_ = 0, str_len_ = 0;  // a string's decoded bytes
  uint32_t first_ = 0, next_ = 0;       // first child, next sibling (0: none; 0 is the root)
  uint32_t count_ = 0;                  // children
  union {
    int64_t i;
    uint64_t u;
    double d;
  } num_{};
};

/// The arena of one value: parse() replaces what it held.
class Doc {
 public:
  /// Parses one JSON value starting at `p` (white space before it skipped) in [p, end); returns
  /// where it ends. Throws LiteInvalid or LiteNeedMore (see the top of this file).
  const char* parse(const char* p, const char* end);
  const Value& root() const { return nodes_.front(); }

 private:
  friend class Value;
  uint32_t value(const char*& p, const char* end, int depth);
  void string(const char*& p, const char* end, uint32_t* off, uint32_t* len);
  void number(const char*& p, const char* end, Value& v);
  std::vector<Value> nodes_;
  std::string text_;  // decoded strings and keys
};

/// White space as JSON defines it (space, tab, line feed, carriage return) skipped.
inline const char* skip_space(const char* p, const char* end) {
  while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) ++p;
  return p;
}

}  // namespace cco::trace::lite
