// Two step or two tune results row by row (compare.hpp): rows matched by label, each side's time
// and spread, B/A and the verdict from the interquartile ranges, E on both sides.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <map>

#include "model/occupancy.hpp"
#include "model/schema.hpp"
#include "report/compare.hpp"
#include "report/results.hpp"
#include "report/svg.hpp"

namespace cco::report {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string num(double v, int prec) {
  return std::isfinite(v) ? fmt::format("{:.{}f}", v, prec) : std::string("n/a");
}
std::string csv_num(double v) {
  return std::isfinite(v) ? fmt::format("{:.6g}", v) : std::string();
}
nlohmann::json val(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}
double field(const SweepRow* r, double SweepRow::*f) {
  return r ? r->*f : kNaN;
}
double spread_of(const SweepRow* r) {
  return r ? row_spread(*r) : kNaN;
}
std::string verdict_text(const ComparedRow& r) {
  return r.a && r.b ? r.verdict() : (r.a ? "only A" : "only B");
}
bool any_e_best(const BenchSweep& s) {
  for (const auto& r : s.rows)
    if (std::isfinite(r.efficiency_best)) return true;
  return false;
}
std::string side_line(const BenchSweep& s) {
  return fmt::format("{} ({} result: {}; {}, {}, {})", s.source, kind_name(s.kind),
                     s.device.empty() ? "?" : s.device, s.workload, ranks_text(s.nranks), s.date);
}

std::string compare_csv(const std::vector<ComparedRow>& rows) {
  std::string o =
      "label,t_a_us,spread_a,t_b_us,spread_b,ratio,verdict,reduction_a,reduction_b,"
      "efficiency_a,efficiency_b,efficiency_best_a,efficiency_best_b,wrong_a,wrong_b\n";
  auto wrong = [](const SweepRow* r) {
    return r && r->wrong >= 0 ? std::to_string(r->wrong) : std::string();
  };
  for (const auto& r : rows) {
    const std::string label = csv_field(r.label);
    o += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", label,
                     csv_num(field(r.a, &SweepRow::t_us)), csv_num(spread_of(r.a)),
                     csv_num(field(r.b, &SweepRow::t_us)), csv_num(spread_of(r.b)),
                     csv_num(r.ratio()), r.verdict(), csv_num(field(r.a, &SweepRow::reduction)),
                     csv_num(field(r.b, &SweepRow::reduction)),
                     csv_num(field(r.a, &SweepRow::efficiency)),
                     csv_num(field(r.b, &SweepRow::efficiency)),
                     csv_num(field(r.a, &SweepRow::efficiency_best)),
                     csv_num(field(r.b, &SweepRow::efficiency_best)), wrong(r.a), wrong(r.b));
  }
  return o;
}

std::string compare_markdown(const BenchSweep& a, const BenchSweep& b,
                             const std::vector<ComparedRow>& rows, bool e_best) {
  std::string o = fmt::format("A: `{}` ({} result: {}, {}); B: `{}` ({}, {})\n\n", a.source,
                              kind_name(a.kind), a.device, ranks_text(a.nranks), b.source,
                              b.device, ranks_text(b.nranks));
  for (const auto& c : compare_caveats(a, b)) o += "- caveat: " + c + "\n";
  o += "\n| row | A (us) | spread A | B (us) | spread B | B/A | verdict | E A | E B |";
  o += e_best ? " E_best A | E_best B |\n" : "\n";
  o += e_best ? "|---|---|---|---|---|---|---|---|---|---|---|\n" : "|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    o += fmt::format("| {} | {} | {}% | {} | {}% | {} | {} | {} | {} |", r.label,
                     num(field(r.a, &SweepRow::t_us), 1), num(100 * spread_of(r.a), 1),
                     num(field(r.b, &SweepRow::t_us), 1), num(100 * spread_of(r.b), 1),
                     num(r.ratio(), 3), verdict_text(r), num(field(r.a, &SweepRow::efficiency), 2),
                     num(field(r.b, &SweepRow::efficiency), 2));
    o += e_best ? fmt::format(" {} | {} |\n", num(field(r.a, &SweepRow::efficiency_best), 2),
                              num(field(r.b, &SweepRow::efficiency_best), 2))
                : "\n";
  }
  return o;
}

std::string compare_text(const BenchSweep& a, const BenchSweep& b,
                         const std::vector<ComparedRow>& rows, bool e_best) {
  std::string o = "# A: " + side_line(a) + "\n# B: " + side_line(b) + "\n";
  for (const auto& c : compare_caveats(a, b)) o += "# caveat: " + c + "\n";
  o += "# B/A < 1: B faster. spread = interquartile range / median of each run; faster/slower only "
       "where the two ranges do not overlap, ~ otherwise; E = (T_seq - T) / min(T_comp, T_comm)\n";
  o += fmt::format("# {:<32} {:>9} {:>6} {:>9} {:>6} {:>6} {:>7} {:>6} {:>6}", "row", "A (us)",
                   "spread", "B (us)", "spread", "B/A", "", "E A", "E B");
  o += e_best ? fmt::format(" {:>6} {:>6}\n", "E_b A", "E_b B") : "\n";
  for (const auto& r : rows) {
    o += fmt::format("  {:<32} {:>9} {:>5}% {:>9} {:>5}% {:>6} {:>7} {:>6} {:>6}", r.label,
                     num(field(r.a, &SweepRow::t_us), 1), num(100 * spread_of(r.a), 1),
                     num(field(r.b, &SweepRow::t_us), 1), num(100 * spread_of(r.b), 1),
                     num(r.ratio(), 3), verdict_text(r), num(field(r.a, &SweepRow::efficiency), 2),
                     num(field(r.b, &SweepRow::efficiency), 2));
    o += e_best ? fmt::format(" {:>6} {:>6}\n", num(field(r.a, &SweepRow::efficiency_best), 2),
                              num(field(r.b, &SweepRow::efficiency_best), 2))
                : "\n";
  }
  return o;
}

}  // namespace

std::vector<std::string> result_caveats(const BenchSweep& a, const BenchSweep& b) {
  std::vector<std::string> c;
  if (a.kind != b.kind)
    c.push_back(fmt::format("the kind differs: {} in A, {} in B", kind_name(a.kind), kind_name(b.kind)));
  if (a.workload != b.workload)
    c.push_back(fmt::format("the workload differs: '{}' in A, '{}' in B", a.workload, b.workload));
  std::map<std::string, std::pair<std::string, std::string>> params;
  for (const auto& [k, v] : a.params) params[k] = {v, "-"};
  for (const auto& [k, v] : b.params) {
    auto it = params.find(k);
    if (it == params.end()) params[k] = {"-", v};
    else it->second.second = v;
  }
  for (const auto& [k, v] : params)
    if (v.first != v.second)
      c.push_back(fmt::format("parameter {} differs: '{}' in A, '{}' in B", k, v.first, v.second));
  if (a.device != b.device)
    c.push_back(fmt::format("the device differs: '{}' in A, '{}' in B", a.device, b.device));
  if (a.nranks != b.nranks)
    c.push_back(fmt::format("ranks differ: {} in A, {} in B", a.nranks, b.nranks));
  for (const auto* s : {&a, &b})
    for (const auto& r : s->rows)
      if (r.wrong > 0)
        c.push_back(fmt::format("wrong results in {}: '{}' ({} elements)", s == &a ? "A" : "B",
                                r.label, r.wrong));
  return c;
}

std::string format_result_compare(const BenchSweep& a, const BenchSweep& b, TableFormat f) {
  const auto rows = compare_rows(a, b);
  const bool e_best = any_e_best(a) || any_e_best(b);
  if (f == TableFormat::Csv) return compare_csv(rows);
  if (f == TableFormat::Markdown) return compare_markdown(a, b, rows, e_best);
  return compare_text(a, b, rows, e_best);
}

nlohmann::json result_compare_json(const BenchSweep& a, const BenchSweep& b) {
  nlohmann::json j = {{"kind", kind_name(a.kind)},
                      {"a", a.source},
                      {"b", b.source},
                      {"caveats", compare_caveats(a, b)}};
  model::stamp_schema(j, model::kCompareSchema);
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : compare_rows(a, b)) {
    auto side = [](const SweepRow* s) -> nlohmann::json {
      if (!s) return nullptr;
      return {{"t_us", s->t_us},
              {"p25_us", val(s->t_p25_us)},
              {"p75_us", val(s->t_p75_us)},
              {"spread", val(row_spread(*s))},
              {"reduction", val(s->reduction)},
              {"efficiency", val(s->efficiency)},
              {"efficiency_best", val(s->efficiency_best)},
              {"of_ideal", val(s->of_ideal)},
              {"wrong", s->wrong < 0 ? nlohmann::json() : nlohmann::json(s->wrong)}};
    };
    rows.push_back({{"label", r.label},
                    {"a", side(r.a)},
                    {"b", side(r.b)},
                    {"ratio", val(r.ratio())},
                    {"verdict", r.verdict()}});
  }
  j["rows"] = rows;
  return j;
}

std::string compare_results_svg(const BenchSweep& a, const BenchSweep& b, const std::string& title) {
  const std::vector<ComparedRow> all = compare_rows(a, b);
  std::vector<const ComparedRow*> rows;
  std::size_t one_side = 0;
  for (const auto& r : all) {
    if (r.a && r.b && std::isfinite(r.a->t_us) && r.a->t_us > 0) rows.push_back(&r);
    else ++one_side;
  }
  const double row_h = 30, top = 78, left = 260, pw = 480, right = 120;
  const double ph = std::max(1.0, static_cast<double>(rows.size())) * row_h + 10;
  Svg svg(left + pw + right, top + ph + 70);
  svg.text(16, 22, title, 15, "start", "#222", "bold");
  svg.text(16, 42, fmt::format("A: {}", side_line(a)), 11, "start", "#333");
  svg.text(16, 58, fmt::format("B: {}", side_line(b)), 11, "start", "#333");
  if (rows.empty()) {
    svg.text(16, top, "no row both results have a time for: nothing to draw", 12, "start", "#a00");
    return svg.str();
  }
  // Percent of A's median: A's bar around 0, B's median and bar; the axis holds them all and 0.
  auto pct = [](const ComparedRow& r, double v) { return 100.0 * (v / r.a->t_us - 1.0); };
  double lo = 0, hi = 0;
  for (const auto* r : rows)
    for (double v : {r->a->t_p25_us, r->a->t_p75_us, r->b->t_us, r->b->t_p25_us, r->b->t_p75_us})
      if (std::isfinite(v) && v > 0 && std::isfinite(pct(*r, v)))
        lo = std::min(lo, pct(*r, v)), hi = std::max(hi, pct(*r, v));
  const DiffAxis axis = draw_diff_axis(svg, left, top, pw, ph, lo, hi, 0.5, "%");
  auto px = [&](double v) { return axis.px(v); };
  svg.text(left + pw / 2, top + ph + 36,
           "B's time against A's median (grey: A's p25..p75; left of 0 is faster)", 12, "middle", "#222");
  if (one_side > 0)
    svg.text(left + pw / 2, top + ph + 54, fmt::format("{} row(s) only one result has: not drawn", one_side),
             11, "middle", "#a00");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const ComparedRow& r = *rows[i];
    const double y = top + 5 + row_h * (static_cast<double>(i) + 0.5);
    const std::string v = r.verdict();
    const char* colour = v == "faster" ? "#2a7f3f" : v == "slower" ? "#b23030" : "#4c78a8";
    std::string name = r.bytes > 0 ? fmt::format("{} {}", r.label, model::format_bytes(r.bytes)) : r.label;
    if (name.size() > 38) name = name.substr(0, 37) + "~";
    svg.text(left - 8, y + 4, name, 11, "end", "#222");
    const std::string tip = fmt::format("{}: A {} us [{}, {}], B {} us [{}, {}], B/A {}, {}", r.label,
                                        num(r.a->t_us, 2), num(r.a->t_p25_us, 2), num(r.a->t_p75_us, 2),
                                        num(r.b->t_us, 2), num(r.b->t_p25_us, 2), num(r.b->t_p75_us, 2),
                                        num(r.ratio(), 4), v == "~" ? "within noise" : v);
    // A bar only where both its ends are times (a tune row may have no quartiles).
    const auto bar = [&](double p25, double p75, double at, const char* fill) {
      if (std::isfinite(p25) && std::isfinite(p75) && p25 > 0 && p75 > 0)
        svg.rect(px(pct(r, p25)), at, std::max(1.0, px(pct(r, p75)) - px(pct(r, p25))), 4, fill_style(fill), tip);
    };
    bar(r.a->t_p25_us, r.a->t_p75_us, y - 7, "#bbbbbb");
    bar(r.b->t_p25_us, r.b->t_p75_us, y + 1, colour);
    if (std::isfinite(r.b->t_us) && r.b->t_us > 0)
      svg.circle(px(pct(r, r.b->t_us)), y + 3, 4.5, box_style("#fff", colour, 2), tip);
    svg.text(left + pw + 6, y + 4, v == "~" ? "within noise" : v, 11, "start", "#333");
  }
  return svg.str();
}

}  // namespace cco::report
