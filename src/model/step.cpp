// Workload files: a JSON reader that keeps line and column of every value, "${...}" expressions,
// expansion of parameters, repeats and buckets, validation, ordering, layout and T_ideal.
#include "model/step.hpp"

#include "model/read_file.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <sstream>

#include "model/occupancy.hpp"

namespace cco::model {

namespace {

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

int64_t align_up(int64_t v, int64_t a) {
  return (v + a - 1) / a * a;
}

}  // namespace

StepError::StepError(std::string file, SourcePos pos, std::string message)
    : Error(format_pos(file, pos) + ": " + message),
      file_(std::move(file)),
      pos_(pos),
      message_(std::move(message)) {}

const char* to_string(OpKind k) {
  switch (k) {
    case OpKind::Gemm:
      return "gemm";
    case OpKind::Elementwise:
      return "elementwise";
    case OpKind::Norm:
      return "norm";
    case OpKind::Collective:
      return "collective";
  }
  return "?";
}

const char* to_string(GemmEngine e) {
  return e == GemmEngine::Builtin ? "builtin" : "cublaslt";
}
const char* to_string(StreamId s) {
  return s == StreamId::Comm ? "comm" : "compute";
}

double StepOp::flops() const {
  return kind == OpKind::Gemm ? gemm_flops(m, n, k) : 0.0;
}

double StepOp::traffic() const {
  const double e = static_cast<double>(dtype_size(dtype));
  switch (kind) {
    case OpKind::Gemm:
      return e * (static_cast<double>(m) * static_cast<double>(k) +
                  static_cast<double>(k) * static_cast<double>(n) +
                  static_cast<double>(m) * static_cast<double>(n));
    case OpKind::Elementwise:
    case OpKind::Norm:
      return 3.0 * static_cast<double>(bytes);
    case OpKind::Collective:
      return static_cast<double>(bytes);
  }
  return 0;
}

int64_t StepOp::send_elements(int nranks) const {
  const int64_t total = bytes / static_cast<int64_t>(dtype_size(dtype));
  return coll == Collective::AllGather ? total / nranks : total;
}

int64_t StepOp::recv_elements(int nranks) const {
  const int64_t total = bytes / static_cast<int64_t>(dtype_size(dtype));
  return coll == Collective::ReduceScatter ? total / nranks : total;
}

int64_t StepOp::nccl_count(int nranks) const {
  const int64_t total = bytes / static_cast<int64_t>(dtype_size(dtype));
  switch (coll) {
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll:
      return total / nranks;
    default:
      return total;
  }
}

int Step::find_op(std::string_view id) const {
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (ops[i].id == id) return static_cast<int>(i);
  return -1;
}

int Step::find_buffer(std::string_view nm) const {
  for (std::size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].name == nm) return static_cast<int>(i);
  return -1;
}

const StepParam* Step::param(std::string_view nm) const {
  for (const auto& p : params)
    if (p.name == nm) return &p;
  return nullptr;
}

int pattern_mod(DType t, int nranks) {
  const double exact = t == DType::BF16 ? 256 : t == DType::F16 ? 2048 : 16777216;
  const double n = std::max(1, nranks);
  const double top = std::max(n * (n + 1) / 2, n);  // a sum over ranks of scales r + 1
  return static_cast<int>(std::clamp(std::floor(exact / top), 1.0, 7.0));
}

// =============================================================================================
// A JSON reader that records where every value and key starts.
// =============================================================================================

namespace {

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

const char* type_name(Node::T t) {
  switch (t) {
    case Node::T::Null:
      return "null";
    case Node::T::Bool:
      return "a boolean";
    case Node::T::Int:
      return "an integer";
    case Node::T::Float:
      return "a fractional number";
    case Node::T::String:
      return "a string";
    case Node::T::Array:
      return "an array";
    case Node::T::Object:
      return "an object";
  }
  return "?";
}

class JsonReader {
 public:
  JsonReader(std::string_view text, const std::string& file) : t_(text), file_(file) {}

  Node document() {
    if (t_.substr(0, 3) == "\xEF\xBB\xBF") i_ = 3;  // UTF-8 byte order mark
    skip_ws();
    if (i_ >= t_.size()) fail("the file is empty");
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
      fail(std::string("unexpected character '") + c + "', expected a value");
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

  static void put_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
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
          put_utf8(out, cp);
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

// =============================================================================================
// "${...}" expressions
// =============================================================================================

struct Value {
  bool is_str = false;
  int64_t i = 0;
  std::string s;
  std::string text() const { return is_str ? s : std::to_string(i); }
};

const std::set<std::string>& reserved_names() {
  static const std::set<std::string> r = {"ranks", "min", "max", "ceil_div", "round_up"};
  return r;
}

bool is_identifier(std::string_view s) {
  if (s.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  for (char c : s)
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  return true;
}

/// Evaluates one expression (the text between "${" and "}"). `lookup` gives a variable's value
/// or nullopt; `fail(offset, message)` throws with the offset into `src`.
class ExprEval {
 public:
  using Lookup = std::function<std::optional<Value>(const std::string&)>;
  using Fail = std::function<void(std::size_t, const std::string&)>;
  ExprEval(std::string_view src, Lookup lookup, Fail fail)
      : s_(src), lookup_(std::move(lookup)), fail_(std::move(fail)) {}

  Value run() {
    skip();
    if (i_ >= s_.size()) error(0, "empty expression");
    Value v = logic_or();
    skip();
    if (i_ < s_.size()) error(i_, "unexpected '" + std::string(1, s_[i_]) + "'");
    return v;
  }

 private:
  std::string_view s_;
  Lookup lookup_;
  Fail fail_;
  std::size_t i_ = 0;

  [[noreturn]] void error(std::size_t at, const std::string& msg) {
    fail_(at, msg);
    throw Error(msg);  // fail_ always throws; this keeps the compiler sure of it
  }
  void skip() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
  }
  bool eat(std::string_view tok) {
    skip();
    if (s_.substr(i_, tok.size()) != tok) return false;
    // "<" must not eat the first half of "<=", etc.
    if (tok.size() == 1 && (tok == "<" || tok == ">" || tok == "!") && i_ + 1 < s_.size() &&
        s_[i_ + 1] == '=')
      return false;
    if (tok.size() == 1 && (tok == "&" || tok == "|")) return false;
    i_ += tok.size();
    return true;
  }
  int64_t as_int(const Value& v, std::size_t at) {
    if (v.is_str) error(at, "'" + v.s + "' is a string; only integers take part in arithmetic");
    return v.i;
  }
  static Value num(int64_t x) { return Value{false, x, {}}; }

  Value logic_or() {
    const std::size_t at = (skip(), i_);
    Value l = logic_and();
    while (eat("||")) {
      const std::size_t r_at = (skip(), i_);
      const Value r = logic_and();
      l = num((as_int(l, at) != 0 || as_int(r, r_at) != 0) ? 1 : 0);
    }
    return l;
  }
  Value logic_and() {
    const std::size_t at = (skip(), i_);
    Value l = compare();
    while (eat("&&")) {
      const std::size_t r_at = (skip(), i_);
      const Value r = compare();
      l = num((as_int(l, at) != 0 && as_int(r, r_at) != 0) ? 1 : 0);
    }
    return l;
  }
  Value compare() {
    const std::size_t at = (skip(), i_);
    Value l = additive();
    for (const char* op : {"==", "!=", "<=", ">=", "<", ">"}) {
      if (!eat(op)) continue;
      const std::size_t r_at = (skip(), i_);
      const int64_t a = as_int(l, at), b = as_int(additive(), r_at);
      const std::string o = op;
      const bool res = o == "=="   ? a == b
                       : o == "!=" ? a != b
                       : o == "<=" ? a <= b
                       : o == ">=" ? a >= b
                       : o == "<"  ? a < b
                                   : a > b;
      return num(res ? 1 : 0);
    }
    return l;
  }
  Value additive() {
    const std::size_t at = (skip(), i_);
    Value l = multiplicative();
    for (;;) {
      skip();
      const std::size_t op_at = i_;
      const bool plus = eat("+");
      if (!plus && !eat("-")) return l;
      const std::size_t r_at = (skip(), i_);
      const int64_t a = as_int(l, at), b = as_int(multiplicative(), r_at);
      int64_t r = 0;
      if (plus ? __builtin_add_overflow(a, b, &r) : __builtin_sub_overflow(a, b, &r))
        error(op_at, "integer overflow");
      l = num(r);
    }
  }
  Value multiplicative() {
    const std::size_t at = (skip(), i_);
    Value l = unary();
    for (;;) {
      skip();
      const std::size_t op_at = i_;
      char op = 0;
      if (eat("*"))
        op = '*';
      else if (eat("/"))
        op = '/';
      else if (eat("%"))
        op = '%';
      else
        return l;
      const std::size_t r_at = (skip(), i_);
      const int64_t a = as_int(l, at), b = as_int(unary(), r_at);
      int64_t r = 0;
      if (op == '*') {
        if (__builtin_mul_overflow(a, b, &r)) error(op_at, "integer overflow");
      } else {
        if (b == 0) error(op_at, "division by zero");
        if (a == INT64_MIN && b == -1) error(op_at, "integer overflow");
        r = op == '/' ? a / b : a % b;
      }
      l = num(r);
    }
  }
  Value unary() {
    skip();
    const std::size_t at = i_;
    if (eat("-")) {
      const int64_t v = as_int(unary(), at + 1);
      if (v == INT64_MIN) error(at, "integer overflow");
      return num(-v);
    }
    if (eat("!")) return num(as_int(unary(), at + 1) == 0 ? 1 : 0);
    return primary();
  }
  Value primary() {
    skip();
    const std::size_t at = i_;
    if (i_ >= s_.size()) error(at, "expected a value at the end of the expression");
    const char c = s_[i_];
    if (c == '(') {
      ++i_;
      Value v = logic_or();
      if (!eat(")")) error(i_, "expected ')'");
      return v;
    }
    if (c >= '0' && c <= '9') {
      std::size_t j = i_;
      while (j < s_.size() && s_[j] >= '0' && s_[j] <= '9') ++j;
      int64_t v = 0;
      const auto r = std::from_chars(s_.data() + i_, s_.data() + j, v);
      if (r.ec != std::errc()) error(at, "integer out of range");
      i_ = j;
      if (i_ < s_.size() && (std::isalpha(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_'))
        error(i_, "unexpected '" + std::string(1, s_[i_]) + "' after a number");
      return num(v);
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t j = i_;
      while (j < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[j])) || s_[j] == '_'))
        ++j;
      const std::string name(s_.substr(i_, j - i_));
      i_ = j;
      skip();
      if (i_ < s_.size() && s_[i_] == '(') return call(name, at);
      auto v = lookup_(name);
      if (!v) error(at, "unknown name '" + name + "'");
      return *v;
    }
    error(at, "unexpected '" + std::string(1, c) + "', expected a number, a name or '('");
  }
  Value call(const std::string& name, std::size_t at) {
    ++i_;  // (
    std::vector<int64_t> args;
    skip();
    if (i_ < s_.size() && s_[i_] == ')') {
      ++i_;
    } else {
      for (;;) {
        const std::size_t a_at = (skip(), i_);
        args.push_back(as_int(logic_or(), a_at));
        if (eat(",")) continue;
        if (eat(")")) break;
        error(i_, "expected ',' or ')' in the arguments of " + name + "()");
      }
    }
    if (name == "min" || name == "max") {
      if (args.empty()) error(at, name + "() needs at least one argument");
      return num(name == "min" ? *std::min_element(args.begin(), args.end())
                               : *std::max_element(args.begin(), args.end()));
    }
    if (name == "ceil_div" || name == "round_up") {
      if (args.size() != 2) error(at, name + "() takes two arguments");
      const int64_t a = args[0], b = args[1];
      if (b <= 0) error(at, name + "(): the second argument must be positive");
      if (a < 0) error(at, name + "(): the first argument must not be negative");
      const int64_t q = a / b + (a % b != 0 ? 1 : 0);
      int64_t r = q;
      if (name == "round_up" && __builtin_mul_overflow(q, b, &r)) error(at, "integer overflow");
      return num(r);
    }
    error(at, "unknown function '" + name + "' (known: min, max, ceil_div, round_up)");
  }
};

// =============================================================================================
// Expansion of a parsed file into a Step
// =============================================================================================

struct Ref {
  std::string name;
  SourcePos pos;
  bool empty() const { return name.empty(); }
};

struct RawOp {
  StepOp op;
  std::vector<Ref> after;
  Ref a, b, c, send, recv;
  int64_t grad_elements = 0;  // gradient elements (for buckets), 0: not a gradient
  int group = -1;             // index of the buckets element that generated it
};

struct BucketSpec {
  std::string id;
  std::string grads;
  Collective coll = Collective::AllReduce;
  RedOp redop = RedOp::Sum;
  DType dtype = DType::BF16;
  int64_t cap = 0, first_cap = 0;
  StreamId stream = StreamId::Comm;
  std::string description;
  SourcePos pos, grads_pos, id_pos;
};

struct ParamInfo {
  std::string description;
  SourcePos pos;
  bool overridden = false;
};

constexpr std::size_t kMaxElements = 100000;  // ops or buffers after expansion
constexpr std::size_t kMaxVisits = 10000000;  // repeat iterations plus items visited
constexpr int64_t kMaxDim = INT32_MAX;        // GEMM dimensions (int in the kernels)
constexpr int64_t kMaxBytes = int64_t{1} << 40;

bool valid_name(const std::string& s) {
  if (s.empty()) return false;
  return s.find_first_not_of(
             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-:/") ==
         std::string::npos;
}

class Builder {
 public:
  Builder(std::string file, const StepLoadOptions& opt) : file_(std::move(file)), opt_(opt) {}
  Step build(const Node& root);

 private:
  std::string file_;
  const StepLoadOptions& opt_;
  std::vector<std::pair<std::string, Value>> params_;  // evaluated so far, in order
  std::vector<ParamInfo> param_info_;
  std::vector<std::pair<std::string, int64_t>> vars_;  // repeat variables, innermost last
  std::vector<StepBuffer> buffers_;
  std::vector<RawOp> ops_;
  std::vector<BucketSpec> buckets_;
  std::size_t visits_ = 0;  // repeat iterations and items expanded so far

  [[noreturn]] void fail(SourcePos p, const std::string& msg) const {
    throw StepError(file_, p, msg);
  }

  // ---- values ---------------------------------------------------------------------------------

  std::optional<Value> lookup(const std::string& name) const {
    for (auto it = vars_.rbegin(); it != vars_.rend(); ++it)
      if (it->first == name) return Value{false, it->second, {}};
    for (const auto& [n, v] : params_)
      if (n == name) return v;
    if (name == "ranks") return Value{false, opt_.nranks, {}};
    return std::nullopt;
  }

  /// Position of byte `offset` of a string node's decoded text (exact unless escapes precede it).
  static SourcePos pos_in(const Node& str, std::size_t offset) {
    SourcePos p = str.pos;
    int chars = 0;
    for (std::size_t j = 0; j < offset && j < str.s.size(); ++j)
      if ((static_cast<unsigned char>(str.s[j]) & 0xC0) != 0x80) ++chars;
    p.column += 1 + chars;
    return p;
  }

  /// Substitutes every "${...}" of a string node. A string that is exactly one "${...}" keeps the
  /// expression's type (integer or string); otherwise the result is text.
  Value subst(const Node& n) const {
    const std::string& s = n.s;
    std::string out;
    std::size_t j = 0;
    std::optional<Value> whole;
    while (j < s.size()) {
      const std::size_t open = s.find("${", j);
      if (open == std::string::npos) {
        out += s.substr(j);
        break;
      }
      out += s.substr(j, open - j);
      const std::size_t close = s.find('}', open + 2);
      if (close == std::string::npos) fail(pos_in(n, open), "'${' without a closing '}'");
      const std::string expr = s.substr(open + 2, close - open - 2);
      const std::size_t base = open + 2;
      ExprEval ev(
          expr, [this](const std::string& name) { return lookup(name); },
          [&](std::size_t at, const std::string& msg) {
            throw StepError(file_, pos_in(n, base + at), "in \"${" + expr + "}\": " + msg);
          });
      Value v = ev.run();
      if (open == 0 && close + 1 == s.size()) whole = v;
      out += v.text();
      j = close + 1;
    }
    if (whole) return *whole;
    return Value{true, 0, out};
  }

  int64_t get_int(const Node& n, const std::string& what) const {
    if (n.type == Node::T::Int) return n.i;
    if (n.type == Node::T::String) {
      const Value v = subst(n);
      if (!v.is_str) return v.i;
      fail(n.pos, what +
                      " must be an integer or a \"${...}\" integer expression, got the string '" +
                      v.s + "'");
    }
    fail(n.pos,
         what + " must be an integer or a \"${...}\" integer expression, got " + type_name(n.type));
  }

  std::string get_str(const Node& n, const std::string& what) const {
    if (n.type != Node::T::String)
      fail(n.pos, what + " must be a string, got " + type_name(n.type));
    return subst(n).text();
  }

  /// A string taken as it is (no expressions): the schema, names of the workload.
  std::string literal(const Node& n, const std::string& what) const {
    if (n.type != Node::T::String)
      fail(n.pos, what + " must be a string, got " + type_name(n.type));
    return n.s;
  }

  int64_t ranged(const Node& n, const std::string& what, int64_t lo, int64_t hi) const {
    const int64_t v = get_int(n, what);
    if (v < lo || v > hi)
      fail(n.pos, what + " is " + std::to_string(v) + "; it must be in " + std::to_string(lo) +
                      ".." + std::to_string(hi));
    return v;
  }

  DType get_dtype(const Node& n, const std::string& what) const {
    const std::string s = get_str(n, what);
    try {
      return parse_dtype(s);
    } catch (const Error& e) {
      fail(n.pos, what + ": " + e.what());
    }
  }

  StreamId get_stream(const Node& n, const std::string& what) const {
    const std::string s = get_str(n, what);
    if (s == "compute") return StreamId::Compute;
    if (s == "comm") return StreamId::Comm;
    fail(n.pos, what + " is '" + s + "'; the streams are \"compute\" and \"comm\"");
  }

  Ref get_ref(const Node& n, const std::string& what) const { return Ref{get_str(n, what), n.pos}; }

  void check_fields(const Node& obj, const std::vector<std::string>& allowed,
                    const std::string& what) const {
    for (std::size_t j = 0; j < obj.keys.size(); ++j) {
      if (std::find(allowed.begin(), allowed.end(), obj.keys[j]) != allowed.end()) continue;
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      fail(obj.key_pos[j],
           "unknown field '" + obj.keys[j] + "' in " + what + " (fields: " + list + ")");
    }
  }

  const Node& need(const Node& obj, const char* key, const std::string& what) const {
    const Node* v = obj.get(key);
    if (!v) fail(obj.pos, what + " needs the field '" + key + "'");
    return *v;
  }

  void need_type(const Node& n, Node::T t, const std::string& what) const {
    if (n.type != t) fail(n.pos, what + " must be " + type_name(t) + ", got " + type_name(n.type));
  }

  /// The size of a memory-bound op or collective: exactly one of "bytes" and "elements".
  const Node& size_field(const Node& obj, const std::string& what) const {
    const Node* b = obj.get("bytes");
    const Node* e = obj.get("elements");
    if (b && e) fail(obj.key_at("elements"), what + " has both 'bytes' and 'elements': give one");
    if (!b && !e) fail(obj.pos, what + " needs the field 'bytes' or 'elements'");
    return b ? *b : *e;
  }

  /// Whether an element's "if" allows it (absent: yes).
  bool included(const Node& obj) const {
    const Node* c = obj.get("if");
    return !c || get_int(*c, "field 'if'") != 0;
  }

  // ---- sections -----------------------------------------------------------------------------

  void header(const Node& root, Step& step) const;
  void parameters(const Node& params);
  template <class F>
  void repeat(const Node& obj, const std::string& what, const F& each_item);
  void buffer_element(const Node& el);
  void buffer(const Node& obj);
  void op_element(const Node& el);
  void op(const Node& obj);
  void bucket_element(const Node& obj);
  std::vector<RawOp> expand_buckets();
  void finish(Step& step, std::vector<RawOp>& raw) const;
};

void Builder::header(const Node& root, Step& step) const {
  check_fields(root,
               {"schema", "schema_version", "name", "description", "parameters", "buffers", "ops"},
               "the workload");
  const Node& schema = need(root, "schema", "the workload");
  if (literal(schema, "field 'schema'") != kWorkloadSchema)
    fail(schema.pos, "field 'schema' is '" + schema.s + "'; a workload file has \"schema\": \"" +
                         kWorkloadSchema + "\"");
  const Node& ver = need(root, "schema_version", "the workload");
  const std::string v = literal(ver, "field 'schema_version'");
  int major = -1, minor = -1, patch = -1;
  char tail = 0;
  if (std::sscanf(v.c_str(), "%d.%d.%d%c", &major, &minor, &patch, &tail) != 3 || major < 0 ||
      minor < 0 || patch < 0)
    fail(ver.pos,
         "field 'schema_version' is '" + v + "'; expected MAJOR.MINOR.PATCH such as \"1.0.0\"");
  if (major != 1 || minor > 0)
    fail(ver.pos, "schema_version " + v + " is not supported: this ccoverlap reads " +
                      std::string(kWorkloadSchemaVersion) + " (and any 1.0.x)");
  step.schema_version = v;
  const Node& nm = need(root, "name", "the workload");
  step.name = literal(nm, "field 'name'");
  if (step.name.empty()) fail(nm.pos, "field 'name' must not be empty");
  if (const Node* d = root.get("description"))
    step.description = literal(*d, "field 'description'");
}

void Builder::parameters(const Node& params) {
  need_type(params, Node::T::Object, "field 'parameters'");
  std::set<std::string> used;
  for (std::size_t j = 0; j < params.keys.size(); ++j) {
    const std::string& name = params.keys[j];
    const SourcePos kp = params.key_pos[j];
    if (!is_identifier(name))
      fail(kp, "parameter name '" + name +
                   "' must be an identifier (letters, digits and '_', not starting with a digit)");
    if (reserved_names().count(name)) fail(kp, "parameter name '" + name + "' is reserved");
    const Node* def = &params.values[j];
    ParamInfo info{{}, kp, false};
    if (def->type == Node::T::Object) {
      check_fields(*def, {"default", "description"}, "parameter '" + name + "'");
      if (const Node* d = def->get("description"))
        info.description = literal(*d, "field 'description'");
      def = &need(*def, "default", "parameter '" + name + "'");
    }
    Value v;
    if (def->type == Node::T::Int) {
      v = Value{false, def->i, {}};
    } else if (def->type == Node::T::String) {
      v = subst(*def);
    } else {
      fail(def->pos, "parameter '" + name +
                         "' must be an integer, a string or {\"default\": ..., "
                         "\"description\": ...}, got " +
                         std::string(type_name(def->type)));
    }
    for (const auto& [k, text] : opt_.overrides) {
      if (k != name) continue;
      used.insert(name);
      info.overridden = true;
      if (v.is_str) {
        v.s = text;
        continue;
      }
      int64_t x = 0;
      const auto r = std::from_chars(text.data(), text.data() + text.size(), x);
      if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size())
        throw StepError(file_, {},
                        "--param " + name + "=" + text + ": parameter '" + name +
                            "' takes an integer (its default is " + std::to_string(v.i) + ")");
      v.i = x;
    }
    params_.emplace_back(name, v);
    param_info_.push_back(info);
  }
}

template <class F>
void Builder::repeat(const Node& obj, const std::string& what, const F& each_item) {
  check_fields(obj, {"repeat", "as", "items", "reverse", "if"}, "a repeat in " + what);
  if (!included(obj)) return;
  const int64_t count =
      ranged(*obj.get("repeat"), "field 'repeat'", 0, static_cast<int64_t>(kMaxElements));
  const Node& as = need(obj, "as", "a repeat");
  const std::string var = literal(as, "field 'as'");
  if (!is_identifier(var)) fail(as.pos, "field 'as' must be an identifier, got '" + var + "'");
  if (reserved_names().count(var)) fail(as.pos, "'" + var + "' is reserved");
  for (const auto& p : params_)
    if (p.first == var)
      fail(as.pos, "repeat variable '" + var + "' would hide the parameter of that name");
  for (const auto& p : vars_)
    if (p.first == var)
      fail(as.pos, "repeat variable '" + var + "' would hide an enclosing repeat's variable");
  const Node& items = need(obj, "items", "a repeat");
  need_type(items, Node::T::Array, "field 'items'");
  bool reverse = false;
  if (const Node* rv = obj.get("reverse"))
    reverse = rv->type == Node::T::Bool ? rv->b : get_int(*rv, "field 'reverse'") != 0;
  for (int64_t r = 0; r < count; ++r) {
    // Nested repeats of empty or excluded items never reach the op limit: bound the work itself.
    visits_ += items.items.size() + 1;
    if (visits_ > kMaxVisits) fail(obj.pos, "the repeats expand to more than 10 million elements");
    vars_.emplace_back(var, reverse ? count - 1 - r : r);
    for (const auto& it : items.items) each_item(it);
    vars_.pop_back();
  }
}

void Builder::buffer_element(const Node& el) {
  need_type(el, Node::T::Object, "a buffer");
  if (el.get("repeat"))
    repeat(el, "buffers", [this](const Node& it) { buffer_element(it); });
  else
    buffer(el);
}

void Builder::buffer(const Node& obj) {
  check_fields(obj, {"name", "dtype", "elements", "description", "if"}, "a buffer");
  if (!included(obj)) return;
  StepBuffer b;
  const Node& nm = need(obj, "name", "a buffer");
  b.name = get_str(nm, "field 'name'");
  b.pos = obj.pos;
  if (!valid_name(b.name))
    fail(nm.pos, "buffer name '" + b.name +
                     "' must be non-empty and hold only letters, digits and _ . - : /");
  const std::string what = "buffer '" + b.name + "'";
  if (const Node* d = obj.get("dtype")) b.dtype = get_dtype(*d, "field 'dtype' of " + what);
  b.elements = ranged(need(obj, "elements", what), "field 'elements' of " + what, 1, kMaxBytes);
  if (const Node* d = obj.get("description")) get_str(*d, "field 'description'");
  if (buffers_.size() >= kMaxElements) fail(obj.pos, "more than 100000 buffers");
  buffers_.push_back(std::move(b));
}

void Builder::op_element(const Node& el) {
  need_type(el, Node::T::Object, "an op");
  if (el.get("repeat"))
    repeat(el, "ops", [this](const Node& it) { op_element(it); });
  else if (el.get("buckets"))
    bucket_element(el);
  else
    op(el);
}

void Builder::op(const Node& obj) {
  const Node& kind_n = need(obj, "kind", "an op");
  const std::string kind = get_str(kind_n, "field 'kind'");
  std::vector<std::string> fields = {"id", "kind", "stream", "after", "description", "if"};
  StepOp o;
  o.pos = obj.pos;
  if (kind == "gemm") {
    o.kind = OpKind::Gemm;
    fields.insert(fields.end(),
                  {"m", "n", "k", "dtype", "engine", "a", "b", "c", "grad", "grad_elements"});
  } else if (kind == "elementwise" || kind == "norm") {
    o.kind = kind == "norm" ? OpKind::Norm : OpKind::Elementwise;
    fields.insert(fields.end(), {"bytes", "elements", "dtype", "grad", "grad_elements"});
  } else {
    bool ok = false;
    try {
      o.coll = parse_collective(kind);
      ok = o.coll != Collective::Broadcast && o.coll != Collective::Reduce;
    } catch (const Error&) {
    }
    if (!ok)
      fail(kind_n.pos, "unknown op kind '" + kind +
                           "' (kinds: gemm, elementwise, norm, allreduce, allgather, "
                           "reducescatter, alltoall, sendrecv)");
    o.kind = OpKind::Collective;
    fields.insert(fields.end(), {"bytes", "elements", "dtype", "op", "send", "recv"});
  }
  check_fields(obj, fields, kind + " op");
  if (!included(obj)) return;

  RawOp r;
  const Node& id_n = need(obj, "id", kind + " op");
  o.id = get_str(id_n, "field 'id'");
  if (!valid_name(o.id))
    fail(id_n.pos,
         "op id '" + o.id + "' must be non-empty and hold only letters, digits and _ . - : /");
  const std::string what = kind + " op '" + o.id + "'";
  auto field = [&](const char* f) { return "field '" + std::string(f) + "' of " + what; };
  o.stream = o.is_compute() ? StreamId::Compute : StreamId::Comm;
  if (const Node* s = obj.get("stream")) o.stream = get_stream(*s, field("stream"));
  if (const Node* d = obj.get("description")) o.description = get_str(*d, field("description"));
  if (const Node* a = obj.get("after")) {
    need_type(*a, Node::T::Array, field("after"));
    for (const auto& e : a->items) {
      if (e.type == Node::T::Object) {
        check_fields(e, {"op", "if"}, "an entry of " + field("after"));
        if (!included(e)) continue;
        r.after.push_back(get_ref(need(e, "op", "an entry of " + field("after")), field("after")));
      } else if (e.type == Node::T::String) {
        r.after.push_back(get_ref(e, field("after")));
      } else {
        fail(e.pos, "an entry of " + field("after") +
                        " must be an op id or {\"op\": ..., \"if\": ...}, got " +
                        type_name(e.type));
      }
    }
  }
  if (const Node* d = obj.get("dtype")) o.dtype = get_dtype(*d, field("dtype"));
  const int64_t esz = static_cast<int64_t>(dtype_size(o.dtype));

  if (o.kind == OpKind::Gemm) {
    o.m = ranged(need(obj, "m", what), field("m"), 1, kMaxDim);
    o.n = ranged(need(obj, "n", what), field("n"), 1, kMaxDim);
    o.k = ranged(need(obj, "k", what), field("k"), 1, kMaxDim);
    if (const Node* e = obj.get("engine")) {
      const std::string en = get_str(*e, field("engine"));
      if (en == "cublaslt")
        o.engine = GemmEngine::CublasLt;
      else if (en == "builtin")
        o.engine = GemmEngine::Builtin;
      else
        fail(e->pos,
             field("engine") + " is '" + en + "'; engines are \"cublaslt\" and \"builtin\"");
      if (o.engine == GemmEngine::Builtin && o.m >= int64_t{64} * 65535)
        fail(obj.get("m")->pos, field("m") + " is " + std::to_string(o.m) +
                                    "; the built-in GEMM takes m below 4194240 (grid limit)");
    }
    if (const Node* x = obj.get("a")) r.a = get_ref(*x, field("a"));
    if (const Node* x = obj.get("b")) r.b = get_ref(*x, field("b"));
    if (const Node* x = obj.get("c")) r.c = get_ref(*x, field("c"));
  } else if (o.is_membound()) {
    const Node& bn = size_field(obj, what);
    if (obj.get("bytes")) {
      o.bytes = ranged(bn, field("bytes"), 4, kMaxBytes);
      if (obj.get("dtype"))
        fail(obj.key_at("dtype"), field("dtype") + " goes with 'elements', not 'bytes'");
      if (o.bytes % 4 != 0)
        fail(bn.pos,
             field("bytes") + " is " + std::to_string(o.bytes) +
                 "; the memory-bound kernel works on floats, so it must be a multiple of 4");
    } else {
      // elements of `dtype`, rounded up to whole floats of the kernel
      o.bytes = (ranged(bn, field("elements"), 1, kMaxBytes / esz) * esz + 3) / 4 * 4;
    }
    o.dtype = DType::F32;
  } else {
    const Node& bn = size_field(obj, what);
    o.bytes = obj.get("bytes") ? ranged(bn, field("bytes"), 1, kMaxBytes)
                               : ranged(bn, field("elements"), 1, kMaxBytes / esz) * esz;
    const bool per_rank = o.coll == Collective::AllGather || o.coll == Collective::ReduceScatter ||
                          o.coll == Collective::AllToAll;
    const int64_t gran = esz * (per_rank ? opt_.nranks : 1);
    if (o.bytes % gran != 0)
      fail(bn.pos, (obj.get("bytes") ? field("bytes") + " is " + std::to_string(o.bytes)
                                     : field("elements") + " is " + std::to_string(o.bytes / esz)) +
                       "; " + to_string(o.coll) + " of " + to_string(o.dtype) + " on " +
                       std::to_string(opt_.nranks) + " ranks needs a multiple of " +
                       (obj.get("bytes") ? std::to_string(gran) + " bytes"
                                         : std::to_string(gran / esz) + " elements"));
    if (const Node* x = obj.get("op")) {
      if (o.coll != Collective::AllReduce && o.coll != Collective::ReduceScatter)
        fail(obj.key_at("op"),
             "field 'op' (the reduction) applies to allreduce and reducescatter only");
      try {
        o.redop = parse_redop(get_str(*x, field("op")));
      } catch (const StepError&) {
        throw;
      } catch (const Error& e) {
        fail(x->pos, field("op") + ": " + e.what());
      }
    }
    if (const Node* x = obj.get("send")) r.send = get_ref(*x, field("send"));
    if (const Node* x = obj.get("recv")) r.recv = get_ref(*x, field("recv"));
  }
  if (const Node* g = obj.get("grad")) {
    o.grad = get_str(*g, field("grad"));
    if (o.grad.empty()) fail(g->pos, field("grad") + " must not be empty");
    if (const Node* ge = obj.get("grad_elements")) {
      r.grad_elements = ranged(*ge, field("grad_elements"), 1, kMaxBytes);
    } else if (o.kind == OpKind::Gemm) {
      r.grad_elements = o.m * o.n;
    } else {
      fail(obj.pos, what + " has 'grad' and needs 'grad_elements' (the gradient's element count)");
    }
  } else if (obj.get("grad_elements")) {
    fail(obj.key_at("grad_elements"),
         field("grad_elements") + " needs 'grad' (the bucket tag) beside it");
  }
  if (ops_.size() >= kMaxElements) fail(obj.pos, "more than 100000 ops");
  r.op = std::move(o);
  ops_.push_back(std::move(r));
}

void Builder::bucket_element(const Node& el) {
  check_fields(el, {"buckets", "if"}, "a buckets element");
  const Node& b = *el.get("buckets");
  need_type(b, Node::T::Object, "field 'buckets'");
  check_fields(b,
               {"id", "grads", "collective", "dtype", "op", "cap_bytes", "first_cap_bytes",
                "stream", "description"},
               "buckets");
  if (!included(el)) return;
  BucketSpec s;
  s.pos = el.pos;
  const Node& id_n = need(b, "id", "buckets");
  s.id = get_str(id_n, "field 'id' of buckets");
  s.id_pos = id_n.pos;
  if (!valid_name(s.id))
    fail(id_n.pos,
         "buckets id '" + s.id + "' must be non-empty and hold only letters, digits and _ . - : /");
  const std::string what = "buckets '" + s.id + "'";
  auto field = [&](const char* f) { return "field '" + std::string(f) + "' of " + what; };
  const Node& g = need(b, "grads", what);
  s.grads = get_str(g, field("grads"));
  s.grads_pos = g.pos;
  if (const Node* c = b.get("collective")) {
    const std::string cn = get_str(*c, field("collective"));
    if (cn == "allreduce")
      s.coll = Collective::AllReduce;
    else if (cn == "reducescatter")
      s.coll = Collective::ReduceScatter;
    else
      fail(c->pos, field("collective") + " is '" + cn +
                       "'; buckets are \"allreduce\" or \"reducescatter\"");
  }
  if (const Node* d = b.get("dtype")) s.dtype = get_dtype(*d, field("dtype"));
  if (const Node* x = b.get("op")) {
    try {
      s.redop = parse_redop(get_str(*x, field("op")));
    } catch (const StepError&) {
      throw;
    } catch (const Error& e) {
      fail(x->pos, field("op") + ": " + e.what());
    }
  }
  s.cap = ranged(need(b, "cap_bytes", what), field("cap_bytes"), 1, kMaxBytes);
  s.first_cap = s.cap;
  if (const Node* f = b.get("first_cap_bytes"))
    s.first_cap = ranged(*f, field("first_cap_bytes"), 1, kMaxBytes);
  if (const Node* st = b.get("stream")) s.stream = get_stream(*st, field("stream"));
  if (const Node* d = b.get("description")) s.description = get_str(*d, field("description"));
  buckets_.push_back(std::move(s));
}

/// Turns each buckets element into collectives, DDP's way: gradients in the order their ops are
/// declared (the order backward produces them) fill a bucket until it holds at least the cap
/// (first_cap for the first bucket); a bucket's collective waits for all its gradients and is
/// declared right after the last of them. Returns the declaration list with them in place.
std::vector<RawOp> Builder::expand_buckets() {
  std::map<std::string, std::size_t> tag_owner;
  std::vector<std::vector<RawOp>> after_op(ops_.size());  // generated ops to place after op i
  for (std::size_t bi = 0; bi < buckets_.size(); ++bi) {
    const auto& s = buckets_[bi];
    if (auto [it, fresh] = tag_owner.emplace(s.grads, bi); !fresh)
      fail(s.grads_pos, "gradients '" + s.grads + "' are already bucketed by buckets '" +
                            buckets_[it->second].id + "' (line " +
                            std::to_string(buckets_[it->second].pos.line) + ")");
    std::vector<std::size_t> grads;
    for (std::size_t i = 0; i < ops_.size(); ++i)
      if (ops_[i].op.grad == s.grads) grads.push_back(i);
    if (grads.empty()) fail(s.grads_pos, "no op has \"grad\": \"" + s.grads + "\"");
    const int64_t esz = static_cast<int64_t>(dtype_size(s.dtype));
    const int64_t gran = s.coll == Collective::ReduceScatter ? opt_.nranks : 1;
    std::vector<std::size_t> cur;
    int64_t elems = 0, cap = s.first_cap;
    int index = 0;
    auto close = [&]() {
      RawOp r;
      StepOp& o = r.op;
      o.id = s.id + "_" + std::to_string(index);
      o.kind = OpKind::Collective;
      o.coll = s.coll;
      o.redop = s.redop;
      o.dtype = s.dtype;
      o.stream = s.stream;
      o.pos = s.pos;
      r.group = static_cast<int>(bi);
      o.bytes = (elems + gran - 1) / gran * gran * esz;
      std::string names;
      for (auto g : cur) {
        r.after.push_back(Ref{ops_[g].op.id, s.pos});
        names += (names.empty() ? "" : ", ") + ops_[g].op.id;
      }
      o.description = (s.description.empty() ? "" : s.description + ": ") + "bucket " +
                      std::to_string(index) + " of " + s.id + " (" + names + ")";
      after_op[cur.back()].push_back(std::move(r));
      ++index;
      cur.clear();
      elems = 0;
      cap = s.cap;
    };
    for (auto g : grads) {
      cur.push_back(g);
      elems += ops_[g].grad_elements;
      if (elems * esz >= cap) close();
    }
    if (!cur.empty()) close();
  }
  std::vector<RawOp> out;
  for (std::size_t i = 0; i < ops_.size(); ++i) {
    out.push_back(std::move(ops_[i]));
    for (auto& g : after_op[i]) out.push_back(std::move(g));
  }
  if (out.size() > kMaxElements) fail({}, "more than 100000 ops after bucketing");
  return out;
}

/// Resolves names, orders the ops and checks everything that needs the whole step.
void Builder::finish(Step& step, std::vector<RawOp>& raw) const {
  step.buffers = buffers_;
  std::map<std::string, int> buf_index, op_index;
  for (std::size_t i = 0; i < step.buffers.size(); ++i) {
    const auto& b = step.buffers[i];
    if (auto [it, fresh] = buf_index.emplace(b.name, static_cast<int>(i)); !fresh)
      fail(b.pos, "duplicate buffer name '" + b.name + "' (first at line " +
                      std::to_string(step.buffers[static_cast<std::size_t>(it->second)].pos.line) +
                      ")");
  }
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const auto& o = raw[i].op;
    if (auto [it, fresh] = op_index.emplace(o.id, static_cast<int>(i)); !fresh)
      fail(o.pos, "duplicate op id '" + o.id + "' (first at line " +
                      std::to_string(raw[static_cast<std::size_t>(it->second)].op.pos.line) + ")");
  }
  std::map<std::string, std::vector<int>> groups;  // buckets id -> its collectives
  for (std::size_t bi = 0; bi < buckets_.size(); ++bi) {
    const auto& s = buckets_[bi];
    if (op_index.count(s.id)) fail(s.id_pos, "buckets id '" + s.id + "' is also an op id");
    if (groups.count(s.id)) fail(s.id_pos, "duplicate buckets id '" + s.id + "'");
    auto& g = groups[s.id];
    for (std::size_t i = 0; i < raw.size(); ++i)
      if (raw[i].group == static_cast<int>(bi)) g.push_back(static_cast<int>(i));
  }

  // ---- buffers --------------------------------------------------------------------------------
  const int nr = opt_.nranks;
  std::vector<std::vector<std::pair<int, SourcePos>>> reads(raw.size());  // (buffer, where)
  auto resolve_buf = [&](const Ref& r, const StepOp& o, const char* role, DType t,
                         int64_t elems) -> int {
    if (r.empty()) return -1;
    auto it = buf_index.find(r.name);
    if (it == buf_index.end())
      fail(r.pos, "undefined buffer '" + r.name + "' (" + role + " of op '" + o.id + "')");
    const auto& b = step.buffers[static_cast<std::size_t>(it->second)];
    if (b.dtype != t || b.elements != elems)
      fail(r.pos, std::string(role) + " of op '" + o.id + "' needs " + std::to_string(elems) + " " +
                      to_string(t) + " elements; buffer '" + b.name + "' (line " +
                      std::to_string(b.pos.line) + ") holds " + std::to_string(b.elements) + " " +
                      to_string(b.dtype));
    return it->second;
  };
  for (std::size_t i = 0; i < raw.size(); ++i) {
    RawOp& r = raw[i];
    StepOp& o = r.op;
    if (o.kind == OpKind::Gemm) {
      o.a = resolve_buf(r.a, o, "input a (m x k)", o.dtype, o.m * o.k);
      o.b = resolve_buf(r.b, o, "input b (k x n)", o.dtype, o.k * o.n);
      o.c = resolve_buf(r.c, o, "output c (m x n)", o.dtype, o.m * o.n);
      if (o.c >= 0 && (o.c == o.a || o.c == o.b))
        fail(r.c.pos, "gemm '" + o.id + "' reads and writes buffer '" + r.c.name + "'");
      if (o.a >= 0) reads[i].emplace_back(o.a, r.a.pos);
      if (o.b >= 0) reads[i].emplace_back(o.b, r.b.pos);
    } else if (o.kind == OpKind::Collective) {
      o.send = resolve_buf(r.send, o, "input (send)", o.dtype, o.send_elements(nr));
      o.recv = resolve_buf(r.recv, o, "output (recv)", o.dtype, o.recv_elements(nr));
      if (o.send >= 0 && o.send == o.recv)
        fail(r.recv.pos, "collective '" + o.id +
                             "' sends and receives in the same buffer (in place is not supported)");
      if (o.send >= 0) reads[i].emplace_back(o.send, r.send.pos);
    }
    const int out = o.kind == OpKind::Gemm ? o.c : o.kind == OpKind::Collective ? o.recv : -1;
    if (out >= 0) {
      auto& b = step.buffers[static_cast<std::size_t>(out)];
      if (b.writer >= 0)
        fail(o.kind == OpKind::Gemm ? r.c.pos : r.recv.pos,
             "buffer '" + b.name + "' is written by op '" +
                 raw[static_cast<std::size_t>(b.writer)].op.id + "' and by op '" + o.id +
                 "': a buffer has at most one writer");
      b.writer = static_cast<int>(i);
      b.fill = BufferFill::Output;
    }
  }
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const StepOp& o = raw[i].op;
    if (o.kind != OpKind::Collective || o.send < 0) continue;
    auto& b = step.buffers[static_cast<std::size_t>(o.send)];
    if (b.writer >= 0)
      fail(raw[i].send.pos,
           "collective '" + o.id + "' sends buffer '" + b.name + "', which op '" +
               raw[static_cast<std::size_t>(b.writer)].op.id +
               "' writes: a collective's input must be a buffer no op writes, so that its "
               "result can be checked exactly (docs/WORKLOADS.md, Verification); express "
               "the dependency with \"after\"");
    b.fill = BufferFill::Pattern;
  }

  // ---- dependencies -------------------------------------------------------------------------
  const std::size_t n = raw.size();
  std::vector<std::vector<std::pair<int, SourcePos>>> after_src(n);
  for (std::size_t i = 0; i < n; ++i) {
    StepOp& o = raw[i].op;
    for (const auto& ref : raw[i].after) {
      std::vector<int> targets;
      if (auto it = op_index.find(ref.name); it != op_index.end()) {
        targets.push_back(it->second);
      } else if (auto g = groups.find(ref.name); g != groups.end()) {
        targets = g->second;
      } else {
        fail(ref.pos, "op '" + o.id + "' is after '" + ref.name +
                          "', which is not an op id (nor a buckets id)");
      }
      for (int t : targets) {
        if (t == static_cast<int>(i)) fail(ref.pos, "op '" + o.id + "' is after itself");
        after_src[i].emplace_back(t, ref.pos);
        o.after.push_back(t);
      }
    }
    std::sort(o.after.begin(), o.after.end());
    o.after.erase(std::unique(o.after.begin(), o.after.end()), o.after.end());
  }

  // Issue order: Kahn's algorithm, the ready op declared first goes first.
  std::vector<std::vector<int>> dependents(n);
  std::vector<int> indeg(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    for (int d : raw[i].op.after) {
      dependents[static_cast<std::size_t>(d)].push_back(static_cast<int>(i));
      ++indeg[i];
    }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (std::size_t i = 0; i < n; ++i)
    if (indeg[i] == 0) ready.push(static_cast<int>(i));
  std::vector<int> order;
  std::vector<char> done(n, 0);
  while (!ready.empty()) {
    const int v = ready.top();
    ready.pop();
    order.push_back(v);
    done[static_cast<std::size_t>(v)] = 1;
    for (int w : dependents[static_cast<std::size_t>(v)])
      if (--indeg[static_cast<std::size_t>(w)] == 0) ready.push(w);
  }
  if (order.size() != n) {
    // Every op left waits for another op left: walk those edges until one repeats.
    int v = 0;
    while (done[static_cast<std::size_t>(v)]) ++v;
    std::vector<int> path;
    std::vector<int> seen(n, -1);
    while (seen[static_cast<std::size_t>(v)] < 0) {
      seen[static_cast<std::size_t>(v)] = static_cast<int>(path.size());
      path.push_back(v);
      for (int d : raw[static_cast<std::size_t>(v)].op.after)
        if (!done[static_cast<std::size_t>(d)]) {
          v = d;
          break;
        }
    }
    std::vector<int> cyc(path.begin() + seen[static_cast<std::size_t>(v)], path.end());
    std::string text;
    for (int c : cyc) text += "'" + raw[static_cast<std::size_t>(c)].op.id + "' is after ";
    text += "'" + raw[static_cast<std::size_t>(cyc[0])].op.id + "'";
    SourcePos where = raw[static_cast<std::size_t>(cyc[0])].op.pos;
    const int next = cyc.size() > 1 ? cyc[1] : cyc[0];
    for (const auto& [t, p] : after_src[static_cast<std::size_t>(cyc[0])])
      if (t == next) where = p;
    fail(where, "dependency cycle: " + text);
  }

  // ---- streams ------------------------------------------------------------------------------
  int coll_stream = -1, first_coll = -1;
  for (std::size_t i = 0; i < n; ++i) {
    const StepOp& o = raw[i].op;
    if (o.kind != OpKind::Collective) continue;
    if (coll_stream < 0) {
      coll_stream = static_cast<int>(o.stream);
      first_coll = static_cast<int>(i);
    } else if (coll_stream != static_cast<int>(o.stream)) {
      fail(o.pos,
           "collective '" + o.id + "' is on stream \"" + to_string(o.stream) + "\" but '" +
               raw[static_cast<std::size_t>(first_coll)].op.id + "' is on \"" +
               to_string(raw[static_cast<std::size_t>(first_coll)].op.stream) +
               "\": collectives of one communicator on two streams can deadlock in NCCL, so all "
               "collectives of a step share one stream");
    }
  }
  step.ops.reserve(n);
  for (auto& r : raw) step.ops.push_back(r.op);
  step.order = order;
  step.stream_prev.assign(n, -1);
  std::vector<int> stream_next(n, -1);
  int last[2] = {-1, -1};
  for (int v : order) {
    const int s = static_cast<int>(step.ops[static_cast<std::size_t>(v)].stream);
    step.stream_prev[static_cast<std::size_t>(v)] = last[s];
    if (last[s] >= 0) stream_next[static_cast<std::size_t>(last[s])] = v;
    last[s] = v;
  }

  // ---- readers wait for writers ---------------------------------------------------------------
  // A read is safe when the writer happens before the reader in every mode: a path of `after`
  // edges and same-stream order edges (the seq mode puts everything on one stream in the same
  // order, so such a path orders them there too).
  std::map<int, std::vector<std::pair<int, SourcePos>>> by_writer;  // writer -> (reader, where)
  for (std::size_t i = 0; i < n; ++i)
    for (const auto& [bi, where] : reads[i]) {
      const int w = step.buffers[static_cast<std::size_t>(bi)].writer;
      if (w >= 0) by_writer[w].emplace_back(static_cast<int>(i), where);
    }
  for (const auto& [w, readers] : by_writer) {
    std::vector<char> reach(n, 0);
    std::vector<int> stack = {w};
    while (!stack.empty()) {
      const int v = stack.back();
      stack.pop_back();
      auto visit = [&](int x) {
        if (x >= 0 && !reach[static_cast<std::size_t>(x)]) {
          reach[static_cast<std::size_t>(x)] = 1;
          stack.push_back(x);
        }
      };
      for (int d : dependents[static_cast<std::size_t>(v)]) visit(d);
      visit(stream_next[static_cast<std::size_t>(v)]);
    }
    for (const auto& [rd, where] : readers) {
      if (reach[static_cast<std::size_t>(rd)]) continue;
      const auto& wo = step.ops[static_cast<std::size_t>(w)];
      const auto& ro = step.ops[static_cast<std::size_t>(rd)];
      std::string name;
      for (const auto& b : step.buffers)
        if (b.writer == w) name = b.name;
      fail(where, "op '" + ro.id + "' reads buffer '" + name + "', which op '" + wo.id +
                      "' writes, without waiting for it: add \"" + wo.id + "\" to its \"after\"");
    }
  }
}

Step Builder::build(const Node& root) {
  Step step;
  step.file = file_;
  step.nranks = opt_.nranks;
  need_type(root, Node::T::Object, "a workload file");
  header(root, step);
  if (const Node* p = root.get("parameters")) parameters(*p);
  for (const auto& [k, v] : opt_.overrides) {
    bool known = false;
    for (const auto& p : params_) known = known || p.first == k;
    if (known) continue;
    std::string list;
    for (const auto& p : params_) list += (list.empty() ? "" : ", ") + p.first;
    throw StepError(file_, {},
                    "--param " + k + "=" + v + ": the workload has no parameter '" + k +
                        "' (parameters: " + (list.empty() ? "none" : list) + ")");
  }
  if (const Node* b = root.get("buffers")) {
    need_type(*b, Node::T::Array, "field 'buffers'");
    for (const auto& el : b->items) buffer_element(el);
  }
  const Node& ops = need(root, "ops", "the workload");
  need_type(ops, Node::T::Array, "field 'ops'");
  for (const auto& el : ops.items) op_element(el);
  if (ops_.empty()) fail(ops.pos, "the step has no ops (after repeats and conditions)");
  auto raw = expand_buckets();
  finish(step, raw);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    StepParam p;
    p.name = params_[i].first;
    p.is_string = params_[i].second.is_str;
    p.value = params_[i].second.i;
    p.text = params_[i].second.s;
    p.description = param_info_[i].description;
    p.overridden = param_info_[i].overridden;
    p.pos = param_info_[i].pos;
    step.params.push_back(std::move(p));
  }
  if (opt_.gpu_memory > 0) check_memory(step, opt_.gpu_memory, opt_.check);
  return step;
}

}  // namespace

// =============================================================================================
// Public entry points
// =============================================================================================

Step parse_step(std::string_view text, const std::string& file, const StepLoadOptions& opt) {
  if (opt.nranks < 1) throw StepError(file, {}, "the step needs at least one rank");
  JsonReader reader(text, file);
  const Node root = reader.document();
  Builder b(file, opt);
  return b.build(root);
}

Step load_step(const std::string& path, const StepLoadOptions& opt) {
  std::string text;
  try {
    text = read_file(path, kWorkloadFileLimit);
  } catch (const FileError& e) {
    throw StepError(path, {}, "the workload file " + e.reason());
  }
  return parse_step(text, path, opt);
}

std::pair<std::string, std::string> parse_override(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) throw Error("--param " + text + ": expected NAME=VALUE");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

// ---- layout -----------------------------------------------------------------------------------

StepLayout layout_step(const Step& s, bool check) {
  StepLayout L;
  int64_t off = 0;
  std::map<std::string, int64_t> cat;
  std::vector<std::string> cat_order;
  auto alloc = [&](int64_t bytes, const std::string& what) {
    const Region r{off, bytes};
    const int64_t sz = align_up(std::max<int64_t>(bytes, 1), StepLayout::kAlign);
    off += sz;
    if (!cat.count(what)) cat_order.push_back(what);
    cat[what] += sz;
    return r;
  };
  auto esz = [](DType t) { return static_cast<int64_t>(dtype_size(t)); };
  for (const auto& b : s.buffers) L.named.push_back(alloc(b.bytes(), "named buffers"));

  std::array<int64_t, 3> rnd{}, pat{};
  int64_t mem = 0, ref = 0;
  bool lt = false;
  for (const auto& o : s.ops) {
    const auto t = static_cast<std::size_t>(o.dtype);
    if (o.kind == OpKind::Gemm) {
      if (o.a < 0) rnd[t] = std::max(rnd[t], o.m * o.k);
      if (o.b < 0) rnd[t] = std::max(rnd[t], o.k * o.n);
      ref = std::max(ref, o.m * o.n * 4);
      lt = lt || o.engine == GemmEngine::CublasLt;
    } else if (o.is_membound()) {
      mem = std::max(mem, o.bytes);
    } else if (o.send < 0) {
      pat[t] = std::max(pat[t], o.send_elements(s.nranks));
    }
  }
  for (std::size_t t = 0; t < 3; ++t) {
    if (rnd[t] > 0) L.random[t] = alloc(rnd[t] * esz(static_cast<DType>(t)), "shared inputs");
    if (pat[t] > 0) L.pattern[t] = alloc(pat[t] * esz(static_cast<DType>(t)), "shared inputs");
  }
  if (mem > 0) {
    L.mem_x = alloc(mem, "shared inputs");
    L.mem_y = alloc(mem, "shared inputs");
  }
  auto prefix = [](Region r, int64_t bytes) { return Region{r.offset, bytes}; };
  for (const auto& o : s.ops) {
    StepLayout::OpRegions R;
    const auto t = static_cast<std::size_t>(o.dtype);
    if (o.kind == OpKind::Gemm) {
      const int64_t e = esz(o.dtype);
      R.a = o.a >= 0 ? L.named[static_cast<std::size_t>(o.a)] : prefix(L.random[t], o.m * o.k * e);
      R.b = o.b >= 0 ? L.named[static_cast<std::size_t>(o.b)] : prefix(L.random[t], o.k * o.n * e);
      R.c = o.c >= 0 ? L.named[static_cast<std::size_t>(o.c)] : alloc(o.m * o.n * e, "op outputs");
      if (check) R.snap = alloc(o.m * o.n * e, "snapshots (-c)");
    } else if (o.is_membound()) {
      R.x = prefix(L.mem_x, o.bytes);
      R.y = prefix(L.mem_y, o.bytes);
      R.z = alloc(o.bytes, "op outputs");
    } else {
      const int64_t e = esz(o.dtype);
      R.send = o.send >= 0 ? L.named[static_cast<std::size_t>(o.send)]
                           : prefix(L.pattern[t], o.send_elements(s.nranks) * e);
      R.recv = o.recv >= 0 ? L.named[static_cast<std::size_t>(o.recv)]
                           : alloc(o.recv_elements(s.nranks) * e, "op outputs");
    }
    L.ops.push_back(R);
  }
  if (check && ref > 0) L.reference = alloc(ref, "reference scratch (-c)");
  if (lt) {
    L.workspace[0] = alloc(StepLayout::kWorkspaceBytes, "cuBLASLt workspaces");
    L.workspace[1] = alloc(StepLayout::kWorkspaceBytes, "cuBLASLt workspaces");
  }
  L.total = off;
  for (const auto& c : cat_order) L.breakdown.emplace_back(c, cat[c]);
  return L;
}

void check_memory(const Step& s, int64_t gpu_memory, bool check) {
  const StepLayout L = layout_step(s, check);
  const int64_t limit = gpu_memory - kStepMemoryReserve;
  if (L.total <= limit) return;
  // Point at the largest single part: a named buffer or an op's own output (and snapshot).
  SourcePos where;
  std::string what;
  int64_t most = -1;
  for (std::size_t i = 0; i < s.buffers.size(); ++i)
    if (s.buffers[i].bytes() > most) {
      most = s.buffers[i].bytes();
      where = s.buffers[i].pos;
      what = "buffer '" + s.buffers[i].name + "'";
    }
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    const auto& R = L.ops[i];
    const auto& o = s.ops[i];
    int64_t own = 0;
    if (o.kind == OpKind::Gemm)
      own = (o.c < 0 ? R.c.bytes : 0) + R.snap.bytes;
    else if (o.is_membound())
      own = R.z.bytes;
    else
      own = o.recv < 0 ? R.recv.bytes : 0;
    if (own > most) {
      most = own;
      where = o.pos;
      what = "the output of op '" + o.id + "'" +
             (o.kind == OpKind::Gemm && check ? " with its snapshot" : "");
    }
  }
  std::string parts;
  for (const auto& [c, b] : L.breakdown) parts += (parts.empty() ? "" : ", ") + c + " " + human(b);
  throw StepError(s.file, where,
                  "the step needs " + human(L.total) + " of device memory per GPU (" + parts +
                      "), more than the " + human(std::max<int64_t>(limit, 0)) + " a " +
                      human(gpu_memory) + " GPU leaves after " + human(kStepMemoryReserve) +
                      " for CUDA, NCCL and cuBLASLt; its largest part is " + what + " (" +
                      human(most) + ")" + (check ? "; -c 0 needs no snapshots" : ""));
}

// ---- times ------------------------------------------------------------------------------------

std::vector<double> schedule_finish(const Step& s, const std::vector<double>& times) {
  if (times.size() != s.ops.size())
    throw Error("schedule_finish: " + std::to_string(times.size()) + " times for " +
                std::to_string(s.ops.size()) + " ops");
  std::vector<double> fin(s.ops.size(), 0.0);
  for (int v : s.order) {
    const auto i = static_cast<std::size_t>(v);
    if (!(times[i] >= 0))
      throw Error("schedule_finish: op '" + s.ops[i].id + "' has a negative time");
    double start = 0;
    for (int d : s.ops[i].after) start = std::max(start, fin[static_cast<std::size_t>(d)]);
    if (s.stream_prev[i] >= 0)
      start = std::max(start, fin[static_cast<std::size_t>(s.stream_prev[i])]);
    fin[i] = start + times[i];
  }
  return fin;
}

double ideal_time(const Step& s, const std::vector<double>& times) {
  const auto fin = schedule_finish(s, times);
  double t = 0;
  for (double f : fin) t = std::max(t, f);
  return t;
}

double compute_time(const Step& s, const std::vector<double>& times) {
  if (times.size() != s.ops.size()) throw Error("compute_time: one time per op expected");
  double t = 0;
  for (std::size_t i = 0; i < s.ops.size(); ++i)
    if (s.ops[i].is_compute()) t += times[i];
  return t;
}

double comm_time(const Step& s, const std::vector<double>& times) {
  if (times.size() != s.ops.size()) throw Error("comm_time: one time per op expected");
  double t = 0;
  for (std::size_t i = 0; i < s.ops.size(); ++i)
    if (!s.ops[i].is_compute()) t += times[i];
  return t;
}

// ---- reports ----------------------------------------------------------------------------------

nlohmann::json to_json(const Step& s) {
  nlohmann::json j;
  j["name"] = s.name;
  j["file"] = s.file;
  j["schema_version"] = s.schema_version;
  j["ranks"] = s.nranks;
  nlohmann::json params = nlohmann::json::object();
  for (const auto& p : s.params) {
    if (p.is_string)
      params[p.name] = p.text;
    else
      params[p.name] = p.value;
  }
  j["parameters"] = params;
  j["buffers"] = nlohmann::json::array();
  for (const auto& b : s.buffers)
    j["buffers"].push_back({{"name", b.name},
                            {"dtype", to_string(b.dtype)},
                            {"elements", b.elements},
                            {"fill", b.fill == BufferFill::Random    ? "random"
                                     : b.fill == BufferFill::Pattern ? "pattern"
                                                                     : "output"}});
  auto bufname = [&](int i) {
    return i < 0 ? nlohmann::json(nullptr)
                 : nlohmann::json(s.buffers[static_cast<std::size_t>(i)].name);
  };
  j["ops"] = nlohmann::json::array();
  for (const auto& o : s.ops) {
    nlohmann::json x = {
        {"id", o.id},
        {"kind", o.kind == OpKind::Collective ? to_string(o.coll) : to_string(o.kind)},
        {"stream", to_string(o.stream)}};
    nlohmann::json after = nlohmann::json::array();
    for (int d : o.after) after.push_back(s.ops[static_cast<std::size_t>(d)].id);
    x["after"] = after;
    if (o.kind == OpKind::Gemm) {
      x["m"] = o.m;
      x["n"] = o.n;
      x["k"] = o.k;
      x["dtype"] = to_string(o.dtype);
      x["engine"] = to_string(o.engine);
      x["a"] = bufname(o.a);
      x["b"] = bufname(o.b);
      x["c"] = bufname(o.c);
    } else if (o.is_membound()) {
      x["bytes"] = o.bytes;
    } else {
      x["bytes"] = o.bytes;
      x["dtype"] = to_string(o.dtype);
      x["op"] = to_string(o.redop);
      x["send"] = bufname(o.send);
      x["recv"] = bufname(o.recv);
    }
    if (!o.description.empty()) x["description"] = o.description;
    j["ops"].push_back(x);
  }
  j["order"] = nlohmann::json::array();
  for (int v : s.order) j["order"].push_back(s.ops[static_cast<std::size_t>(v)].id);
  return j;
}

std::string validation_summary(const Step& s, bool check) {
  std::ostringstream out;
  out << "workload " << s.name << " (" << s.file << ", schema " << s.schema_version << ") for "
      << s.nranks << " rank" << (s.nranks == 1 ? "" : "s") << "\n";
  if (!s.description.empty()) out << "  " << s.description << "\n";
  out << "parameters:";
  for (const auto& p : s.params)
    out << " " << p.name << "=" << p.value_text() << (p.overridden ? "*" : "");
  out << (std::any_of(s.params.begin(), s.params.end(),
                      [](const StepParam& p) { return p.overridden; })
              ? "  (* set by --param)"
              : "")
      << "\n";
  std::map<std::string, int> kinds;
  int per_stream[2] = {0, 0};
  double flops = 0, mem = 0, comm = 0;
  for (const auto& o : s.ops) {
    ++kinds[o.kind == OpKind::Collective ? to_string(o.coll) : to_string(o.kind)];
    ++per_stream[static_cast<int>(o.stream)];
    flops += o.flops();
    if (o.is_membound()) mem += o.traffic();
    if (o.kind == OpKind::Collective) comm += static_cast<double>(o.bytes);
  }
  out << "ops: " << s.ops.size() << " (";
  bool first = true;
  for (const auto& [k, c] : kinds) {
    out << (first ? "" : ", ") << k << " " << c;
    first = false;
  }
  out << "); " << per_stream[0] << " on stream compute, " << per_stream[1] << " on stream comm\n";
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "work: %.3f TFLOP in GEMMs, %.3f GB memory-bound traffic, %.3f GB in collectives\n",
                flops / 1e12, mem / 1e9, comm / 1e9);
  out << buf;
  const auto L = layout_step(s, check);
  out << "memory per GPU: " << human(L.total) << " (";
  first = true;
  for (const auto& [c, b] : L.breakdown) {
    out << (first ? "" : ", ") << c << " " << human(b);
    first = false;
  }
  out << ")\n";
  out << "issue order:";
  const std::size_t show = std::min<std::size_t>(s.order.size(), 12);
  for (std::size_t i = 0; i < show; ++i)
    out << " " << s.ops[static_cast<std::size_t>(s.order[i])].id;
  if (s.order.size() > show) out << " ... (" << s.order.size() - show << " more)";
  out << "\n";
  return out.str();
}

// ---- arguments --------------------------------------------------------------------------------

StepLoadOptions StepArgs::load_options() const {
  StepLoadOptions o;
  o.nranks = ngpus > 0 ? ngpus : 2;
  o.overrides = params;
  o.gpu_memory = gpu_memory;
  o.check = check;
  return o;
}

StepArgs split_step_args(const std::vector<std::string>& args) {
  StepArgs a;
  if (!args.empty()) a.rest.push_back(args[0]);
  bool any_step_flag = false;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& x = args[i];
    auto value = [&](const std::string& flag) -> std::string {
      if (x.size() > flag.size() && x.compare(0, flag.size() + 1, flag + "=") == 0)
        return x.substr(flag.size() + 1);
      if (i + 1 >= args.size()) throw Error(flag + " needs a value");
      return args[++i];
    };
    auto is = [&](const std::string& flag) { return x == flag || x.rfind(flag + "=", 0) == 0; };
    if (is("--workload")) {
      a.workload = value("--workload");
      if (a.workload.empty()) throw Error("--workload needs a file");
    } else if (x == "--validate") {
      a.validate = any_step_flag = true;
    } else if (is("--param")) {
      a.params.push_back(parse_override(value("--param")));
      any_step_flag = true;
    } else if (is("--gpu-memory")) {
      const std::string v = value("--gpu-memory");
      try {
        a.gpu_memory = parse_bytes(v);
      } catch (const Error& e) {
        throw Error("--gpu-memory: " + std::string(e.what()));
      }
      if (a.gpu_memory <= 0) throw Error("--gpu-memory: must be positive");
      any_step_flag = true;
    } else {
      a.rest.push_back(x);
      // Read -g and -c (kept in `rest` for the bench's own parser).
      auto read_int = [&](const std::string& short_f, const std::string& long_f, int* out) {
        std::string v;
        if (x == short_f || x == long_f) {
          if (i + 1 >= args.size()) return;
          v = args[i + 1];
        } else if (x.rfind(long_f + "=", 0) == 0) {
          v = x.substr(long_f.size() + 1);
        } else if (x.size() > 2 && x.rfind(short_f, 0) == 0 &&
                   std::isdigit(static_cast<unsigned char>(x[2]))) {
          v = x.substr(2);
        } else {
          return;
        }
        int val = 0;
        const auto r = std::from_chars(v.data(), v.data() + v.size(), val);
        if (r.ec == std::errc() && r.ptr == v.data() + v.size()) *out = val;
      };
      int c = a.check ? 1 : 0;
      read_int("-g", "--ngpus", &a.ngpus);
      read_int("-c", "--check", &c);
      a.check = c != 0;
    }
  }
  if (any_step_flag && a.workload.empty())
    throw Error("--validate, --param and --gpu-memory go with --workload FILE");
  return a;
}

}  // namespace cco::model
