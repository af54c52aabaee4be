#include "report/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "model/json_number.hpp"
#include "model/limits.hpp"
#include "model/occupancy.hpp"
#include "model/schema.hpp"
#include "model/types.hpp"
#include "results/bench.hpp"

namespace cco::report {

using nlohmann::json;

bool is_bench_json(const json& j) { return results::is_bench(j); }

BenchSweep sweep_from_json(const json& j, const std::string& src) {
  const results::BenchResult r = results::read_bench(j, src);  // the format's one reader
  BenchSweep s;
  s.source = src;
  s.date = r.date;
  s.compute = r.compute;
  s.collective = r.collective;
  s.datatype = r.datatype;
  s.nranks = r.nranks;
  s.device = results::first_device_name(r);
  for (const auto& x : r.rows) {
    SweepRow row;
    row.bytes = x.size_bytes;
    row.mode = x.mode;
    row.target_k = x.target_blocks_per_sm;
    row.pad = x.pad_bytes;
    row.blocks_per_sm = x.blocks_per_sm;
    row.t_us = x.t.median_us;
    row.t_p25_us = x.t.p25_us;
    row.t_p75_us = x.t.p75_us;
    row.t_seq_us = x.t_seq.median_us;
    row.t_comp_us = x.t_comp.median_us;
    row.t_comm_us = x.t_comm.median_us;
    row.t_ideal_us = std::isnan(x.t_ideal_us) ? std::max(row.t_comp_us, row.t_comm_us) : x.t_ideal_us;
    row.efficiency = x.efficiency;
    row.reduction = x.reduction;
    row.efficiency_best = x.efficiency_best;
    row.label = x.label;
    if (row.label.empty())
      row.label = row.mode + (row.shaped() && row.target_k > 0 ? " k=" + std::to_string(row.target_k) : "");
    row.dtype = x.dtype;
    row.in_place = x.in_place;
    row.t_comm_in_place_us = x.t_comm_in_place.median_us;
    row.comm_busbw_gbps = x.comm_busbw_gbps;
    row.in_place_busbw_gbps = x.in_place_busbw_gbps;
    s.rows.push_back(row);
  }
  return s;
}

std::vector<std::pair<std::string, BenchSweep>> split_by_dtype(const BenchSweep& s) {
  std::vector<std::pair<std::string, BenchSweep>> out;
  for (const auto& r : s.rows) {
    const std::string& t = r.dtype.empty() ? s.datatype : r.dtype;
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& g) { return g.first == t; });
    if (it == out.end()) {
      BenchSweep part = s;
      part.rows.clear();
      part.datatype = t;
      out.emplace_back(t, std::move(part));
      it = out.end() - 1;
    }
    it->second.rows.push_back(r);
  }
  if (out.size() <= 1) return {{s.datatype, s}};
  for (const auto& [t, part] : out) {
    try {
      (void)model::parse_dtype(t);
    } catch (const model::Error&) {
      throw model::Error("a row's dtype '" + t.substr(0, 40) + "' is not a type cco bench writes");
    }
  }
  return out;
}

std::string in_place_lines(const BenchSweep& s) {
  std::string o;
  int64_t last = -1;
  for (const auto& r : s.rows) {
    if (!r.in_place || r.bytes == last) continue;
    last = r.bytes;
    o += fmt::format(
        "# collective alone at {}: out of place {} us, in place {} us (busbw {} and {} GB/s)\n",
        model::format_bytes(last), format_number(r.t_comm_us, 1),
        format_number(r.t_comm_in_place_us, 1), format_number(r.comm_busbw_gbps, 1),
        format_number(r.in_place_busbw_gbps, 1));
  }
  return o;
}

std::string typed_table(const std::string& table, TableFormat f, const std::string& type,
                        bool first) {
  if (f != TableFormat::Csv) return first || f == TableFormat::Text ? table : "\n" + table;
  std::string o;
  for (std::size_t at = 0, header = 1; at < table.size(); header = 0) {
    const std::size_t nl = std::min(table.find('\n', at), table.size());
    if (!header || first) o += (header ? "dtype," : type + ",") + table.substr(at, nl - at) + "\n";
    at = nl + 1;
  }
  return o;
}

json sweep_report_json(const std::vector<std::pair<std::string, BenchSweep>>& parts,
                       const std::string& input) {
  json out;
  model::stamp_schema(out, model::kSweepReportSchema);
  out["input"] = input;
  json rows = json::array();
  for (const auto& [type, s] : parts)
    for (const auto& r : s.rows) {
      json x = {{"size_bytes", r.bytes},
                {"mode", r.mode},
                {"blocks_per_sm", r.blocks_per_sm},
                {"pad_bytes", r.pad},
                {"t_us", model::number_or_null(r.t_us)},
                {"t_seq_us", model::number_or_null(r.t_seq_us)},
                {"reduction", model::number_or_null(r.reduction)},
                {"efficiency", model::number_or_null(r.efficiency)}};
      if (parts.size() > 1) x["dtype"] = type;
      rows.push_back(std::move(x));
    }
  out["rows"] = rows;
  return out;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

std::string table_row(const std::vector<std::string>& cells, TableFormat f) {
  const bool csv = f == TableFormat::Csv;
  std::string line = csv ? "" : "|";
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (csv) {
      if (i) line += ',';
      line += csv_field(cells[i]);
    } else {
      line += ' ';
      for (char c : cells[i]) line += c == '|' ? std::string("\\|") : std::string(1, c);
      line += " |";
    }
  }
  line += '\n';
  return line;
}

std::string format_sweep(const BenchSweep& s, TableFormat f) {
  auto bps = [](const SweepRow& r) { return r.blocks_per_sm > 0 ? std::to_string(r.blocks_per_sm) : "-"; };
  std::string o;
  if (f == TableFormat::Csv) {
    auto v = [](double x) { return std::isnan(x) ? std::string() : fmt::format("{:.6g}", x); };
    o = "size_bytes,label,blocks_per_sm,pad_bytes,t_us,t_seq_us,reduction,efficiency,efficiency_best\n";
    for (const auto& r : s.rows)
      o += fmt::format("{},{},{},{},{},{},{},{},{}\n", r.bytes, r.label, r.blocks_per_sm, r.pad,
                       v(r.t_us), v(r.t_seq_us), v(r.reduction), v(r.efficiency),
                       v(r.efficiency_best));
    return o;
  }
  if (f == TableFormat::Markdown) {
    o = fmt::format("`{}` ({}; {} || {} {}, {} ranks, {})\n\n", s.source, s.device.empty() ? "?" : s.device,
                    s.compute, s.collective, s.datatype, s.nranks, s.date);
    o += "| size (B) | row | bps | pad (B) | time (us) | T_seq (us) | reduct (%) | eff | E_best |\n";
    o += "|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& r : s.rows)
      o += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", r.bytes, r.label, bps(r),
                       r.pad, format_number(r.t_us, 1), format_number(r.t_seq_us, 1),
                       format_number(100 * r.reduction, 1), format_number(r.efficiency, 2),
                       format_number(r.efficiency_best, 2));
    return o;
  }
  o = fmt::format("# bench sweep: {} ({}; {} || {} {}, {} ranks, {})\n", s.source,
                  s.device.empty() ? "?" : s.device, s.compute, s.collective, s.datatype, s.nranks,
                  s.date);
  o += fmt::format("#{:>11} {:>34} {:>4} {:>7} {:>10} {:>10} {:>8} {:>6} {:>6}\n", "size", "row",
                   "bps", "pad", "time", "T_seq", "reduct", "eff", "E_best");
  o += fmt::format("#{:>11} {:>34} {:>4} {:>7} {:>10} {:>10} {:>8} {:>6} {:>6}\n", "(B)", "", "",
                   "(B)", "(us)", "(us)", "(%)", "", "");
  for (const auto& r : s.rows)
    o += fmt::format(" {:>11} {:>34} {:>4} {:>7} {:>10} {:>10} {:>8} {:>6} {:>6}\n", r.bytes,
                     r.label, bps(r), r.pad, format_number(r.t_us, 1),
                     format_number(r.t_seq_us, 1), format_number(100 * r.reduction, 1),
                     format_number(r.efficiency, 2), format_number(r.efficiency_best, 2));
  return o;
}

namespace {

struct Series {
  const char* mode;
  const char* colour;
  const char* dash;
};
constexpr Series kRefs[] = {
    {"seq", "#7f7f7f", "6 4"}, {"concurrent", "#4c78a8", "6 4"}, {"priority", "#b279a2", "2 3"}};
constexpr Series kLines[] = {{"shape", "#f58518", ""}, {"shape+priority", "#e45756", ""}};
constexpr const char* kIdealColour = "#54a24b";

struct Panel {
  double x, y, w, h;      // plot area in pixels
  double x0, x1, y0, y1;  // data range
  double px(double v) const { return x + (v - x0) / (x1 - x0) * w; }
  double py(double v) const { return y + h - (v - y0) / (y1 - y0) * h; }
};

void draw_axes(Svg& svg, const Panel& p, const std::string& ylabel, const std::string& xlabel,
               const std::vector<double>& xticks, bool x_as_kib) {
  svg.rect(p.x, p.y, p.w, p.h, box_style("#fbfbfb", "#999", 1));
  for (double v : nice_ticks(p.y0, p.y1, 6)) {
    const double y = p.py(v);
    svg.line(p.x, y, p.x + p.w, y, line_style("#e6e6e6", 1));
    svg.text(p.x - 6, y + 4, format_number(v, 2), 11, "end", "#333");
  }
  for (double v : xticks) {
    const double x = p.px(v);
    svg.line(x, p.y + p.h, x, p.y + p.h + 5, line_style("#444", 1));
    svg.text(x, p.y + p.h + 18, x_as_kib ? format_number(v / 1024.0, 1) : format_number(v, 2), 11,
             "middle", "#333");
  }
  svg.text(p.x - 52, p.y + p.h / 2, ylabel, 12, "middle", "#333", "normal", -90);
  if (!xlabel.empty()) svg.text(p.x + p.w / 2, p.y + p.h + 34, xlabel, 12, "middle", "#333");
}

// One size's two panels (time above, efficiency below) over the shaped rows' k or padding.
struct SizePanels {
  Panel time, eff;
  std::vector<double> xticks;
  int own_k = 0;  // the kernel's blocks per SM as launched (the unshaped rows)
};

double x_of(const SweepRow& r, bool use_bps) {
  return use_bps ? static_cast<double>(r.blocks_per_sm) : static_cast<double>(r.pad);
}

// The panels' data ranges from one size's rows, placed from y.
SizePanels size_panels(const std::vector<const SweepRow*>& rows, bool use_bps, double left,
                       double pw, double y, double time_h, double gap, double eff_h) {
  double tmin = std::numeric_limits<double>::infinity(), tmax = 0;
  double emin = 0, emax = 1;
  double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin;
  std::set<double> xs;
  SizePanels out;
  for (const auto* r : rows) {
    for (double v : {r->t_us, r->t_p25_us, r->t_p75_us, r->t_ideal_us, r->t_seq_us}) {
      if (std::isnan(v)) continue;
      tmin = std::min(tmin, v);
      tmax = std::max(tmax, v);
    }
    if (!std::isnan(r->efficiency)) {
      emin = std::min(emin, r->efficiency);
      emax = std::max(emax, r->efficiency);
    }
    if (r->shaped()) {
      xs.insert(x_of(*r, use_bps));
      xmin = std::min(xmin, x_of(*r, use_bps));
      xmax = std::max(xmax, x_of(*r, use_bps));
    } else if (r->blocks_per_sm > 0) {
      out.own_k = std::max(out.own_k, r->blocks_per_sm);
      if (use_bps) {  // include the kernel's own k
        xmax = std::max(xmax, static_cast<double>(r->blocks_per_sm));
        xs.insert(r->blocks_per_sm);
      }
    }
  }
  if (!use_bps) xmin = 0;  // pad 0 is the unshaped kernel
  if (xs.empty()) {
    xmin = 0;
    xmax = 1;
  }
  if (xmax <= xmin) {
    xmin -= 1;
    xmax += 1;
  }
  const double xpad = (xmax - xmin) * 0.06;
  const double tpad = (tmax - tmin) * 0.08 + 1e-9;
  out.time = {left, y + 20, pw, time_h, xmin - xpad, xmax + xpad, std::max(0.0, tmin - tpad),
              tmax + tpad};
  out.eff = {left, y + 20 + time_h + gap, pw, eff_h, out.time.x0, out.time.x1, emin - 0.08,
             emax + 0.08};
  if (xs.empty()) {
    // nothing over k: no ticks
  } else if (use_bps) {
    out.xticks.assign(xs.begin(), xs.end());
  } else {
    for (double v : nice_ticks(xmin / 1024.0, xmax / 1024.0, 8)) out.xticks.push_back(v * 1024.0);
  }
  return out;
}

// The legend right of the panels: one entry per line, downwards from y.
struct SideLegend {
  Svg& svg;
  double x, y;
  void add(const char* colour, const std::string& dash, const std::string& what, bool marker) {
    svg.line(x, y, x + 26, y, line_style(colour, 2, dash));
    if (marker) svg.circle(x + 13, y, 3.5, fill_style(colour));
    svg.text(x + 32, y + 4, what, 11, "start", "#333");
    y += 18;
  }
};

// The unshaped modes (seq, concurrent, priority) and the ideal as horizontal references.
void draw_references(Svg& svg, const SizePanels& p, const std::vector<const SweepRow*>& rows,
                     SideLegend& legend) {
  const Panel &tp = p.time, &ep = p.eff;
  const SweepRow* any = rows.front();
  svg.line(tp.x, tp.py(any->t_ideal_us), tp.x + tp.w, tp.py(any->t_ideal_us),
           line_style(kIdealColour, 1.5, "1 3"));
  for (const auto& ref : kRefs) {
    for (const auto* r : rows) {
      if (r->mode != ref.mode) continue;
      svg.line(tp.x, tp.py(r->t_us), tp.x + tp.w, tp.py(r->t_us),
               line_style(ref.colour, 1.5, ref.dash));
      if (!std::isnan(r->efficiency) && std::string(ref.mode) != "seq")
        svg.line(ep.x, ep.py(r->efficiency), ep.x + ep.w, ep.py(r->efficiency),
                 line_style(ref.colour, 1.5, ref.dash));
      legend.add(ref.colour, ref.dash, fmt::format("{} {} us", ref.mode, format_number(r->t_us, 0)),
                 false);
      break;
    }
  }
  legend.add(kIdealColour, "1 3",
             fmt::format("ideal max(C, M) {} us", format_number(any->t_ideal_us, 0)), false);
}

// The shaped modes as lines over k (or pad), with their p25..p75 bars.
void draw_mode_lines(Svg& svg, const SizePanels& p, const std::vector<const SweepRow*>& rows,
                     bool use_bps, SideLegend& legend) {
  const Panel &tp = p.time, &ep = p.eff;
  for (const auto& ln : kLines) {
    std::vector<const SweepRow*> pts;
    for (const auto* r : rows)
      if (r->mode == ln.mode) pts.push_back(r);
    if (pts.empty()) continue;
    std::sort(pts.begin(), pts.end(), [&](const SweepRow* a, const SweepRow* b) {
      return x_of(*a, use_bps) < x_of(*b, use_bps);
    });
    std::vector<std::pair<double, double>> tl, el;
    for (const auto* r : pts) {
      const double x = tp.px(x_of(*r, use_bps));
      tl.push_back({x, tp.py(r->t_us)});
      if (!std::isnan(r->t_p25_us) && !std::isnan(r->t_p75_us))
        svg.line(x, tp.py(r->t_p25_us), x, tp.py(r->t_p75_us), line_style(ln.colour, 1.2));
      if (!std::isnan(r->efficiency)) el.push_back({x, ep.py(r->efficiency)});
    }
    svg.polyline(tl, line_style(ln.colour, 2));
    svg.polyline(el, line_style(ln.colour, 2));
    for (std::size_t i = 0; i < pts.size(); ++i) {
      const auto* r = pts[i];
      const std::string tip =
          fmt::format("{} k={} pad={} B: {} us, efficiency {}", r->mode, r->blocks_per_sm, r->pad,
                      format_number(r->t_us, 1), format_number(r->efficiency, 2));
      svg.circle(tl[i].first, tl[i].second, 3.5, fill_style(ln.colour), tip);
      if (!std::isnan(r->efficiency))
        svg.circle(tl[i].first, ep.py(r->efficiency), 3.5, fill_style(ln.colour), tip);
    }
    legend.add(ln.colour, "", ln.mode, true);
  }
}

}  // namespace

Svg sweep_svg(const BenchSweep& s, const SweepOptions& opt) {
  std::map<int64_t, std::vector<const SweepRow*>> by_size;
  for (const auto& r : s.rows) by_size[r.bytes].push_back(&r);

  // The x axis: blocks per SM when every shaped mode has distinct known k per size, else pad.
  bool bps_ok = true;
  for (const auto& [bytes, rows] : by_size) {
    std::map<std::string, std::set<int>> seen;
    for (const auto* r : rows) {
      if (!r->shaped()) continue;
      if (r->blocks_per_sm <= 0 || !seen[r->mode].insert(r->blocks_per_sm).second) bps_ok = false;
    }
  }
  const bool use_bps =
      opt.axis == SweepAxis::BlocksPerSm || (opt.axis == SweepAxis::Auto && bps_ok);

  const double left = 84, right = 210, top = 58, time_h = 250, eff_h = 170, gap = 60,
               block_gap = 70;
  const double width = std::max(opt.width, left + right + 300);
  const double pw = width - left - right;
  const double block_h = time_h + gap + eff_h + block_gap;
  const double height = top + block_h * static_cast<double>(by_size.size()) + 10;
  Svg svg(width, height);
  const std::string title =
      opt.title.empty() ? fmt::format("{} || {} {} on {} x {}", s.compute, s.collective, s.datatype,
                                      s.nranks, s.device.empty() ? "GPU" : s.device)
                        : opt.title;
  svg.text(left, 22, title, 15, "start", "#222", "bold");
  svg.text(left, 42,
           fmt::format("{}{}: median time per mode (bars: p25..p75) and overlap efficiency "
                       "(T_seq - T) / min(T_comp, T_comm)",
                       s.source.substr(s.source.rfind('/') + 1),
                       s.date.empty() ? "" : " (" + s.date + ")"),
           11, "start", "#555");

  double y = top;
  for (const auto& [bytes, rows] : by_size) {
    const SizePanels p = size_panels(rows, use_bps, left, pw, y, time_h, gap, eff_h);
    svg.text(left, y + 12, fmt::format("{}: {} bytes", model::format_bytes(bytes), bytes), 13,
             "start", "#222", "bold");
    bool any_shaped = false;
    for (const auto* r : rows) any_shaped = any_shaped || r->shaped();
    const std::string xlabel = !any_shaped ? "(no shape rows in this run: each mode is a line)"
                               : use_bps   ? "compute blocks per SM (k)"
                                           : "padding per block (KiB; 0 = as launched)";
    draw_axes(svg, p.time, "time (us)", "", p.xticks, !use_bps);
    draw_axes(svg, p.eff, "overlap efficiency", xlabel, p.xticks, !use_bps);
    if (use_bps && p.own_k > 0)
      svg.text(p.eff.px(p.own_k), p.eff.y + p.eff.h + 30, "(as launched)", 10, "middle", "#555");
    // Efficiency 0 and 1 marks.
    for (double v : {0.0, 1.0})
      if (v >= p.eff.y0 && v <= p.eff.y1)
        svg.line(p.eff.x, p.eff.py(v), p.eff.x + p.eff.w, p.eff.py(v),
                 line_style(v == 0 ? "#555" : kIdealColour, 1, v == 0 ? "" : "1 3"));
    SideLegend legend{svg, left + pw + 16, p.time.y + 8};
    draw_references(svg, p, rows, legend);
    draw_mode_lines(svg, p, rows, use_bps, legend);
    y += block_h;
  }
  return svg;
}

}  // namespace cco::report
