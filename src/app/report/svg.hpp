// A small SVG writer: just the shapes the timeline and the sweep chart need, every attribute
// escaped, numbers printed with a fixed precision so files are stable. GPU-free.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cco::report {

/// Escapes &, <, >, " and ' for text and attribute values; drops control characters XML forbids.
std::string xml_escape(std::string_view s);

/// Round tick values covering [lo, hi]: steps of 1, 2 or 5 times a power of ten, at most
/// max_ticks + 1 of them, all inside [lo, hi]. lo == hi gives {lo}. Non-finite input gives {}.
std::vector<double> nice_ticks(double lo, double hi, int max_ticks = 8);

/// "12.5" style: the shortest of up to `digits` decimals that shows v (trailing zeros dropped).
std::string format_number(double v, int digits = 3);

struct Style {
  std::string fill = "none";
  std::string stroke = "none";
  double stroke_width = 1;
  std::string dash;  ///< stroke-dasharray, e.g. "4 3"
  double opacity = 1;
};

inline Style fill_style(std::string fill) {
  Style s;
  s.fill = std::move(fill);
  return s;
}
inline Style line_style(std::string stroke, double width = 1, std::string dash = {}) {
  Style s;
  s.stroke = std::move(stroke);
  s.stroke_width = width;
  s.dash = std::move(dash);
  return s;
}
inline Style box_style(std::string fill, std::string stroke, double width = 1) {
  Style s;
  s.fill = std::move(fill);
  s.stroke = std::move(stroke);
  s.stroke_width = width;
  return s;
}

/// An SVG document of a fixed size in pixels. Elements appear in call order (later on top).
class Svg {
 public:
  Svg(double width, double height);

  double width() const { return w_; }
  double height() const { return h_; }

  /// A rectangle; `title` (if not empty) becomes a tooltip in browsers.
  void rect(double x, double y, double w, double h, const Style& s, std::string_view title = {});
  void line(double x1, double y1, double x2, double y2, const Style& s);
  void polyline(const std::vector<std::pair<double, double>>& pts, const Style& s);
  void circle(double cx, double cy, double r, const Style& s, std::string_view title = {});
  /// anchor: "start", "middle" or "end"; rotate in degrees about (x, y).
  void text(double x, double y, std::string_view s, double size = 12,
            std::string_view anchor = "start", std::string_view fill = "#222",
            std::string_view weight = "normal", double rotate = 0);
  /// Groups nest; every open_group needs a close_group before str().
  void open_group(std::string_view clip_id = {});
  void close_group();
  /// A clip rectangle usable by open_group(id).
  void clip_rect(std::string_view id, double x, double y, double w, double h);

  std::size_t elements() const { return elements_; }
  /// The whole document. Throws std::logic_error when a group is left open.
  std::string str() const;
  /// Writes str() to path; throws std::runtime_error when it cannot.
  void write(const std::string& path) const;

 private:
  std::string style_attrs(const Style& s) const;
  double w_, h_;
  std::string defs_, body_;
  int depth_ = 0;
  std::size_t elements_ = 0;
};

/// The horizontal axis of a chart of differences (the run comparison's, two results'): [lo, hi]
/// widened by a tenth (at least `min_pad`) each side, the plot's frame, round ticks labelled with
/// `suffix`, and the line through zero. Returns where a value is drawn.
struct DiffAxis {
  double left, width, lo, hi;
  /// Inside the plot whatever the range (a range too wide for a double draws in its middle).
  double px(double v) const {
    const double f = (v - lo) / (hi - lo);
    return left + (std::isfinite(f) ? std::clamp(f, 0.0, 1.0) : 0.5) * width;
  }
};
DiffAxis draw_diff_axis(Svg& svg, double left, double top, double width, double height, double lo,
                        double hi, double min_pad, const std::string& suffix);

}  // namespace cco::report
