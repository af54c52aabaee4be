// "${...}" integer expressions of workload files: + - * / % and parentheses, parameters and
// repeat variables, "ranks", min/max/ceil_div/round_up; strings only as whole values. Internal to
// src/core/workload/.
#pragma once

#include <charconv>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "workload/detail.hpp"

namespace cco::workload::detail {

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
  // Nesting of parentheses, calls and unary operators, bounded like the JSON reader's: the
  // evaluator recurses once per level, so 6000 '(' would overflow the stack (found by review).
  static constexpr int kMaxNesting = 200;
  int nesting_ = 0;
  struct Nest {
    ExprEval& e;
    Nest(ExprEval& ev, std::size_t at) : e(ev) {
      if (++e.nesting_ > kMaxNesting) e.error(at, "nesting deeper than 200 levels");
    }
    ~Nest() { --e.nesting_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;
  };

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
    const Nest nest(*this, at);
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
    const Nest nest(*this, at);
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

}  // namespace cco::workload::detail
