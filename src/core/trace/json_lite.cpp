// One JSON value at a time (trace/json_lite.hpp). GPU-free.
#include "trace/json_lite.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>
#include <system_error>

#include "model/utf8.hpp"

namespace cco::trace::lite {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Four hex digits after "\u" at p (p < end checked by the caller for each).
unsigned hex4(const char*& p, const char* end) {
  if (end - p < 4) throw LiteNeedMore{};
  unsigned v = 0;
  for (int i = 0; i < 4; ++i) {
    const int h = hex(p[i]);
    if (h < 0) throw LiteInvalid{};
    v = v << 4 | static_cast<unsigned>(h);
  }
  p += 4;
  return v;
}

// The length of the well-formed UTF-8 sequence at p (RFC 3629, as nlohmann::json checks it), or
// LiteInvalid; LiteNeedMore when it is cut by the end of the data.
std::size_t utf8_length(const char* p, const char* end) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(p[i]); };
  const unsigned char c = b(0);
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c == 0xE0) n = 3, lo = 0xA0;
  else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) n = 3;
  else if (c == 0xED) n = 3, hi = 0x9F;
  else if (c == 0xF0) n = 4, lo = 0x90;
  else if (c >= 0xF1 && c <= 0xF3) n = 4;
  else if (c == 0xF4) n = 4, hi = 0x8F;
  else throw LiteInvalid{};
  for (std::size_t i = 1; i < n; ++i) {
    if (p + i >= end) throw LiteNeedMore{};
    const unsigned char lower = i == 1 ? lo : 0x80, upper = i == 1 ? hi : 0xBF;
    if (b(i) < lower || b(i) > upper) throw LiteInvalid{};
  }
  return n;
}

uint32_t small(std::size_t n) {
  if (n > std::numeric_limits<uint32_t>::max()) throw LiteInvalid{};  // not for a trace event
  return static_cast<uint32_t>(n);
}

}  // namespace

// ---- values ------------------------------------------------------------------------------------

template <>
std::string Value::get<std::string>() const {
  return std::string(string_view());
}
template <>
double Value::get<double>() const {
  return kind_ == Kind::Int ? static_cast<double>(num_.i)
         : kind_ == Kind::Uint ? static_cast<double>(num_.u)
                               : num_.d;
}
template <>
int64_t Value::get<int64_t>() const {
  return kind_ == Kind::Int ? num_.i
         : kind_ == Kind::Uint ? static_cast<int64_t>(num_.u)
                               : static_cast<int64_t>(num_.d);
}
template <>
uint64_t Value::get<uint64_t>() const {
  return kind_ == Kind::Uint ? num_.u
         : kind_ == Kind::Int ? static_cast<uint64_t>(num_.i)
                              : static_cast<uint64_t>(num_.d);
}

std::size_t Value::size() const {
  if (kind_ == Kind::Null) return 0;
  return kind_ == Kind::Array || kind_ == Kind::Object ? count_ : 1;
}

const Value& Value::operator[](std::size_t i) const {
  uint32_t c = first_;
  for (std::size_t k = 0; k < i; ++k) c = doc_->nodes_[c].next_;
  return doc_->nodes_[c];
}

const Value* Value::find(std::string_view key) const {
  if (kind_ != Kind::Object) return nullptr;
  const Value* found = nullptr;
  const char* text = doc_->text_.data();
  for (uint32_t c = first_; c != 0; c = doc_->nodes_[c].next_) {
    const Value& v = doc_->nodes_[c];
    // Most members differ from the key in length or first byte: no call for them.
    if (v.key_len_ == key.size() && (key.empty() || text[v.key_off_] == key[0]) &&
        std::memcmp(text + v.key_off_, key.data(), key.size()) == 0)
      found = &v;
  }
  return found;
}

std::string_view Value::string_view() const {
  return std::string_view(doc_->text_).substr(str_off_, str_len_);
}

// ---- the parser --------------------------------------------------------------------------------

const char* Doc::parse(const char* p, const char* end) {
  nodes_.clear();
  text_.clear();
  p = skip_space(p, end);
  value(p, end, 0);
  return p;
}

void Doc::string(const char*& p, const char* end, uint32_t* off, uint32_t* len) {
  ++p;  // the opening quote
  const std::size_t start = text_.size();
  while (true) {
    const char* run = p;
    while (p < end) {
      const auto c = static_cast<unsigned char>(*p);
      if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
      ++p;
    }
    text_.append(run, static_cast<std::size_t>(p - run));
    if (p >= end) throw LiteNeedMore{};
    const auto c = static_cast<unsigned char>(*p);
    if (c == '"') {
      ++p;
      break;
    }
    if (c < 0x20) throw LiteInvalid{};  // a control character must be escaped
    if (c >= 0x80) {
      const std::size_t n = utf8_length(p, end);
      text_.append(p, n);
      p += n;
      continue;
    }
    // An escape.
    if (++p >= end) throw LiteNeedMore{};
    switch (*p++) {
      case '"': text_ += '"'; break;
      case '\\': text_ += '\\'; break;
      case '/': text_ += '/'; break;
      case 'b': text_ += '\b'; break;
      case 'f': text_ += '\f'; break;
      case 'n': text_ += '\n'; break;
      case 'r': text_ += '\r'; break;
      case 't': text_ += '\t'; break;
      case 'u': {
        unsigned cp = hex4(p, end);
        if (cp >= 0xDC00 && cp <= 0xDFFF) throw LiteInvalid{};  // a low surrogate alone
        if (cp >= 0xD800 && cp <= 0xDBFF) {                     // a high one: its pair follows
          if (end - p < 2) throw LiteNeedMore{};
          if (p[0] != '\\' || p[1] != 'u') throw LiteInvalid{};
          p += 2;
          const unsigned low = hex4(p, end);
          if (low < 0xDC00 || low > 0xDFFF) throw LiteInvalid{};
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        model::append_utf8(text_, cp);
        break;
      }
      default: throw LiteInvalid{};
    }
  }
  *off = small(start);
  *len = small(text_.size() - start);
}

void Doc::number(const char*& p, const char* end, Value& v) {
  const char* start = p;
  const bool negative = *p == '-';
  if (negative) ++p;
  if (p >= end) throw LiteNeedMore{};
  if (*p == '0') {
    ++p;
  } else if (*p >= '1' && *p <= '9') {
    while (p < end && is_digit(*p)) ++p;
  } else {
    throw LiteInvalid{};
  }
  bool fractional = false;
  if (p < end && *p == '.') {
    fractional = true;
    ++p;
    if (p >= end) throw LiteNeedMore{};
    if (!is_digit(*p)) throw LiteInvalid{};
    while (p < end && is_digit(*p)) ++p;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    fractional = true;
    ++p;
    if (p < end && (*p == '+' || *p == '-')) ++p;
    if (p >= end) throw LiteNeedMore{};
    if (!is_digit(*p)) throw LiteInvalid{};
    while (p < end && is_digit(*p)) ++p;
  }
  if (p >= end) throw LiteNeedMore{};  // more digits may follow
  if (!fractional) {
    if (negative) {
      int64_t i = 0;
      if (const auto r = std::from_chars(start, p, i); r.ec == std::errc() && r.ptr == p) {
        v.kind_ = Value::Kind::Int;
        v.num_.i = i;
        return;
      }
    } else {
      uint64_t u = 0;
      if (const auto r = std::from_chars(start, p, u); r.ec == std::errc() && r.ptr == p) {
        v.kind_ = Value::Kind::Uint;
        v.num_.u = u;
        return;
      }
    }
  }
  double d = 0;  // a fraction, an exponent, or an integer too large: a double, as nlohmann reads it
  const auto r = std::from_chars(start, p, d);
  if (r.ec != std::errc() || r.ptr != p) throw LiteInvalid{};  // out of range: the other reader says
  v.kind_ = Value::Kind::Float;
  v.num_.d = d;
}

uint32_t Doc::value(const char*& p, const char* end, int depth) {
  if (depth > kMaxDepth) throw LiteInvalid{};
  p = skip_space(p, end);
  if (p >= end) throw LiteNeedMore{};
  const uint32_t self = small(nodes_.size());
  nodes_.emplace_back();
  nodes_[self].doc_ = this;
  const char c = *p;
  if (c == '{' || c == '[') {
    const bool object = c == '{';
    nodes_[self].kind_ = object ? Value::Kind::Object : Value::Kind::Array;
    ++p;
    p = skip_space(p, end);
    if (p >= end) throw LiteNeedMore{};
    if (*p == (object ? '}' : ']')) {
      ++p;
      return self;
    }
    uint32_t last = 0, count = 0;
    while (true) {
      uint32_t key_off = 0, key_len = 0;
      if (object) {
        p = skip_space(p, end);
        if (p >= end) throw LiteNeedMore{};
        if (*p != '"') throw LiteInvalid{};
        string(p, end, &key_off, &key_len);
        p = skip_space(p, end);
        if (p >= end) throw LiteNeedMore{};
        if (*p++ != ':') throw LiteInvalid{};
      }
      const uint32_t child = value(p, end, depth + 1);
      nodes_[child].key_off_ = key_off;
      nodes_[child].key_len_ = key_len;
      if (last == 0)
        nodes_[self].first_ = child;
      else
        nodes_[last].next_ = child;
      last = child;
      ++count;
      p = skip_space(p, end);
      if (p >= end) throw LiteNeedMore{};
      if (*p == ',') {
        ++p;
        continue;
      }
      if (*p++ != (object ? '}' : ']')) throw LiteInvalid{};
      break;
    }
    nodes_[self].count_ = count;
    return self;
  }
  if (c == '"') {
    uint32_t off = 0, len = 0;
    string(p, end, &off, &len);
    nodes_[self].kind_ = Value::Kind::String;
    nodes_[self].str_off_ = off;
    nodes_[self].str_len_ = len;
    return self;
  }
  if (c == '-' || is_digit(c)) {
    number(p, end, nodes_[self]);
    return self;
  }
  const auto literal = [&](std::string_view word) {
    const auto have = static_cast<std::size_t>(end - p);
    if (std::memcmp(p, word.data(), std::min(have, word.size())) != 0) throw LiteInvalid{};
    if (have < word.size()) throw LiteNeedMore{};
    p += word.size();
  };
  if (c == 't') {
    literal("true");
    nodes_[self].kind_ = Value::Kind::Bool;
    nodes_[self].bool_ = true;
  } else if (c == 'f') {
    literal("false");
    nodes_[self].kind_ = Value::Kind::Bool;
  } else if (c == 'n') {
    literal("null");
  } else {
    throw LiteInvalid{};
  }
  return self;
}

}  // namespace cco::trace::lite
