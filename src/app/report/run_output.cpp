#include "report/run_output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "report/svg.hpp"
#include "steps/paired.hpp"
#include "steps/search.hpp"  // history_of, times_of

namespace cco::report {
namespace {

std::string verdict(const steps::CompareReport& r, std::size_t c) {
  if (c == 0) return "baseline";
  const auto& d = r.configs[c].vs_first;
  if (!d.enough) return "too few rounds";
  return d.contains_zero() ? "within noise" : d.median < 0 ? "faster" : "slower";
}

std::string num(double v) { return fmt::format("{:.3f}", v); }

}  // namespace

std::string format_compare(const steps::CompareReport& r, TableFormat f) {
  if (f == TableFormat::Text) return steps::format_report(r);
  std::string out;
  const bool csv = f == TableFormat::Csv;
  const char* head[] = {"config", "rounds", "median_ms", "q1_ms", "q3_ms", "diff_ms",
                        "lo_ms", "hi_ms", "diff_pct", "verdict"};
  auto row = [&](const std::vector<std::string>& v) { out += table_row(v, f); };
  row(std::vector<std::string>(std::begin(head), std::end(head)));
  if (!csv) row(std::vector<std::string>(std::size(head), "---"));
  const double base = r.configs.empty() ? 0 : r.configs[0].summary.median;
  for (std::size_t c = 0; c < r.configs.size(); ++c) {
    const auto& cr = r.configs[c];
    const auto& d = cr.vs_first;
    const bool diff = c > 0;
    row({cr.name, std::to_string(cr.summary.n), num(cr.summary.median), num(cr.summary.q1),
         num(cr.summary.q3), diff ? num(d.median) : "", diff && d.enough ? num(d.lo) : "",
         diff && d.enough ? num(d.hi) : "",
         diff && base > 0 ? fmt::format("{:.2f}", 100.0 * d.median / base) : "", verdict(r, c)});
  }
  return out;
}

std::string compare_svg(const steps::CompareReport& r, const std::string& title) {
  const std::size_t n = r.configs.size() > 1 ? r.configs.size() - 1 : 0;
  // The verdict is written right of the plot: room for "within noise" (it was clipped at 40 px).
  const double row_h = 30, top = 74, left = 250, pw = 520, right = 100;
  const double ph = std::max(1.0, static_cast<double>(n)) * row_h + 10;
  Svg svg(left + pw + right, top + ph + 70);
  svg.text(16, 22, title, 15, "start", "#222", "bold");
  if (!r.refused.empty() || n == 0) {
    svg.text(16, 46, r.refused.empty() ? "fewer than two configurations: nothing to compare"
                                       : "no comparison: " + r.refused,
             12, "start", "#a00");
    return svg.str();
  }
  const std::string base = r.configs[0].name;
  svg.text(16, 42,
           fmt::format("paired difference to {} (median {} ms), {} rounds, {} time; 95% "
                       "sign-test interval; left of 0 is faster",
                       base, format_number(r.configs[0].summary.median, 3), r.rounds, r.metric),
           11, "start", "#333");
  if (r.check)
    svg.text(16, 58,
             r.check->stopped ? fmt::format("stopped at step {}: nothing to win here", r.check->at_step)
                              : fmt::format("checked at step {}: the comparison went on", r.check->at_step),
             11, "start", "#333");
  // The axis: every median and interval end, and 0.
  double lo = 0, hi = 0;
  for (std::size_t c = 1; c < r.configs.size(); ++c) {
    const auto& d = r.configs[c].vs_first;
    for (double v : {d.median, d.enough ? d.lo : d.median, d.enough ? d.hi : d.median})
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  const DiffAxis axis = draw_diff_axis(svg, left, top, pw, ph, lo, hi, 1e-3, "");
  auto px = [&](double v) { return axis.px(v); };
  svg.text(left + pw / 2, top + ph + 36, "ms per step against " + base, 12, "middle", "#222");
  for (std::size_t c = 1; c < r.configs.size(); ++c) {
    const auto& cr = r.configs[c];
    const auto& d = cr.vs_first;
    const double y = top + 5 + row_h * (static_cast<double>(c) - 0.5);
    const std::string v = verdict(r, c);
    const char* colour = v == "faster" ? "#2a7f3f" : v == "slower" ? "#b23030" : "#4c78a8";
    svg.text(left - 8, y + 4, cr.name.size() > 36 ? cr.name.substr(0, 35) + "~" : cr.name, 11,
             "end", "#222");
    const std::string tip =
        d.enough ? fmt::format("{}: {} ms [{}, {}], {}", cr.name, format_number(d.median, 3),
                               format_number(d.lo, 3), format_number(d.hi, 3), v)
                 : fmt::format("{}: {} ms, {}", cr.name, format_number(d.median, 3), v);
    if (d.enough)
      svg.rect(px(d.lo), y - 3, std::max(1.0, px(d.hi) - px(d.lo)), 6, fill_style(colour), tip);
    svg.circle(px(d.median), y, 4.5, box_style("#fff", colour, 2), tip);
    svg.text(left + pw + 6, y + 4, v, 11, "start", "#333");
  }
  return svg.str();
}

std::string format_step_file(const steps::StepFile& f, TableFormat t) {
  const bool csv = t == TableFormat::Csv;
  std::string out;
  if (t == TableFormat::Text) {
    bool gpu = !f.steps.empty();
    std::size_t irregular = 0;
    for (const auto& st : f.steps) {
      gpu = gpu && (!st.regular || st.gpu_ms.has_value());
      irregular += !st.regular;
    }
    const steps::History history = steps::history_of(f.steps, gpu);
    out += fmt::format("# steps of {}: {} steps (found from {}{}), {} time per step in ms, ended {}{}\n",
                       steps::process_name(f), f.steps.size(), f.source,
                       f.period > 0 ? ", " + std::to_string(f.period) + " collectives each" : "",
                       gpu ? "GPU" : "host", f.ended,
                       irregular ? ", " + std::to_string(irregular) + " irregular left out" : "");
    out += fmt::format("{:<32} {:>6} {:>10} {:>10} {:>10}\n", "#config", "steps", "median", "q1", "q3");
    // A rotation stopped by its check: the steps before the stop are the comparison's; every
    // later step ran under the first configuration and would swamp its count.
    const uint64_t end = f.check && f.check->stopped
                             ? std::min<uint64_t>(history.size(), f.check->at_step)
                             : history.size();
    for (std::size_t c = 0; c < f.configs.size(); ++c) {
      const steps::Summary sm =
          steps::summarize(steps::times_of(history, static_cast<int>(c), f.warmup, end));
      out += fmt::format("{:<32} {:>6} {:>10.3f} {:>10.3f} {:>10.3f}\n", f.configs[c], sm.n,
                         sm.median, sm.q1, sm.q3);
    }
    if (f.check)
      out += fmt::format("# check at step {}: {}{}\n", f.check->at_step,
                         f.check->stopped ? "stopped: " : "", f.check->why);
    if (end < history.size())
      out += fmt::format("# the summary holds the {} steps before the stop; the {} later ones ran "
                         "under {} alone\n",
                         end, history.size() - end, f.configs.empty() ? "the first" : f.configs[0]);
    if (!f.note.empty()) out += "# note: " + f.note + "\n";
    return out;
  }
  const char* head[] = {"step", "config", "name", "host_ms", "gpu_ms", "regular", "warmup"};
  auto row = [&](const std::vector<std::string>& v) { out += table_row(v, t); };
  row(std::vector<std::string>(std::begin(head), std::end(head)));
  if (!csv) row(std::vector<std::string>(std::size(head), "---"));
  for (const auto& s : f.steps) {
    const std::string name =
        s.config >= 0 && static_cast<std::size_t>(s.config) < f.configs.size() ? f.configs[static_cast<std::size_t>(s.config)] : "";
    row({std::to_string(s.step), std::to_string(s.config), name, num(s.host_ms),
         s.gpu_ms ? num(*s.gpu_ms) : "", s.regular ? "1" : "0", s.step < f.warmup ? "1" : "0"});
  }
  return out;
}

}  // namespace cco::report
