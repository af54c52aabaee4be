// The chart of a step or tune result (results.hpp): one line per row, its median time as a bar
// with the p25..p75 whisker, T_seq and T_ideal as vertical references, E per row as text.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "report/results.hpp"

namespace cco::report {
namespace {

// The colours of the sweep chart (sweep.cpp), by mode.
const char* mode_colour(const std::string& mode) {
  if (mode == "seq") return "#7f7f7f";
  if (mode == "concurrent") return "#4c78a8";
  if (mode == "priority") return "#b279a2";
  if (mode == "shape") return "#f58518";
  if (mode == "shape+priority") return "#e45756";
  return "#72b7b2";
}
constexpr const char* kSeqColour = "#555555";
constexpr const char* kIdealColour = "#54a24b";

struct Axis {
  double x, w, x0, x1;
  double px(double v) const { return x + (v - x0) / (x1 - x0) * w; }
};

// The time axis: every row's quartiles and median, T_seq and T_ideal, padded; from 0 unless the
// values sit so high that a zero start would flatten their differences.
Axis time_axis(const BenchSweep& s, double x, double w) {
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  auto take = [&](double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  };
  for (const auto& r : s.rows)
    for (double v : {r.t_us, r.t_p25_us, r.t_p75_us}) take(v);
  take(s.t_seq_us);
  take(s.t_ideal_us);
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  const double pad = (hi - lo) * 0.08 + std::max(1e-9, hi * 1e-3);
  double x0 = lo - pad;
  if (x0 < 0.5 * hi) {
    x0 = 0;
  } else {
    const auto t = nice_ticks(x0 - (hi - x0), x0, 4);  // a round start at or below x0
    if (!t.empty()) x0 = t.back();
  }
  return {x, w, x0, hi + pad};
}

std::string row_tip(const SweepRow& r) {
  return fmt::format("{}: {} us (p25 {}, p75 {}), reduction {}%, E {}{}", r.label,
                     format_number(r.t_us, 1), format_number(r.t_p25_us, 1),
                     format_number(r.t_p75_us, 1), format_number(100 * r.reduction, 2),
                     format_number(r.efficiency, 3),
                     std::isfinite(r.efficiency_best)
                         ? ", E_best " + format_number(r.efficiency_best, 3)
                         : std::string());
}

std::string short_label(const std::string& label, std::size_t max) {
  return label.size() <= max ? label : label.substr(0, max - 3) + "...";
}

// One row: label left of the panel, bar, whisker and median mark in it, E right of it.
void draw_row(Svg& svg, const BenchSweep& s, const SweepRow& r, const Axis& ax, double yc,
              double bar_h) {
  std::string mark;
  if (s.kind == ResultKind::Tune) {
    const bool c = r.label == s.choice, a = r.label == s.applied;
    mark = c && a ? " (choice, applied)" : c ? " (choice)" : a ? " (applied)" : "";
  }
  svg.text(ax.x - 8, yc + 4, short_label(r.label, 40 - mark.size()) + mark, 11, "end", "#222",
           mark.empty() ? "normal" : "bold");
  const char* colour = mode_colour(r.mode);
  Style bar = fill_style(colour);
  bar.opacity = 0.8;
  const double x0 = ax.px(ax.x0), xm = ax.px(r.t_us);
  svg.rect(x0, yc - bar_h / 2, std::max(0.0, xm - x0), bar_h, bar, row_tip(r));
  if (std::isfinite(r.t_p25_us) && std::isfinite(r.t_p75_us)) {
    const double a = ax.px(r.t_p25_us), b = ax.px(r.t_p75_us);
    svg.line(a, yc, b, yc, line_style("#222", 1.5));
    svg.line(a, yc - 4, a, yc + 4, line_style("#222", 1.5));
    svg.line(b, yc - 4, b, yc + 4, line_style("#222", 1.5));
  }
  svg.circle(xm, yc, 3, fill_style("#222"), row_tip(r));
  std::string e = "E " + format_number(r.efficiency, 2);
  if (std::isfinite(r.efficiency_best)) e += "  E_best " + format_number(r.efficiency_best, 2);
  svg.text(ax.x + ax.w + 8, yc + 4, e, 11, "start", "#333");
  if (r.wrong > 0)
    svg.text(ax.x + ax.w + 8 + 7.0 * static_cast<double>(e.size()), yc + 4,
             fmt::format("wrong {}", r.wrong), 11, "start", "#d62728", "bold");
}

// Below the axis: what the lines and marks mean.
void draw_legend(Svg& svg, const BenchSweep& s, double x, double y) {
  const double x0 = x;
  if (std::isfinite(s.t_seq_us)) {
    svg.line(x, y, x + 26, y, line_style(kSeqColour, 1.5, "6 4"));
    svg.text(x + 32, y + 4, fmt::format("T_seq {} us", format_number(s.t_seq_us, 1)), 11, "start",
             "#333");
    x += 150;
  }
  if (std::isfinite(s.t_ideal_us)) {
    svg.line(x, y, x + 26, y, line_style(kIdealColour, 1.5, "1 3"));
    svg.text(x + 32, y + 4, fmt::format("T_ideal {} us", format_number(s.t_ideal_us, 1)), 11,
             "start", "#333");
    x += 160;
  }
  svg.line(x, y, x + 26, y, line_style("#222", 1.5));
  svg.circle(x + 13, y, 3, fill_style("#222"));
  svg.text(x + 32, y + 4, "median, p25..p75", 11, "start", "#333");
  if (s.kind == ResultKind::Tune)
    svg.text(x0, y + 24, "bold: the tune's choice and the row cco run applies", 11, "start",
             "#333", "bold");
}

}  // namespace

Svg result_svg(const BenchSweep& s, const SweepOptions& opt) {
  const double left = 260, right = 190, top = 64, row_h = 26;
  const double bottom = s.kind == ResultKind::Tune ? 100 : 80;
  const double width = std::max(opt.width, left + right + 300);
  const double pw = width - left - right;
  const double ph = row_h * static_cast<double>(s.rows.size());
  Svg svg(width, top + ph + bottom);
  const std::string title =
      opt.title.empty()
          ? fmt::format("{} result: {} on {} x {}", kind_name(s.kind), s.workload, s.nranks,
                        s.device.empty() ? "GPU" : s.device)
          : opt.title;
  svg.text(16, 22, title, 15, "start", "#222", "bold");
  svg.text(16, 42,
           fmt::format("{}{}: median time per row (whisker: p25..p75); E = (T_seq - T) / "
                       "min(T_comp, T_comm)",
                       s.source.substr(s.source.rfind('/') + 1),
                       s.date.empty() ? "" : " (" + s.date + ")"),
           11, "start", "#555");
  const Axis ax = time_axis(s, left, pw);
  svg.rect(left, top, pw, ph, box_style("#fbfbfb", "#999", 1));
  for (double v : nice_ticks(ax.x0, ax.x1, 8)) {
    const double x = ax.px(v);
    svg.line(x, top, x, top + ph, line_style("#e6e6e6", 1));
    svg.line(x, top + ph, x, top + ph + 5, line_style("#444", 1));
    svg.text(x, top + ph + 18, format_number(v, 2), 11, "middle", "#333");
  }
  svg.text(left + pw / 2, top + ph + 36,
           ax.x0 > 0 ? fmt::format("time (us; the axis starts at {})", format_number(ax.x0, 2))
                     : std::string("time (us)"),
           12, "middle", "#333");
  for (std::size_t i = 0; i < s.rows.size(); ++i)
    draw_row(svg, s, s.rows[i], ax, top + (static_cast<double>(i) + 0.5) * row_h, row_h * 0.55);
  if (std::isfinite(s.t_seq_us))
    svg.line(ax.px(s.t_seq_us), top, ax.px(s.t_seq_us), top + ph, line_style(kSeqColour, 1.5, "6 4"));
  if (std::isfinite(s.t_ideal_us))
    svg.line(ax.px(s.t_ideal_us), top, ax.px(s.t_ideal_us), top + ph,
             line_style(kIdealColour, 1.5, "1 3"));
  draw_legend(svg, s, left, top + ph + 60);
  return svg;
}

}  // namespace cco::report
