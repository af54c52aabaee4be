#include "report/svg.hpp"

#include "model/read_file.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <stdexcept>

namespace cco::report {

std::string xml_escape(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&apos;";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') break;
        o += c;
    }
  }
  return o;
}

std::vector<double> nice_ticks(double lo, double hi, int max_ticks) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) return {};
  if (hi < lo) std::swap(lo, hi);
  if (hi == lo) return {lo};
  if (max_ticks < 1) max_ticks = 1;
  const double raw = (hi - lo) / max_ticks;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  std::vector<double> t;
  const double first = std::ceil(lo / step - 1e-9) * step;
  for (double v = first; v <= hi + step * 1e-9; v += step) {
    t.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
    if (t.size() > static_cast<std::size_t>(max_ticks) + 2) break;
  }
  return t;
}

std::string format_number(double v, int digits) {
  if (!std::isfinite(v)) return "n/a";
  std::string s = fmt::format("{:.{}f}", v, digits);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

namespace {
std::string n(double v) {
  return format_number(v, 2);
}
}  // namespace

Svg::Svg(double width, double height) : w_(width), h_(height) {}

std::string Svg::style_attrs(const Style& s) const {
  std::string a = " fill=\"" + xml_escape(s.fill) + "\"";
  if (s.stroke != "none") {
    a += " stroke=\"" + xml_escape(s.stroke) + "\" stroke-width=\"" + n(s.stroke_width) + "\"";
    if (!s.dash.empty()) a += " stroke-dasharray=\"" + xml_escape(s.dash) + "\"";
  }
  if (s.opacity < 1) a += " opacity=\"" + n(s.opacity) + "\"";
  return a;
}

void Svg::rect(double x, double y, double w, double h, const Style& s, std::string_view title) {
  ++elements_;
  body_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"{}", n(x), n(y), n(w),
                       n(h), style_attrs(s));
  if (title.empty())
    body_ += "/>\n";
  else
    body_ += "><title>" + xml_escape(title) + "</title></rect>\n";
}

void Svg::line(double x1, double y1, double x2, double y2, const Style& s) {
  ++elements_;
  Style st = s;
  if (st.stroke == "none") st.stroke = "#000";
  body_ += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"{}/>\n", n(x1), n(y1), n(x2),
                       n(y2), style_attrs(st));
}

void Svg::polyline(const std::vector<std::pair<double, double>>& pts, const Style& s) {
  if (pts.empty()) return;
  ++elements_;
  std::string p;
  for (const auto& [x, y] : pts) {
    if (!p.empty()) p += ' ';
    p += n(x);
    p += ',';
    p += n(y);
  }
  Style st = s;
  st.fill = "none";
  body_ += "<polyline points=\"" + p + "\"" + style_attrs(st) + "/>\n";
}

void Svg::circle(double cx, double cy, double r, const Style& s, std::string_view title) {
  ++elements_;
  body_ +=
      fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"{}\"{}", n(cx), n(cy), n(r), style_attrs(s));
  if (title.empty())
    body_ += "/>\n";
  else
    body_ += "><title>" + xml_escape(title) + "</title></circle>\n";
}

void Svg::text(double x, double y, std::string_view s, double size, std::string_view anchor,
               std::string_view fill, std::string_view weight, double rotate) {
  ++elements_;
  body_ += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"{}\" text-anchor=\"{}\" fill=\"{}\"",
                       n(x), n(y), n(size), xml_escape(anchor), xml_escape(fill));
  if (weight != "normal") body_ += " font-weight=\"" + xml_escape(weight) + "\"";
  if (rotate != 0) body_ += fmt::format(" transform=\"rotate({} {} {})\"", n(rotate), n(x), n(y));
  body_ += ">" + xml_escape(s) + "</text>\n";
}

void Svg::open_group(std::string_view clip_id) {
  ++depth_;
  if (clip_id.empty())
    body_ += "<g>\n";
  else
    body_ += "<g clip-path=\"url(#" + xml_escape(clip_id) + ")\">\n";
}

void Svg::close_group() {
  if (depth_ == 0) throw std::logic_error("Svg::close_group without open_group");
  --depth_;
  body_ += "</g>\n";
}

void Svg::clip_rect(std::string_view id, double x, double y, double w, double h) {
  defs_ += fmt::format(
      "<clipPath id=\"{}\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath>\n",
      xml_escape(id), n(x), n(y), n(w), n(h));
}

std::string Svg::str() const {
  if (depth_ != 0) throw std::logic_error("Svg::str with a group left open");
  std::string o = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n",
      n(w_), n(h_), n(w_), n(h_));
  if (!defs_.empty()) o += "<defs>\n" + defs_ + "</defs>\n";
  o +=
      "<rect x=\"0\" y=\"0\" width=\"" + n(w_) + "\" height=\"" + n(h_) + "\" fill=\"#ffffff\"/>\n";
  o += body_;
  o += "</svg>\n";
  return o;
}

void Svg::write(const std::string& path) const {
  model::write_file(path, str());  // whole or not at all
}

DiffAxis draw_diff_axis(Svg& svg, double left, double top, double width, double height, double lo,
                        double hi, double min_pad, const std::string& suffix) {
  const double span = hi - lo;
  const double pad = std::isfinite(span) ? std::max(span * 0.1, min_pad) : 0;
  const DiffAxis a{left, width, lo - pad, hi + pad};
  svg.rect(left, top, width, height, box_style("#fbfbfb", "#999", 1));
  for (double t : nice_ticks(a.lo, a.hi, 6)) {
    svg.line(a.px(t), top, a.px(t), top + height, line_style("#e3e3e3", 1));
    svg.text(a.px(t), top + height + 16, format_number(t, 3) + suffix, 11, "middle", "#333");
  }
  svg.line(a.px(0), top, a.px(0), top + height, line_style("#555", 1.5));
  return a;
}

}  // namespace cco::report
