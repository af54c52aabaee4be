#include "report/timeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "model/limits.hpp"

namespace cco::report {

std::string short_kernel_name(std::string_view n, std::size_t max_chars) {
  if (n.substr(0, 5) == "void ") n.remove_prefix(5);
  if (n.substr(0, 2) == "_Z" && n.size() > 2 && n[2] >= '0' && n[2] <= '9') {
    std::size_t i = 2, len = 0;
    while (i < n.size() && n[i] >= '0' && n[i] <= '9') len = len * 10 + (n[i++] - '0');
    if (len > 0 && i + len <= n.size()) n = n.substr(i, len);
  }
  std::string out;
  int depth = 0;
  for (char c : n) {
    if (c == '<') {
      ++depth;
      continue;
    }
    if (c == '>') {
      depth = std::max(0, depth - 1);
      continue;
    }
    if (depth > 0) continue;
    if (c == '(') break;
    out += c;
  }
  // "ns::kernel" keeps the last component
  if (auto p = out.rfind("::"); p != std::string::npos && p + 2 < out.size())
    out = out.substr(p + 2);
  if (out.empty()) out = std::string(n.substr(0, max_chars));
  if (out.size() > max_chars) out = out.substr(0, max_chars > 3 ? max_chars - 3 : 0) + "...";
  return out;
}

namespace {

struct TimeUnit {
  double div;  // ns per unit
  const char* name;
};

TimeUnit unit_for(int64_t span_ns) {
  if (span_ns < 2'000'000) return {1e3, "us"};
  if (span_ns < 2'000'000'000) return {1e6, "ms"};
  return {1e9, "s"};
}

std::string kernel_tooltip(const trace::KernelEvent& k, int64_t t0, const TimeUnit& u) {
  std::string s = k.name + "\n";
  s += fmt::format("rank {} device {} stream {}", k.rank, k.device, k.stream);
  if (k.priority) s += fmt::format(" priority {}", *k.priority);
  s += fmt::format("\n{}: start {} {}, {} us", to_string(k.category),
                   format_number(static_cast<double>(k.start_ns - t0) / u.div, 3), u.name,
                   format_number(static_cast<double>(k.duration_ns()) / 1e3, 3));
  s += fmt::format("\ngrid [{},{},{}] block [{},{},{}]", k.grid.x, k.grid.y, k.grid.z, k.block.x,
                   k.block.y, k.block.z);
  if (k.registers > 0) s += fmt::format(", {} registers", k.registers);
  s += fmt::format(", smem {} + {} B", k.static_smem, k.dynamic_smem);
  if (k.blocks_per_sm > 0) s += fmt::format(", {} blocks/SM", k.blocks_per_sm);
  return s;
}

const std::pair<const char*, const char*> kLegend[] = {
    {kComputeColour, "compute kernel"},
    {kCommColour, "communication kernel (NCCL)"},
    {kOverlapColour, "compute and communication overlapped"},
    {kWaitColour, "communication ready, waiting for SMs"},
    {kExposedColour, "communication exposed (nothing hid it)"},
    {kNvtxColour, "NVTX range"}};

// At most n bytes of s, never cutting a UTF-8 sequence (NVTX names are the program's text).
std::string utf8_prefix(const std::string& s, std::size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

std::string range_tooltip(const trace::NvtxRange& r, int64_t t0, const TimeUnit& u) {
  std::string s = r.name + "\n";
  s += fmt::format("NVTX range, rank {} thread {}", r.rank, r.thread);
  if (!r.domain.empty()) s += ", domain " + r.domain;
  s += fmt::format("\nstart {} {}, {} us",
                   format_number(static_cast<double>(r.start_ns - t0) / u.div, 3), u.name,
                   format_number(static_cast<double>(r.duration_ns()) / 1e3, 3));
  return s;
}

// A rank's NVTX ranges in [lo, hi], each with its lane: the first lane free at its start (outer
// ranges come first, so nested ones go one lane down), the last lane when all are taken.
struct LanedRange {
  const trace::NvtxRange* range;
  int lane;
};
std::vector<LanedRange> lay_out_ranges(const trace::Trace& t, int rank, int64_t lo, int64_t hi,
                                       int* lanes) {
  std::vector<const trace::NvtxRange*> v;
  for (const auto& r : t.ranges)
    if (r.rank == rank && r.end_ns >= lo && r.start_ns <= hi) v.push_back(&r);
  std::stable_sort(v.begin(), v.end(), [](const auto* a, const auto* b) {
    return std::make_tuple(a->start_ns, -a->end_ns) < std::make_tuple(b->start_ns, -b->end_ns);
  });
  std::vector<int64_t> lane_end;
  std::vector<LanedRange> out;
  for (const auto* r : v) {
    std::size_t lane = 0;
    while (lane < lane_end.size() && lane_end[lane] > r->start_ns) ++lane;
    if (lane == lane_end.size()) {
      if (lane_end.size() < static_cast<std::size_t>(kNvtxLanes))
        lane_end.push_back(r->end_ns);
      else
        lane = lane_end.size() - 1;
    }
    lane_end[lane] = std::max(lane_end[lane], r->end_ns);
    out.push_back({r, static_cast<int>(lane)});
  }
  *lanes = static_cast<int>(lane_end.size());
  return out;
}

// Where a picture's times go: the window [lo, hi] over the plot's width from `left`.
struct Frame {
  int64_t lo = 0, hi = 1;
  double left = 0, pw = 1;
  TimeUnit unit{1e3, "us"};
  bool tips = true;  // tooltips on every box (off above 20,000 boxes)
  double x(int64_t ns) const {
    return left + pw * static_cast<double>(ns - lo) / static_cast<double>(hi - lo);
  }
};

// The picture's time window: opt's --from/--to, else the kernels' span; its unit.
Frame window_of(const trace::Trace& t, const TimelineOptions& opt) {
  Frame f;
  bool any = false;
  for (const auto& k : t.kernels) {
    if (opt.from_ns && k.end_ns < *opt.from_ns) continue;
    if (opt.to_ns && k.start_ns > *opt.to_ns) continue;
    f.lo = any ? std::min(f.lo, k.start_ns) : k.start_ns;
    f.hi = any ? std::max(f.hi, k.end_ns) : k.end_ns;
    any = true;
  }
  if (!any) throw model::Error("no kernel in the time window to draw");
  if (opt.from_ns) f.lo = *opt.from_ns;
  if (opt.to_ns) f.hi = *opt.to_ns;
  if (f.hi <= f.lo) f.hi = f.lo + 1;
  f.unit = unit_for(f.hi - f.lo);
  return f;
}

constexpr double kLaneH = 10, kRowH = 22, kBarH = 16, kSumH = 12;

// One rank's NVTX ranges, `lanes` thin lanes from y; thin neighbours in a lane merged like kernels.
void draw_nvtx_row(Svg& svg, const Frame& f, const std::vector<LanedRange>& ranges, int lanes,
                   double y, double rh) {
  svg.text(18, y + std::min(rh, 14.0) - 3, "NVTX ranges", 10, "start", "#555");
  svg.rect(f.left, y + 1, f.pw, rh - 2, fill_style("#f7f7f7"));
  svg.open_group("plot");
  struct RBox {
    double x0, x1;
    std::size_t count;
    const trace::NvtxRange* first;
  };
  std::vector<std::vector<RBox>> per_lane(static_cast<std::size_t>(lanes));
  for (const auto& lr : ranges) {
    const auto& r = *lr.range;
    const double x0 = f.x(std::max(r.start_ns, f.lo)), x1 = f.x(std::min(r.end_ns, f.hi));
    auto& boxes = per_lane[static_cast<std::size_t>(lr.lane)];
    if (!boxes.empty()) {
      auto& b = boxes.back();
      const bool thin = (b.x1 - b.x0) < 3 || (x1 - x0) < 3;
      if (thin && x0 - b.x1 < 0.5 && x0 >= b.x0) {
        b.x1 = std::max(b.x1, x1);
        ++b.count;
        continue;
      }
    }
    boxes.push_back({x0, x1, 1, &r});
  }
  for (std::size_t lane = 0; lane < per_lane.size(); ++lane) {
    const double by = y + 2 + static_cast<double>(lane) * kLaneH;
    for (const auto& b : per_lane[lane]) {
      const double w = std::max(b.x1 - b.x0, 0.6);
      std::string tip;
      if (f.tips)
        tip = b.count == 1 ? range_tooltip(*b.first, f.lo, f.unit)
                           : fmt::format("{} NVTX ranges", b.count);
      svg.rect(b.x0, by, w, kLaneH - 2, box_style(kNvtxColour, w > 4 ? "#ffffff" : "none", 0.5),
               tip);
      if (w > 40 && b.count == 1) {
        std::string nm = b.first->name;
        const auto fit = static_cast<std::size_t>((w - 4) / 4.9);
        if (nm.size() > fit) nm = fit > 3 ? utf8_prefix(nm, fit - 3) + "..." : std::string();
        if (!nm.empty()) svg.text(b.x0 + 2, by + kLaneH - 4, nm, 7.5, "start", "#ffffff");
      }
    }
  }
  svg.close_group();
}

// One stream's row of kernels at y; adjacent kernels closer than half a pixel merged when either
// is thin.
void draw_stream_row(Svg& svg, const Frame& f, const trace::Trace& t, int rank,
                     const trace::StreamInfo& s, double y) {
  std::string label = fmt::format("stream {}", s.stream);
  label += s.priority ? fmt::format("  priority {}", *s.priority) : "  priority ?";
  if (!s.label.empty()) label += "  (" + s.label + ")";
  svg.text(18, y + 15, label, 11, "start", "#333");
  svg.rect(f.left, y + 1, f.pw, kRowH - 2, fill_style("#f7f7f7"));
  svg.open_group("plot");
  struct Box {
    double x0, x1;
    trace::KernelCategory cat;
    std::size_t count;
    const trace::KernelEvent* first;
  };
  std::vector<Box> boxes;
  for (const auto& k : t.kernels) {
    if (k.rank != rank || k.device != s.device || k.stream != s.stream) continue;
    if (k.end_ns < f.lo || k.start_ns > f.hi) continue;
    const double x0 = f.x(std::max(k.start_ns, f.lo)), x1 = f.x(std::min(k.end_ns, f.hi));
    if (!boxes.empty()) {
      auto& b = boxes.back();
      const bool thin = (b.x1 - b.x0) < 3 || (x1 - x0) < 3;
      if (b.cat == k.category && thin && x0 - b.x1 < 0.5) {
        b.x1 = std::max(b.x1, x1);
        ++b.count;
        continue;
      }
    }
    boxes.push_back({x0, x1, k.category, 1, &k});
  }
  for (const auto& b : boxes) {
    const bool comm = b.cat == trace::KernelCategory::Communication;
    const double w = std::max(b.x1 - b.x0, 0.6);
    std::string tip;
    if (f.tips)
      tip = b.count == 1 ? kernel_tooltip(*b.first, f.lo, f.unit)
                         : fmt::format("{} {} kernels", b.count, to_string(b.cat));
    svg.rect(b.x0, y + (kRowH - kBarH) / 2, w, kBarH,
             box_style(comm ? kCommColour : kComputeColour, w > 4 ? "#ffffff" : "none", 0.5), tip);
    if (w > 70 && b.count == 1) {
      std::string nm = short_kernel_name(b.first->name, static_cast<std::size_t>(w / 6.5));
      if (b.first->blocks_per_sm > 0 && w > 110)
        nm += fmt::format(" [{}/SM]", b.first->blocks_per_sm);
      if (static_cast<double>(nm.size()) * 6.2 > w - 6)
        nm = short_kernel_name(b.first->name, static_cast<std::size_t>((w - 6) / 6.2));
      svg.text(b.x0 + 3, y + kRowH / 2 + 3.5, nm, 10, "start", "#ffffff");
    }
  }
  svg.close_group();
}

// What a rank's summary row shows, as disjoint-ish unions over the window: overlap, waits for
// SMs (inside compute time), exposed communication (nothing hid it).
struct Summary {
  std::vector<trace::Interval> overlap, wait, exposed;
  std::vector<trace::CommWait> waits;
  bool estimated = false;  // waits from stream gaps: upper bounds
};

Summary summary_of(const trace::Trace& t, int rank, int64_t lo, int64_t hi) {
  Summary s;
  s.waits = trace::communication_waits(t, rank, {lo, hi});
  s.estimated = std::any_of(s.waits.begin(), s.waits.end(),
                            [](const auto& w) { return w.method != "launch"; });
  std::vector<trace::Interval> comp, comm, wait;
  for (const auto& k : t.kernels) {
    if (k.rank != rank) continue;
    (k.category == trace::KernelCategory::Communication ? comm : comp)
        .push_back({std::max(k.start_ns, lo), std::min(k.end_ns, hi)});
  }
  const auto cu = trace::interval_union(comp), mu = trace::interval_union(comm);
  s.overlap = trace::interval_intersection(cu, mu);
  for (const auto& w : s.waits) wait.push_back({w.begin_ns, w.end_ns});
  s.wait = trace::interval_union(wait);
  // comm \ compute = comm minus (comm and compute)
  std::vector<trace::Interval> ex;
  std::size_t j = 0;
  for (auto cur : mu) {
    while (j < s.overlap.size() && s.overlap[j].end <= cur.begin) ++j;
    for (std::size_t k = j; k < s.overlap.size() && s.overlap[k].begin < cur.end; ++k) {
      if (s.overlap[k].begin > cur.begin) ex.push_back({cur.begin, s.overlap[k].begin});
      cur.begin = std::max(cur.begin, s.overlap[k].end);
    }
    if (cur.end > cur.begin) ex.push_back(cur);
  }
  s.exposed = std::move(ex);
  return s;
}

int64_t length_in(const std::vector<trace::Interval>& u, int64_t a, int64_t b) {
  auto it = std::lower_bound(u.begin(), u.end(), a,
                             [](const trace::Interval& i, int64_t v) { return i.end <= v; });
  int64_t n = 0;
  for (; it != u.end() && it->begin < b; ++it)
    n += std::max<int64_t>(0, std::min(it->end, b) - std::max(it->begin, a));
  return n;
}

// The rank's summary row at y. Each pixel column is drawn by what dominated it -- overlap,
// communication waiting for SMs, or communication exposed -- and left blank where nothing did
// (mostly neither): so a wait of 2% of a column never paints a band at whole-run zoom. Runs of
// columns in one state are one box, whose tooltip says how much of it that state filled. Waits
// from stream gaps (no launch timestamps) are upper bounds: drawn pale, and labelled.
void draw_rank_summary(Svg& svg, const Frame& f, const Summary& sm, double y) {
  svg.text(18, y + 10,
           sm.estimated ? "overlap / comm waiting (upper bound)" : "overlap / comm waiting", 10,
           "start", "#555");
  svg.rect(f.left, y + 1, f.pw, kSumH - 1, fill_style("#f7f7f7"));
  svg.open_group("plot");
  const int cols = std::max(1, static_cast<int>(std::lround(f.pw)));
  const double span = static_cast<double>(f.hi - f.lo);
  auto at = [&](int c) { return f.lo + static_cast<int64_t>(span * c / cols); };
  enum State { None, Overlap, Wait, Exposed };
  auto state_of = [&](int c, int64_t* share) {
    const int64_t a = at(c), b = at(c + 1);
    const int64_t len[4] = {0, length_in(sm.overlap, a, b), length_in(sm.wait, a, b),
                            length_in(sm.exposed, a, b)};
    int best = None;
    int64_t most = 0;
    for (int k = Overlap; k <= Exposed; ++k)
      if (len[k] > most) {
        most = len[k];
        best = k;
      }
    // Dominates: fills at least half the column.
    if (2 * most < b - a) best = None;
    *share = best == None ? 0 : len[best];
    return static_cast<State>(best);
  };
  int c = 0;
  while (c < cols) {
    int64_t share = 0;
    const State st = state_of(c, &share);
    int e = c + 1;
    int64_t total = share;
    for (int64_t sh = 0; e < cols && state_of(e, &sh) == st; ++e) total += sh;
    if (st != None) {
      const double x0 = f.x(at(c)), x1 = f.x(at(e));
      auto style = fill_style(st == Overlap ? kOverlapColour
                              : st == Wait  ? kWaitColour
                                            : kExposedColour);
      if (st == Wait && sm.estimated) style.opacity = 0.45;
      const char* what = st == Overlap ? "compute and communication overlapped"
                         : st == Wait  ? "communication waited for SMs"
                                       : "communication exposed (nothing hid it)";
      std::string tip;
      if (f.tips) {
        tip = fmt::format("{}: {} us of these {} us", what,
                          format_number(static_cast<double>(total) / 1e3, 3),
                          format_number(static_cast<double>(at(e) - at(c)) / 1e3, 3));
        if (st == Wait)
          tip += sm.estimated ? " (an upper bound: no launch timestamps, the gap after the "
                                "stream's previous kernel)"
                              : " (from its launch timestamp)";
      }
      svg.rect(x0, y + 1, std::max(x1 - x0, 0.6), kSumH - 1, style, tip);
    }
    c = e;
  }
  svg.close_group();
}

// The legend's rows at `width` (each entry 40 px plus its text), drawn from ly when `svg` is given.
int legend_rows(const std::vector<std::pair<const char*, std::string>>& legend, double width,
                Svg* svg = nullptr, double ly = 0) {
  int rows = 1;
  double lx = 8;
  for (const auto& [colour, what] : legend) {
    const double w = 40 + 6.3 * static_cast<double>(std::string_view(what).size());
    if (lx > 8 && lx + w > width) {
      lx = 8;
      ly += 18;
      ++rows;
    }
    if (svg) {
      svg->rect(lx, ly - 10, 14, 12, fill_style(colour));
      svg->text(lx + 20, ly, what, 11, "start", "#333");
    }
    lx += w;
  }
  return rows;
}

}  // namespace

Svg timeline_svg(const trace::Trace& t, const TimelineOptions& opt) {
  Frame f = window_of(t, opt);
  const int64_t lo = f.lo, hi = f.hi;

  // Rows: per rank, its streams by priority (most urgent first), then stream id.
  std::map<int, std::vector<const trace::StreamInfo*>> rows;
  for (const auto& s : t.streams) rows[s.rank].push_back(&s);
  for (auto& [r, v] : rows)
    std::stable_sort(v.begin(), v.end(), [](const auto* a, const auto* b) {
      return std::make_tuple(a->priority.value_or(0), a->stream) <
             std::make_tuple(b->priority.value_or(0), b->stream);
    });

  const double right = 24, top = 66, rank_head = 22, rank_gap = 14;
  f.left = 260;
  const double width = std::max(opt.width, f.left + right + 200);
  f.pw = width - f.left - right;
  // NVTX rows: lanes per rank (0: no range of that rank in the window, no row).
  std::map<int, std::vector<LanedRange>> laned;
  std::map<int, int> lanes;
  for (const auto& [r, v] : rows) laned[r] = lay_out_ranges(t, r, lo, hi, &lanes[r]);
  auto nvtx_row_h = [&](int r) { return lanes[r] > 0 ? lanes[r] * kLaneH + 4 : 0.0; };
  // The summary rows, and their totals over ranks for the legend.
  std::map<int, Summary> summaries;
  int64_t tot_overlap = 0, tot_wait = 0, tot_exposed = 0;
  for (const auto& [r, v] : rows) {
    const Summary& sm = summaries[r] = summary_of(t, r, lo, hi);
    tot_overlap += trace::total_length(sm.overlap);
    tot_wait += trace::total_length(sm.wait);
    tot_exposed += trace::total_length(sm.exposed);
  }
  double plot_h = 0;
  for (const auto& [r, v] : rows)
    plot_h +=
        rank_head + nvtx_row_h(r) + static_cast<double>(v.size()) * kRowH + kSumH + 6 + rank_gap;
  const double axis_y = top + plot_h;
  // The legend names NVTX ranges only when the picture shows some.
  std::vector<std::pair<const char*, std::string>> legend;
  bool any_ranges = false;
  for (const auto& [r, n] : lanes) any_ranges = any_ranges || n > 0;
  auto in_all = [&](int64_t ns) {
    return fmt::format(" ({} {} in all)", format_number(static_cast<double>(ns) / f.unit.div, 3),
                       f.unit.name);
  };
  for (const auto& e : kLegend) {
    if (std::string_view(e.first) == kNvtxColour && !any_ranges) continue;
    std::string what = e.second;
    if (std::string_view(e.first) == kOverlapColour) what += in_all(tot_overlap);
    if (std::string_view(e.first) == kWaitColour) what += in_all(tot_wait);
    if (std::string_view(e.first) == kExposedColour) what += in_all(tot_exposed);
    legend.push_back({e.first, what});
  }
  const double height = axis_y + 62 + 18.0 * legend_rows(legend, width);
  Svg svg(width, height);

  const std::string title = opt.title.empty() ? "ccoverlap timeline" : opt.title;
  svg.text(8, 22, title, 15, "start", "#222", "bold");
  const auto an = trace::analyze(t, {lo, hi});
  svg.text(8, 42,
           fmt::format("{} kernels, window {} {}; {}{}", an.kernels,
                       format_number(static_cast<double>(hi - lo) / f.unit.div, 3), f.unit.name,
                       // the measure and words of cco report's first line
                       std::isfinite(an.all.overlap_ratio)
                           ? fmt::format("communication {:.0f}% hidden (overlapped / comm busy)",
                                         100 * an.all.overlap_ratio)
                           : std::string("no communication"),
                       t.dropped_records ? fmt::format("; {} records DROPPED", t.dropped_records)
                                         : std::string()),
           11, "start", "#555");

  // Grid lines first, under everything.
  // Times on the axis count from the trace's first kernel, as cco report's --from/--to do.
  int64_t origin = lo;
  for (const auto& k : t.kernels) origin = std::min(origin, k.start_ns);
  const auto ticks = nice_ticks(static_cast<double>(lo - origin) / f.unit.div,
                                static_cast<double>(hi - origin) / f.unit.div, 10);
  auto xtick = [&](double v) {
    return f.left + f.pw * (v * f.unit.div - static_cast<double>(lo - origin)) /
                        static_cast<double>(hi - lo);
  };
  for (double v : ticks) {
    const double x = xtick(v);
    svg.line(x, top, x, axis_y, line_style("#e4e4e4", 1));
  }

  std::size_t total = 0;
  for (const auto& k : t.kernels)
    if (k.end_ns >= lo && k.start_ns <= hi) ++total;
  for (const auto& [r, v] : laned) total += v.size();
  f.tips = opt.tooltips && total <= 20000;
  svg.clip_rect("plot", f.left, top - 2, f.pw, plot_h + 4);

  double y = top;
  for (const auto& [rank, streams] : rows) {
    std::string head = fmt::format("rank {}", rank);
    for (const auto& r : t.ranks) {
      if (r.rank != rank) continue;
      head += fmt::format("  device {}", r.device);
      if (!r.device_name.empty()) head += "  " + r.device_name;
    }
    svg.text(8, y + 15, head, 13, "start", "#222", "bold");
    y += rank_head;
    if (lanes[rank] > 0) {  // the rank's NVTX ranges, a thin row above its streams
      draw_nvtx_row(svg, f, laned[rank], lanes[rank], y, nvtx_row_h(rank));
      y += nvtx_row_h(rank);
    }
    for (const auto* s : streams) {
      draw_stream_row(svg, f, t, rank, *s, y);
      y += kRowH;
    }
    draw_rank_summary(svg, f, summaries.at(rank), y);
    y += kSumH + 6 + rank_gap;
  }

  // Marks the program set (Session::mark): dashed lines over the rows, names at the top.
  std::size_t shown = 0;
  for (const auto& m : t.marks) {
    if (m.ts_ns < lo || m.ts_ns > hi || ++shown > 200) continue;
    const double x = f.x(m.ts_ns);
    svg.line(x, top - 4, x, axis_y, line_style("#777", 1, "3 3"));
    svg.text(x + 2, top - 6, m.rank >= 0 ? fmt::format("{} (rank {})", m.name, m.rank) : m.name, 9,
             "start", "#555");
  }

  // Time axis.
  svg.line(f.left, axis_y, f.left + f.pw, axis_y, line_style("#444", 1));
  for (double v : ticks) {
    const double x = xtick(v);
    svg.line(x, axis_y, x, axis_y + 5, line_style("#444", 1));
    svg.text(x, axis_y + 18, format_number(v, 3), 11, "middle", "#333");
  }
  svg.text(f.left + f.pw / 2, axis_y + 36,
           fmt::format("time ({}) after the first kernel", f.unit.name), 12, "middle", "#333");

  legend_rows(legend, width, &svg, axis_y + 56);  // wrapped to the width
  return svg;
}

}  // namespace cco::report
