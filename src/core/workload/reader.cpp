// The workload language's JSON reader: JSON as RFC 8259 has it, with the line and column (in
// characters) of every value and key kept for messages; UTF-8 checked; depth and size bounded.
#include "model/read_file.hpp"
#include "model/utf8.hpp"
#include "workload/detail.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <sstream>

namespace cco::workload::detail {

/// Length of the valid UTF-8 sequence at the start of `s` (lead byte >= 0x80), 0 if invalid:
/// bad lead or continuation bytes, overlong forms, surrogates, code points above U+10FFFF.
std::size_t utf8_length(std::string_view s) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(0);
  std::size_t n = 0;
  uint32_t cp = 0;
  if (c >= 0xC2 && c <= 0xDF) n = 2, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, cp = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, cp = c & 0x07;
  else return 0;
  if (s.size() < n) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(k) & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
      (cp >= 0xD800 && cp < 0xE000))
    return 0;
  return n;
}

std::string format_pos(const std::string& file, SourcePos p) {
  if (p.line <= 0) return file;
  return file + ":" + std::to_string(p.line) + ":" + std::to_string(p.column);
}

std::string human(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  char buf[64];
  if (bytes >= (int64_t{1} << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / double(int64_t{1} << 30));
  else if (bytes >= (int64_t{1} << 20))
    std::snprintf(buf, sizeof buf, "%.2f MiB", b / double(int64_t{1} << 20));
  else if (bytes >= 1024)
    std::snprintf(buf, sizeof buf, "%.2f KiB", b / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  return buf;
}

const char* type_name(Node::T t) {
  switch (t) {
    case Node::T::Null:
      return "null";
    case Node::T::Bool:
      return "a boolean";
    case Node::T::Int:
      return "an integer";
    case Node::T::Float:
      return "a number with a fraction or an exponent (write whole numbers as digits)";
    case Node::T::String:
      return "a string";
    case Node::T::Array:
      return "an array";
    case Node::T::Object:
      return "an object";
  }
  return "?";
}

namespace {

class JsonReader {
 public:
  JsonReader(std::string_view text, const std::string& file) : t_(text), file_(file) {}

  // A character as a message shows it: 'x', or \xNN for a control byte or one of a UTF-8
  // sequence (a raw 0x1F in a terminal line shows nothing).
  static std::string shown(char c) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7F) return std::string("'") + c + "'";
    char b[8];
    std::snprintf(b, sizeof b, "\\x%02X", u);
    return b;
  }

  Node document() {
    // Gzip's magic number: workloads are plain JSON (a .json.gz was given by mistake).
    if (t_.size() >= 2 && t_[0] == '\x1F' && t_[1] == '\x8B')
      fail("a gzip file: a workload file is plain JSON (gunzip it first)");
    if (t_.substr(0, 3) == "\xEF\xBB\xBF") i_ = 3;  // UTF-8 byte order mark
    skip_ws();
    if (i_ >= t_.size()) fail(model::blank_text_reason(t_));
    Node n = value(0);
    skip_ws();
    if (i_ < t_.size()) fail("unexpected text after the end of the document");
    return n;
  }

 private:
  std::string_view t_;
  const std::string& file_;
  std::size_t i_ = 0;
  int line_ = 1, col_ = 1;

  [[noreturn]] void fail(const std::string& msg) const {
    throw StepError(file_, {line_, col_}, "JSON syntax: " + msg);
  }
  SourcePos here() const { return {line_, col_}; }
  bool at_end() const { return i_ >= t_.size(); }
  char peek() const { return at_end() ? '\0' : t_[i_]; }
  void advance() {
    const auto c = static_cast<unsigned char>(t_[i_++]);
    if (c == '\n') {
      ++line_;
      col_ = 1;
    } else if ((c & 0xC0) != 0x80) {  // count characters, not UTF-8 continuation bytes
      ++col_;
    }
  }
  void skip_ws() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r'))
      advance();
  }
  void expect(char c, const char* what) {
    if (peek() != c) fail(std::string("expected ") + what);
    advance();
  }

  Node value(int depth) {
    if (depth > 200) fail("nesting deeper than 200 levels");
    Node n;
    n.pos = here();
    const char c = peek();
    if (c == '{') {
      object(n, depth);
    } else if (c == '[') {
      array(n, depth);
    } else if (c == '"') {
      n.type = Node::T::String;
      n.s = string();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      number(n);
    } else if (t_.substr(i_, 4) == "true") {
      n.type = Node::T::Bool;
      n.b = true;
      for (int k = 0; k < 4; ++k) advance();
    } else if (t_.substr(i_, 5) == "false") {
      n.type = Node::T::Bool;
      for (int k = 0; k < 5; ++k) advance();
    } else if (t_.substr(i_, 4) == "null") {
      for (int k = 0; k < 4; ++k) advance();
    } else if (at_end()) {
      fail("unexpected end of the file, expected a value");
    } else {
      fail("unexpected character " + shown(c) + ", expected a value");
    }
    return n;
  }

  void object(Node& n, int depth) {
    n.type = Node::T::Object;
    advance();  // {
    skip_ws();
    if (peek() == '}') {
      advance();
      return;
    }
    for (;;) {
      skip_ws();
      if (peek() != '"') fail("expected a member name in double quotes");
      const SourcePos kp = here();
      std::string key = string();
      for (std::size_t j = 0; j < n.keys.size(); ++j)
        if (n.keys[j] == key)
          throw StepError(file_, kp,
                          "duplicate key '" + key + "' (first at line " +
                              std::to_string(n.key_pos[j].line) + ")");
      skip_ws();
      expect(':', "':' after a member name");
      skip_ws();
      Node v = value(depth + 1);
      n.keys.push_back(std::move(key));
      n.key_pos.push_back(kp);
      n.values.push_back(std::move(v));
      skip_ws();
      if (peek() == ',') {
        advance();
        continue;
      }
      if (peek() == '}') {
        advance();
        return;
      }
      fail("expected ',' or '}' after an object member");
    }
  }

  void array(Node& n, int depth) {
    n.type = Node::T::Array;
    advance();  // [
    skip_ws();
    if (peek() == ']') {
      advance();
      return;
    }
    for (;;) {
      skip_ws();
      n.items.push_back(value(depth + 1));
      skip_ws();
      if (peek() == ',') {
        advance();
        continue;
      }
      if (peek() == ']') {
        advance();
        return;
      }
      fail("expected ',' or ']' after an array element");
    }
  }

  uint32_t hex4() {
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = peek();
      uint32_t d = 0;
      if (c >= '0' && c <= '9')
        d = static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        d = static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        d = static_cast<uint32_t>(c - 'A' + 10);
      else
        fail("expected four hexadecimal digits after \\u");
      v = v * 16 + d;
      advance();
    }
    return v;
  }

  std::string string() {
    advance();  // opening quote
    std::string out;
    for (;;) {
      if (at_end()) fail("unterminated string");
      const char c = peek();
      if (c == '"') {
        advance();
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string (escape it)");
      if (static_cast<unsigned char>(c) >= 0x80) {  // a UTF-8 sequence: reports are UTF-8 JSON
        const std::size_t n = utf8_length(t_.substr(i_));
        if (n == 0) fail("invalid UTF-8 in a string (files must be UTF-8)");
        for (std::size_t k = 0; k < n; ++k) {
          out += peek();
          advance();
        }
        continue;
      }
      if (c != '\\') {
        out += c;
        advance();
        continue;
      }
      advance();
      const char e = peek();
      if (at_end()) fail("unterminated string");
      advance();
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {
            if (peek() != '\\') fail("unpaired surrogate in \\u escape");
            advance();
            if (peek() != 'u') fail("unpaired surrogate in \\u escape");
            advance();
            const uint32_t lo = hex4();
            if (lo < 0xDC00 || lo >= 0xE000) fail("unpaired surrogate in \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            fail("unpaired surrogate in \\u escape");
          }
          model::append_utf8(out, cp);
          break;
        }
        default:
          fail(std::string("unknown escape '\\") + e + "'");
      }
    }
  }

  void number(Node& n) {
    const std::size_t start = i_;
    bool frac = false;
    if (peek() == '-') advance();
    if (peek() == '0') {
      advance();
    } else if (peek() >= '1' && peek() <= '9') {
      while (peek() >= '0' && peek() <= '9') advance();
    } else {
      fail("expected a digit");
    }
    if (peek() == '.') {
      frac = true;
      advance();
      if (!(peek() >= '0' && peek() <= '9')) fail("expected a digit after '.'");
      while (peek() >= '0' && peek() <= '9') advance();
    }
    if (peek() == 'e' || peek() == 'E') {
      frac = true;
      advance();
      if (peek() == '+' || peek() == '-') advance();
      if (!(peek() >= '0' && peek() <= '9')) fail("expected a digit in the exponent");
      while (peek() >= '0' && peek() <= '9') advance();
    }
    const std::string_view text = t_.substr(start, i_ - start);
    if (!frac) {
      int64_t v = 0;
      const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
      if (r.ec != std::errc() || r.ptr != text.data() + text.size())
        throw StepError(file_, n.pos, "integer " + std::string(text) + " is out of range (64-bit)");
      n.type = Node::T::Int;
      n.i = v;
    } else {
      n.type = Node::T::Float;
      n.d = std::strtod(std::string(text).c_str(), nullptr);
    }
  }
};

}  // namespace

Node read_json(std::string_view text, const std::string& file) {
  JsonReader reader(text, file);
  return reader.document();
}

}  // namespace cco::workload::detail
