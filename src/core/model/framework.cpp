#include "model/framework.hpp"

#include <cstdlib>

#include "model/ascii.hpp"
#include "model/limits.hpp"

namespace cco::model {

const char* target_name(FrameworkTarget t) { return t == FrameworkTarget::Ddp ? "ddp" : "fsdp"; }

const char* target_module(FrameworkTarget t) {
  return t == FrameworkTarget::Ddp ? "DistributedDataParallel" : "fully_shard";
}

const char* target_use(FrameworkTarget t) {
  return t == FrameworkTarget::Ddp ? "built a DistributedDataParallel" : "called fully_shard";
}

namespace {

std::string known_names() {
  std::string out;
  for (const auto& r : kFrameworkControls) out += (out.empty() ? "" : ", ") + std::string(r.name);
  return out;
}

// How an error names the item: "--framework 'ITEM': " (`what` the flag), "'ITEM': " without one.
std::string lead(std::string_view what, const std::string& item) {
  return (what.empty() ? "" : std::string(what) + " ") + "'" + item + "': ";
}

std::string switch_literal(std::string_view what, const std::string& item, std::string_view v) {
  const std::string s = ascii_lower(v);
  if (s == "on" || s == "true" || s == "1") return "True";
  if (s == "off" || s == "false" || s == "0") return "False";
  throw Error(lead(what, item) + "'" + std::string(v) + "' is not on or off");
}

// Digits with at most one '.' between digits: the literal passes to Python as written.
std::string number_literal(std::string_view what, const std::string& item, std::string_view v,
                           const FrameworkRow& r) {
  bool dot = false, ok = !v.empty() && v.front() != '.' && v.back() != '.';
  for (char c : v) {
    if (c == '.' && !dot) dot = true;
    else if (c < '0' || c > '9') ok = false;
  }
  const double x = ok ? std::strtod(std::string(v).c_str(), nullptr) : 0;
  if (!ok || !(x > 0) || x > 1e6)
    throw Error(lead(what, item) + "'" + std::string(v) + "' is not a size in " +
                r.unit + " (a number above 0, at most 1000000, like 100 or 12.5)");
  return std::string(v);
}

}  // namespace

FrameworkSettings parse_framework(std::string_view spec, std::string_view what) {
  FrameworkSettings out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = spec.find(',', start);
    const std::string item(spec.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (item.empty()) throw Error(lead(what, std::string(spec)) + "an empty item");
    const std::size_t eq = item.find('=');
    const std::string name = ascii_lower(item.substr(0, eq));
    std::size_t row = kFrameworkControls.size();
    for (std::size_t i = 0; i < kFrameworkControls.size(); ++i)
      if (name == kFrameworkControls[i].name) row = i;
    if (row == kFrameworkControls.size())
      throw Error(lead(what, item) + "unknown control (known: " + known_names() + ")");
    const FrameworkRow& r = kFrameworkControls[row];
    for (const auto& s : out)
      if (s.row == row)
        throw Error((what.empty() ? "" : std::string(what) + ": ") + name + " is named twice");
    FrameworkSetting s;
    s.row = row;
    if (eq == std::string::npos) {
      if (!r.bare)
        throw Error(lead(what, item) + "needs a value (" + name +
                    (r.kind == FrameworkValue::Switch ? "=on or =off)" : "=SIZE in " +
                                                                              std::string(r.unit) + ")"));
      s.value = r.kind == FrameworkValue::Switch ? switch_literal(what, item, r.bare) : r.bare;
    } else {
      const std::string_view v = std::string_view(item).substr(eq + 1);
      s.value = r.kind == FrameworkValue::Switch ? switch_literal(what, item, v)
                                                 : number_literal(what, item, v, r);
    }
    out.push_back(s);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string framework_text(const FrameworkSettings& s) {
  std::string out;
  for (const auto& x : s) {
    const std::string v = x.control().kind == FrameworkValue::Switch
                              ? (x.value == "True" ? "on" : "off")
                              : x.value;
    if (!out.empty()) out += ',';
    out.append(x.control().name).append("=").append(v);
  }
  return out;
}

std::string framework_env(const FrameworkSettings& s) {
  std::string out;
  for (const auto& x : s) {
    if (!out.empty()) out += ';';
    out.append(x.control().name).append(":").append(target_name(x.control().target)).append(":");
    out.append(x.control().keyword).append(":").append(x.value);
  }
  return out;
}

std::vector<std::string> framework_rounding(const FrameworkSettings& s) {
  std::vector<std::string> out;
  for (const auto& x : s)
    if (*x.control().rounding) out.push_back(std::string(x.control().name) + ": " + x.control().rounding);
  return out;
}

}  // namespace cco::model
