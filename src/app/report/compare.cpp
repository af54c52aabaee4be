#include "report/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "model/json_number.hpp"
#include "model/limits.hpp"
#include "model/schema.hpp"
#include "model/occupancy.hpp"

namespace cco::report {
namespace {

std::string num(double v, int prec) {
  return std::isnan(v) ? std::string("n/a") : fmt::format("{:.{}f}", v, prec);
}
double spread(const SweepRow* r) {
  return r && r->t_us > 0 ? (r->t_p75_us - r->t_p25_us) / r->t_us : std::nan("");
}

}  // namespace

double ComparedRow::ratio() const {
  return a && b && a->t_us > 0 ? b->t_us / a->t_us : std::nan("");
}

std::string ComparedRow::verdict() const {
  if (!a || !b) return {};
  if (b->t_p75_us < a->t_p25_us) return "faster";
  if (b->t_p25_us > a->t_p75_us) return "slower";
  return "~";
}

std::vector<ComparedRow> compare_rows(const BenchSweep& a, const BenchSweep& b) {
  if (a.kind != b.kind)
    throw model::Error(fmt::format("{} is a {} result and {} a {} result: compare two of one kind",
                                   a.source, kind_name(a.kind), b.source, kind_name(b.kind)));
  std::vector<ComparedRow> out;
  std::vector<bool> used(b.rows.size(), false);
  bool shared = false;
  for (const auto& ra : a.rows) {
    ComparedRow c{ra.bytes, ra.label, &ra, nullptr};
    for (std::size_t i = 0; i < b.rows.size(); ++i)
      if (!used[i] && b.rows[i].bytes == ra.bytes && b.rows[i].label == ra.label) {
        c.b = &b.rows[i];
        used[i] = true;
        shared = true;
        break;
      }
    out.push_back(c);
  }
  for (std::size_t i = 0; i < b.rows.size(); ++i)
    if (!used[i]) out.push_back({b.rows[i].bytes, b.rows[i].label, nullptr, &b.rows[i]});
  if (!shared)
    throw model::Error(a.source + " and " + b.source +
                       (a.kind == ResultKind::Bench ? " share no row (same size and row label)"
                                                    : " share no row (same row label)") +
                       ": nothing to compare");
  return out;
}

std::vector<std::string> compare_caveats(const BenchSweep& a, const BenchSweep& b) {
  if (a.kind != ResultKind::Bench || b.kind != ResultKind::Bench) return result_caveats(a, b);
  std::vector<std::string> c;
  auto differ = [&](const char* what, const std::string& x, const std::string& y) {
    if (x != y) c.push_back(fmt::format("{} differs: '{}' in A, '{}' in B", what, x, y));
  };
  differ("the compute part", a.compute, b.compute);
  differ("the collective", a.collective, b.collective);
  differ("the data type", a.datatype, b.datatype);
  differ("the device", a.device, b.device);
  if (a.nranks != b.nranks) c.push_back(fmt::format("ranks differ: {} in A, {} in B", a.nranks, b.nranks));
  return c;
}

std::string format_compare(const BenchSweep& a, const BenchSweep& b, TableFormat fmt_) {
  if (a.kind != ResultKind::Bench || b.kind != ResultKind::Bench)
    return format_result_compare(a, b, fmt_);
  const auto rows = compare_rows(a, b);
  std::string o;
  if (fmt_ == TableFormat::Markdown) {
    o += fmt::format("A: `{}` ({}, {} ranks); B: `{}` ({}, {} ranks)\n\n", a.source, a.device,
                     a.nranks, b.source, b.device, b.nranks);
    for (const auto& c : compare_caveats(a, b)) o += "- caveat: " + c + "\n";
    o += "\n| size | row | A (us) | spread A | B (us) | spread B | B/A | verdict | E_best A | E_best B |\n";
    o += "|---|---|---|---|---|---|---|---|---|---|\n";
    const double na = std::nan("");
    for (const auto& r : rows)
      o += fmt::format("| {} | {} | {} | {}% | {} | {}% | {} | {} | {} | {} |\n",
                       model::format_bytes(r.bytes), r.label, num(r.a ? r.a->t_us : na, 1),
                       num(100 * spread(r.a), 1), num(r.b ? r.b->t_us : na, 1),
                       num(100 * spread(r.b), 1), num(r.ratio(), 3),
                       r.a && r.b ? r.verdict() : (r.a ? "only A" : "only B"),
                       num(r.a ? r.a->efficiency_best : na, 2),
                       num(r.b ? r.b->efficiency_best : na, 2));
    return o;
  }
  if (fmt_ == TableFormat::Csv) {
    o = "size_bytes,label,t_a_us,spread_a,t_b_us,spread_b,ratio,verdict,reduction_a,reduction_b,"
        "efficiency_a,efficiency_b,efficiency_best_a,efficiency_best_b\n";
    auto f = [](double v) { return std::isnan(v) ? std::string() : fmt::format("{:.6g}", v); };
    for (const auto& r : rows) {
      const double na = std::nan("");
      o += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.bytes, r.label,
                       f(r.a ? r.a->t_us : na), f(spread(r.a)), f(r.b ? r.b->t_us : na),
                       f(spread(r.b)), f(r.ratio()), r.verdict(), f(r.a ? r.a->reduction : na),
                       f(r.b ? r.b->reduction : na), f(r.a ? r.a->efficiency : na),
                       f(r.b ? r.b->efficiency : na), f(r.a ? r.a->efficiency_best : na),
                       f(r.b ? r.b->efficiency_best : na));
    }
    return o;
  }
  o += fmt::format("# A: {} ({}; {} || {} {}, {} ranks, {})\n", a.source, a.device, a.compute,
                   a.collective, a.datatype, a.nranks, a.date);
  o += fmt::format("# B: {} ({}; {} || {} {}, {} ranks, {})\n", b.source, b.device, b.compute,
                   b.collective, b.datatype, b.nranks, b.date);
  for (const auto& c : compare_caveats(a, b)) o += "# caveat: " + c + "\n";
  o += "# B/A < 1: B faster. spread = interquartile range / median of each run; faster/slower only "
       "where the two ranges do not overlap, ~ otherwise\n";
  o += fmt::format("#{:>11} {:<34} {:>9} {:>6} {:>9} {:>6} {:>6} {:>7} {:>7} {:>7} {:>6} {:>6}\n",
                   "size", "row", "A (us)", "spread", "B (us)", "spread", "B/A", "", "reduct A",
                   "reduct B", "E_b A", "E_b B");
  for (const auto& r : rows) {
    const double na = std::nan("");
    o += fmt::format(" {:>11} {:<34} {:>9} {:>5}% {:>9} {:>5}% {:>6} {:>7} {:>7}% {:>7}% {:>6} {:>6}\n",
                     model::format_bytes(r.bytes), r.label, num(r.a ? r.a->t_us : na, 1),
                     num(100 * spread(r.a), 1), num(r.b ? r.b->t_us : na, 1),
                     num(100 * spread(r.b), 1), num(r.ratio(), 3),
                     r.a && r.b ? r.verdict() : (r.a ? "only A" : "only B"),
                     num(100 * (r.a ? r.a->reduction : na), 1),
                     num(100 * (r.b ? r.b->reduction : na), 1),
                     num(r.a ? r.a->efficiency_best : na, 2), num(r.b ? r.b->efficiency_best : na, 2));
  }
  return o;
}

nlohmann::json compare_json(const BenchSweep& a, const BenchSweep& b) {
  if (a.kind != ResultKind::Bench || b.kind != ResultKind::Bench) return result_compare_json(a, b);
  nlohmann::json j;
  model::stamp_schema(j, model::kCompareSchema);
  j["a"] = a.source;
  j["b"] = b.source;
  j["caveats"] = compare_caveats(a, b);
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : compare_rows(a, b)) {
    auto side = [](const SweepRow* s) -> nlohmann::json {
      if (!s) return nullptr;
      return {{"t_us", s->t_us},          {"p25_us", s->t_p25_us},
              {"p75_us", s->t_p75_us},    {"reduction", model::number_or_null(s->reduction)},
              {"efficiency", model::number_or_null(s->efficiency)}, {"efficiency_best", model::number_or_null(s->efficiency_best)}};
    };
    rows.push_back({{"size_bytes", r.bytes},
                    {"label", r.label},
                    {"a", side(r.a)},
                    {"b", side(r.b)},
                    {"ratio", model::number_or_null(r.ratio())},
                    {"verdict", r.verdict()}});
  }
  j["rows"] = rows;
  return j;
}

TypedCompare compare_by_dtype(const std::vector<std::pair<std::string, BenchSweep>>& ga,
                              const std::vector<std::pair<std::string, BenchSweep>>& gb,
                              TableFormat f) {
  using nlohmann::json;
  std::string text;
  json rows = json::array(), caveats = json::array(), only_a = json::array(), only_b = json::array();
  auto find = [](const auto& g, const std::string& t) {
    return std::find_if(g.begin(), g.end(), [&](const auto& x) { return x.first == t; });
  };
  for (const auto& [t, sa] : ga) {
    const auto b = find(gb, t);
    if (b == gb.end()) {
      only_a.push_back(t);
      continue;
    }
    const BenchSweep& sb = b->second;
    text += typed_table(format_compare(sa, sb, f), f, t, rows.empty());
    const json cj = compare_json(sa, sb);
    for (auto r : cj["rows"]) {
      r["dtype"] = t;
      rows.push_back(std::move(r));
    }
    for (const auto& c : compare_caveats(sa, sb))
      if (std::find(caveats.begin(), caveats.end(), c) == caveats.end()) caveats.push_back(c);
  }
  for (const auto& [t, sb] : gb)
    if (find(ga, t) == ga.end()) only_b.push_back(t);
  const std::string fa = ga.empty() ? std::string() : ga.front().second.source;
  const std::string fb = gb.empty() ? std::string() : gb.front().second.source;
  if (rows.empty())
    throw model::Error(fa + " and " + fb + " share no collective data type: nothing to compare");
  std::string only;
  const char* mark = f == TableFormat::Markdown ? "- " : "# ";
  for (const auto& t : only_a)
    only += mark + ("data type " + t.get<std::string>() + ": only in A, not compared\n");
  for (const auto& t : only_b)
    only += mark + ("data type " + t.get<std::string>() + ": only in B, not compared\n");
  json j = {{"a", fa},           {"b", fb},           {"caveats", caveats},
            {"only_in_a", only_a}, {"only_in_b", only_b}, {"rows", rows}};
  model::stamp_schema(j, model::kCompareSchema);
  return {(f == TableFormat::Csv ? std::string() : only) + text, std::move(j)};
}

}  // namespace cco::report
