#include "workload/expr.hpp"

namespace cco::workload::detail {

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

}  // namespace cco::workload::detail
