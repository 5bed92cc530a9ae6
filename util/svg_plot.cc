#include "util/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace kvsim {
namespace {

constexpr const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                    "#9467bd", "#8c564b", "#e377c2", "#17becf"};
constexpr const char* kDashes[] = {"", "6 3", "2 2", "8 3 2 3", "1 4"};
constexpr int kNumColours = sizeof(kColours) / sizeof(kColours[0]);
constexpr int kNumDashes = sizeof(kDashes) / sizeof(kDashes[0]);

// Plot-area margins (pixels) shared by the line plot and the bar chart; the right one holds the legend.
constexpr double kLeft = 72, kRight = 180, kTop = 48, kBottom = 48;

std::string Header(const std::string& id, int width, int height, const std::string& title, const std::string& note) {
  std::string out = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"%s\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"%g\" y=\"18\" font-size=\"14\" font-weight=\"bold\">%s</text>\n",
      XmlEscape(id), width, height, width, height, kLeft, XmlEscape(title));
  if (!note.empty()) {
    absl::StrAppend(&out, absl::StrFormat("<text x=\"%g\" y=\"34\" font-size=\"11\" fill=\"#555\">%s</text>\n", kLeft,
                                          XmlEscape(note)));
  }
  return out;
}

std::string DashAttr(const SeriesStyle& s) {
  return s.dash[0] == '\0' ? std::string() : absl::StrFormat(" stroke-dasharray=\"%s\"", s.dash);
}

// Decimal exponent of a nice step (1, 2 or 5 x 10^k -> k).
int StepExponent(double step) { return static_cast<int>(std::floor(std::log10(step) + 1e-9)); }

// The unit (1, 1e3, 1e6, 1e9) and its suffix for magnitude `m`.
std::pair<double, const char*> Unit(double m) {
  if (m >= 1e9) return {1e9, "G"};
  if (m >= 1e6) return {1e6, "M"};
  if (m >= 1e3) return {1e3, "k"};
  return {1, ""};
}

// Axis labels: y rotated on the left, x centred below.
std::string AxisLabels(const std::string& x_label, const std::string& y_label, double left, double top, double pw,
                       double ph) {
  return absl::StrCat(absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"12\">%s</text>\n",
                                      left + pw / 2, top + ph + 38, XmlEscape(x_label)),
                      absl::StrFormat("<text x=\"16\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"12\" "
                                      "transform=\"rotate(-90 16 %.1f)\">%s</text>\n",
                                      top + ph / 2, top + ph / 2, XmlEscape(y_label)));
}

Ticks AxisTicks(bool log, double lo, double hi) { return log ? LogTicks(lo, hi) : LinearTicks(lo, hi); }

}  // namespace

double NiceNumber(double x, bool round) {
  const double exponent = std::floor(std::log10(x));
  const double fraction = x / std::pow(10.0, exponent);
  double nice;
  if (round) {
    nice = fraction < 1.5 ? 1 : fraction < 3 ? 2 : fraction < 7 ? 5 : 10;
  } else {
    nice = fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10;
  }
  return nice * std::pow(10.0, exponent);
}

Ticks LinearTicks(double lo, double hi, int target_intervals) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) {
    lo = 0;
    hi = 1;
  }
  if (lo > hi) std::swap(lo, hi);
  if (hi == lo) {
    const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  const double range = NiceNumber(hi - lo, false);
  const double step = NiceNumber(range / std::max(1, target_intervals - 1), true);
  Ticks t;
  t.step = step;
  t.lo = std::floor(lo / step + 1e-9) * step;
  t.hi = std::ceil(hi / step - 1e-9) * step;
  const int n = static_cast<int>(std::llround((t.hi - t.lo) / step));
  for (int i = 0; i <= n; ++i) {
    double v = t.lo + i * step;
    if (std::abs(v) < step * 1e-9) v = 0;  // no "-0"
    t.values.push_back(v);
  }
  return t;
}

Ticks LogTicks(double lo, double hi) {
  if (!(hi > 0) || !std::isfinite(hi)) hi = 1;
  if (!(lo > 0) || !std::isfinite(lo)) lo = hi / 10;
  if (lo > hi) std::swap(lo, hi);
  int d0 = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  int d1 = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  if (d1 <= d0) d1 = d0 + 1;
  Ticks t;
  t.lo = std::pow(10.0, d0);
  t.hi = std::pow(10.0, d1);
  const bool fine = d1 - d0 < 3;
  for (int d = d0; d <= d1; ++d) {
    const double p = std::pow(10.0, d);
    t.values.push_back(p);
    if (fine && d < d1) {
      t.values.push_back(2 * p);
      t.values.push_back(5 * p);
    }
  }
  return t;
}

std::string FormatTick(double value, double step) {
  if (step > 0) {
    const auto [unit, suffix] = Unit(step);
    const int decimals = std::max(0, -StepExponent(step / unit));
    if (std::abs(value) < step * 1e-9) return absl::StrFormat("%.*f", decimals, 0.0);  // no "-0", no "0k"
    return absl::StrCat(absl::StrFormat("%.*f", decimals, value / unit), suffix);
  }
  const auto [unit, suffix] = Unit(std::abs(value));
  return absl::StrCat(absl::StrFormat("%g", value / unit), suffix);
}

double Scale::operator()(double v) const {
  double a = v, lo = d0, hi = d1;
  if (log) {
    if (!(v > 0)) return r0;
    a = std::log10(v);
    lo = std::log10(d0);
    hi = std::log10(d1);
  }
  const double t = hi > lo ? (a - lo) / (hi - lo) : 0.5;
  return r0 + t * (r1 - r0);
}

SeriesStyle StyleOf(int index) {
  const int i = std::max(0, index);
  return {kColours[i % kNumColours], kDashes[(i + i / kNumColours) % kNumDashes]};
}

std::string XmlEscape(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string RenderLinePlot(const LinePlotSpec& spec, const std::vector<PlotSeries>& series) {
  const double pw = spec.width - kLeft - kRight, ph = spec.height - kTop - kBottom;
  // Data bounds over the finite points (positive ones on a log axis).
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double x0 = kInf, x1 = -kInf, y0 = kInf, y1 = -kInf;
  auto usable = [](double v, bool log) { return std::isfinite(v) && (!log || v > 0); };
  for (const PlotSeries& s : series) {
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!usable(s.x[i], spec.log_x) || !usable(s.y[i], spec.log_y)) continue;
      x0 = std::min(x0, s.x[i]);
      x1 = std::max(x1, s.x[i]);
      y0 = std::min(y0, s.y[i]);
      y1 = std::max(y1, s.y[i]);
    }
  }
  if (std::isfinite(spec.x_min)) x0 = spec.x_min;
  if (std::isfinite(spec.x_max)) x1 = spec.x_max;
  if (std::isfinite(spec.y_min)) y0 = spec.y_min;
  if (std::isfinite(spec.y_max)) y1 = spec.y_max;
  if (spec.diagonal && std::isfinite(x0) && std::isfinite(y0)) {  // one range for both axes
    x0 = y0 = std::min(x0, y0);
    x1 = y1 = std::max(x1, y1);
  }
  const Ticks xt = AxisTicks(spec.log_x, x0, x1), yt = AxisTicks(spec.log_y, y0, y1);
  const Scale sx{xt.lo, xt.hi, kLeft, kLeft + pw, spec.log_x};
  const Scale sy{yt.lo, yt.hi, kTop + ph, kTop, spec.log_y};

  std::string out = Header(spec.id, spec.width, spec.height, spec.title, spec.note);
  for (double v : xt.values) {
    const double px = sx(v);
    absl::StrAppend(&out,
                    absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n", px,
                                    kTop, px, kTop + ph),
                    absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", px,
                                    kTop + ph + 15, FormatTick(v, xt.step)));
  }
  for (double v : yt.values) {
    const double py = sy(v);
    absl::StrAppend(&out,
                    absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n",
                                    kLeft, py, kLeft + pw, py),
                    absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", kLeft - 5, py + 4,
                                    FormatTick(v, yt.step)));
  }
  absl::StrAppend(
      &out,
      absl::StrFormat("<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" stroke=\"#444\"/>\n", kLeft,
                      kTop, pw, ph),
      AxisLabels(spec.x_label, spec.y_label, kLeft, kTop, pw, ph));
  if (spec.diagonal) {
    absl::StrAppend(&out, absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\" "
                                          "stroke-dasharray=\"4 3\"/>\n",
                                          sx(xt.lo), sy(xt.lo), sx(xt.hi), sy(xt.hi)));
  }
  double legend_y = kTop + 8;
  for (size_t k = 0; k < series.size(); ++k) {
    const PlotSeries& s = series[k];
    const SeriesStyle style = StyleOf(s.style >= 0 ? s.style : static_cast<int>(k));
    std::vector<std::string> points;
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!usable(s.x[i], spec.log_x) || !usable(s.y[i], spec.log_y)) continue;
      points.push_back(absl::StrFormat("%.1f,%.1f", sx(s.x[i]), sy(s.y[i])));
    }
    absl::StrAppend(&out, "<g class=\"series\">\n");
    if (s.line && points.size() > 1) {
      absl::StrAppend(&out, absl::StrFormat("<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\"%s "
                                            "points=\"%s\"/>\n",
                                            style.colour, DashAttr(style), absl::StrJoin(points, " ")));
    }
    if (s.markers || points.size() == 1) {
      for (const std::string& p : points) {
        const size_t comma = p.find(',');
        absl::StrAppend(&out, absl::StrFormat("<circle cx=\"%s\" cy=\"%s\" r=\"2.5\" fill=\"%s\"/>\n",
                                              p.substr(0, comma), p.substr(comma + 1), style.colour));
      }
    }
    absl::StrAppend(&out, "</g>\n");
    // Legend: a short stretch of the series' own stroke, then its name.
    const double lx = kLeft + pw + 10;
    if (s.line) {
      absl::StrAppend(&out, absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                                            "stroke-width=\"1.8\"%s/>\n",
                                            lx, legend_y, lx + 26, legend_y, style.colour, DashAttr(style)));
    } else {
      absl::StrAppend(&out, absl::StrFormat("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", lx + 13,
                                            legend_y, style.colour));
    }
    absl::StrAppend(&out, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\">%s%s</text>\n", lx + 31, legend_y + 4,
                                          XmlEscape(s.name), points.empty() ? " (no data)" : ""));
    legend_y += 16;
  }
  if (spec.diagonal) {
    absl::StrAppend(&out, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\">dashed black: y = x</text>\n", kLeft + pw + 10,
                                          legend_y + 4));
  }
  return out + "</svg>\n";
}

std::string RenderHeatMap(const HeatMapSpec& spec) {
  const int cols = std::max<int>(1, spec.x_categories.size());
  const int rows = std::max<int>(1, spec.y_categories.size());
  const double left = 110, right = 110, cell_w = (spec.width - left - right) / cols, cell_h = 28;
  const double ph = rows * cell_h;
  const int height = static_cast<int>(kTop + ph + kBottom);
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& row : spec.values) {
    for (double v : row) {
      if (!std::isfinite(v)) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  // Blue ramp from light (low) to dark (high); the text turns white on dark cells.
  auto shade = [&](double v) {
    const double t = hi > lo ? (v - lo) / (hi - lo) : 0.5;
    const int r = static_cast<int>(std::lround(235 - t * (235 - 8)));
    const int g = static_cast<int>(std::lround(243 - t * (243 - 48)));
    const int b = static_cast<int>(std::lround(251 - t * (251 - 107)));
    return std::make_pair(absl::StrFormat("#%02x%02x%02x", r, g, b), t > 0.55);
  };
  const Ticks vt = LinearTicks(lo, hi, 5);
  std::string out = Header(spec.id, spec.width, height, spec.title, spec.note);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      const double v = r < static_cast<int>(spec.values.size()) && c < static_cast<int>(spec.values[r].size())
                           ? spec.values[r][c]
                           : std::numeric_limits<double>::quiet_NaN();
      const double x = left + c * cell_w, y = kTop + r * cell_h;
      const bool have = std::isfinite(v);
      const auto [fill, dark] = have ? shade(v) : std::make_pair(std::string("#cccccc"), false);
      absl::StrAppend(&out,
                      absl::StrFormat("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
                                      "stroke=\"white\"/>\n",
                                      x, y, cell_w, cell_h, fill),
                      absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"%s\">%s</text>\n",
                                      x + cell_w / 2, y + cell_h / 2 + 4, dark ? "white" : "black",
                                      have ? absl::StrFormat("%.4g", v) : std::string("n/a")));
    }
  }
  for (int c = 0; c < static_cast<int>(spec.x_categories.size()); ++c) {
    absl::StrAppend(&out, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                                          left + (c + 0.5) * cell_w, kTop + ph + 15, XmlEscape(spec.x_categories[c])));
  }
  for (int r = 0; r < static_cast<int>(spec.y_categories.size()); ++r) {
    absl::StrAppend(&out, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", left - 5,
                                          kTop + (r + 0.5) * cell_h + 4, XmlEscape(spec.y_categories[r])));
  }
  absl::StrAppend(&out,
                  absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"12\">%s</text>\n",
                                  left + cols * cell_w / 2, kTop + ph + 38, XmlEscape(spec.x_label)),
                  absl::StrFormat("<text x=\"14\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"12\" "
                                  "transform=\"rotate(-90 14 %.1f)\">%s</text>\n",
                                  kTop + ph / 2, kTop + ph / 2, XmlEscape(spec.y_label)));
  // Colour bar with the value's ticks.
  const double bx = spec.width - right + 20, bw = 14;
  if (std::isfinite(lo)) {
    constexpr int kSteps = 20;
    for (int i = 0; i < kSteps; ++i) {
      const double v = hi - (hi - lo) * (i + 0.5) / kSteps;
      absl::StrAppend(&out,
                      absl::StrFormat("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n", bx,
                                      kTop + ph * i / kSteps, bw, ph / kSteps + 0.5, shade(v).first));
    }
    const Scale sv{lo, hi > lo ? hi : lo + 1, kTop + ph, kTop, false};
    for (double v : vt.values) {
      if (v < lo - 1e-12 * std::abs(lo) || v > hi + 1e-12 * std::abs(hi)) continue;
      absl::StrAppend(&out, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", bx + bw + 4, sv(v) + 4,
                                            FormatTick(v, vt.step)));
    }
  }
  absl::StrAppend(&out, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%s</text>\n", bx - 10, kTop - 6,
                                        XmlEscape(spec.value_label)));
  return out + "</svg>\n";
}

std::string RenderBarChart(const BarChartSpec& spec) {
  const double pw = spec.width - kLeft - kRight, ph = spec.height - kTop - kBottom;
  double hi = 0;
  for (const auto& s : spec.values) {
    for (double v : s) {
      if (std::isfinite(v)) hi = std::max(hi, v);
    }
  }
  const Ticks yt = LinearTicks(0, hi > 0 ? hi : 1);
  const Scale sy{yt.lo, yt.hi, kTop + ph, kTop, false};
  std::string out = Header(spec.id, spec.width, spec.height, spec.title, spec.note);
  for (double v : yt.values) {
    absl::StrAppend(&out,
                    absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n",
                                    kLeft, sy(v), kLeft + pw, sy(v)),
                    absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", kLeft - 5, sy(v) + 4,
                                    FormatTick(v, yt.step)));
  }
  const int groups = std::max<int>(1, spec.categories.size());
  const int bars = std::max<int>(1, spec.series.size());
  const double group_w = pw / groups, bar_w = group_w * 0.8 / bars;
  for (int s = 0; s < static_cast<int>(spec.series.size()); ++s) {
    const SeriesStyle style = StyleOf(s);
    for (int c = 0; c < static_cast<int>(spec.categories.size()); ++c) {
      const double v = s < static_cast<int>(spec.values.size()) && c < static_cast<int>(spec.values[s].size())
                           ? spec.values[s][c]
                           : std::numeric_limits<double>::quiet_NaN();
      const double x = kLeft + c * group_w + group_w * 0.1 + s * bar_w;
      if (!std::isfinite(v)) {
        absl::StrAppend(&out, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#777\">n/a"
                                              "</text>\n",
                                              x + bar_w / 2, kTop + ph - 4));
        continue;
      }
      // Bars alternate solid and hatched fills (via opacity) besides their colour.
      absl::StrAppend(
          &out,
          absl::StrFormat("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
                          "fill-opacity=\"%s\" stroke=\"%s\"/>\n",
                          x, sy(v), bar_w * 0.92, kTop + ph - sy(v), style.colour, s % 2 == 0 ? "0.9" : "0.45",
                          style.colour),
          absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"10\">%.4g</text>\n",
                          x + bar_w * 0.46, sy(v) - 3, v));
    }
  }
  for (int c = 0; c < static_cast<int>(spec.categories.size()); ++c) {
    absl::StrAppend(&out, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                                          kLeft + (c + 0.5) * group_w, kTop + ph + 15, XmlEscape(spec.categories[c])));
  }
  absl::StrAppend(
      &out,
      absl::StrFormat("<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" stroke=\"#444\"/>\n", kLeft,
                      kTop, pw, ph),
      AxisLabels("result set", spec.y_label, kLeft, kTop, pw, ph));
  double ly = kTop + 8;
  for (int s = 0; s < static_cast<int>(spec.series.size()); ++s) {
    const SeriesStyle style = StyleOf(s);
    absl::StrAppend(
        &out,
        absl::StrFormat("<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"10\" fill=\"%s\" "
                        "fill-opacity=\"%s\" stroke=\"%s\"/>\n",
                        kLeft + pw + 10, ly - 5, style.colour, s % 2 == 0 ? "0.9" : "0.45", style.colour),
        absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", kLeft + pw + 30, ly + 4, XmlEscape(spec.series[s])));
    ly += 16;
  }
  return out + "</svg>\n";
}

}  // namespace kvsim
