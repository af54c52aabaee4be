// A step for people and programs: its JSON form and the --validate summary.
#include "workload/workload.hpp"

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

#include "workload/detail.hpp"

namespace cco::workload {

using namespace cco::model;
using detail::human;

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

}  // namespace cco::workload
