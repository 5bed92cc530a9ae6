// File: util/svg_plot.h
//
// Small SVG plots for the reports kvsim writes (the HTML report, the quality curves): line plots (also CDFs
// and scatter plots), heat maps and grouped bar charts, each one self-contained <svg> element with an id,
// a title, axis labels, nice-number ticks and a legend. Overlapping series stay distinguishable: series i
// gets colour i mod 8 and a dash pattern that changes with i, so no two of the first 40 series look alike.
//
// Ticks follow Heckbert's nice numbers ("Nice numbers for graph labels", Graphics Gems, 1990): steps of
// 1, 2 or 5 x 10^k, the axis widened to whole steps. Log axes tick at powers of ten (and 2 and 5 times
// them when the axis spans fewer than three decades).
//
// Example:
//   LinePlotSpec spec{.id = "ttft-cdf", .title = "TTFT", .x_label = "TTFT (ms)", .y_label = "fraction"};
//   std::string svg = RenderLinePlot(spec, {{.name = "lru", .x = {1, 2}, .y = {0.5, 1}}});
//
// Stateless; thread-safe. Output is deterministic (fixed number formats).
#ifndef KVSIM_UTIL_SVG_PLOT_H_
#define KVSIM_UTIL_SVG_PLOT_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace kvsim {

// The axis range (widened to whole ticks) and its tick values, lowest first. step is 0 for log ticks.
struct Ticks {
  double lo = 0;
  double hi = 1;
  double step = 0;
  std::vector<double> values;
};

// Heckbert's nice number: 1, 2, 5 or 10 x 10^floor(log10 x) nearest `x` (round) or the smallest not
// below it (!round). REQUIRES: x > 0.
double NiceNumber(double x, bool round);

// Linear ticks over [lo, hi] with about `target_intervals` steps. A zero-width range is widened around its
// value (by 1, or by 10% of its magnitude); non-finite bounds give the ticks of [0, 1].
Ticks LinearTicks(double lo, double hi, int target_intervals = 5);

// Log-scale ticks over [lo, hi]: the axis runs from the power of ten at or below lo to the one at or above
// hi; ticks at every power of ten, plus 2x and 5x each when that spans fewer than 3 decades.
// REQUIRES: 0 < lo <= hi (a non-positive lo is treated as hi / 10).
Ticks LogTicks(double lo, double hi);

// A tick label with the decimals `step` needs (Heckbert: max(0, -floor(log10 step))), in units of k, M or G
// where step is at least 1e3, 1e6 or 1e9 (2000 at step 1000 -> "2k"). step 0 (log ticks): the shortest
// form of `value` in the same units (5000 -> "5k", 0.02 -> "0.02").
std::string FormatTick(double value, double step);

// A map from data values to pixels, linear or logarithmic (then REQUIRES d0, d1 > 0; values <= 0 map to r0).
struct Scale {
  double d0 = 0, d1 = 1;  // domain
  double r0 = 0, r1 = 1;  // pixel range (r1 < r0 for a y axis pointing up)
  bool log = false;
  double operator()(double v) const;
};

// The look of series i: colour and SVG stroke-dasharray ("" = solid).
struct SeriesStyle {
  const char* colour;
  const char* dash;
};
SeriesStyle StyleOf(int index);

// `text` with &, <, >, " escaped for XML text and attribute values.
std::string XmlEscape(absl::string_view text);

struct PlotSeries {
  std::string name;       // legend entry
  std::vector<double> x;  // same length as y; points with a non-finite coordinate are skipped
  std::vector<double> y;
  bool line = true;      // connect the points
  bool markers = false;  // draw each point
  int style = -1;        // index into StyleOf; -1 = the series' position in the plot
};

struct LinePlotSpec {
  std::string id;  // the <svg> element's id
  std::string title;
  std::string x_label;  // with units, e.g. "TTFT (ms)"
  std::string y_label;
  bool log_x = false;
  bool log_y = false;
  // Fixed axis bounds where finite (e.g. 0 and 1 for a fraction); otherwise from the data.
  double x_min = 0.0 / 0.0, x_max = 0.0 / 0.0;
  double y_min = 0.0 / 0.0, y_max = 0.0 / 0.0;
  bool diagonal = false;  // draw the y = x reference line (predicted vs measured)
  std::string note;       // a line under the title (e.g. "synthetic trace"); may be empty
  int width = 640;
  int height = 360;
};

// A line or scatter plot; series without any finite point are listed in the legend as "(no data)".
std::string RenderLinePlot(const LinePlotSpec& spec, const std::vector<PlotSeries>& series);

struct HeatMapSpec {
  std::string id;
  std::string title;
  std::string x_label;
  std::string y_label;
  std::string value_label;                  // what the colour shows, with units
  std::vector<std::string> x_categories;    // columns, left to right
  std::vector<std::string> y_categories;    // rows, top to bottom
  std::vector<std::vector<double>> values;  // [row][column]; NaN = missing (grey)
  std::string note;
  int width = 640;
};

// A heat map with every cell's value printed in it and a colour bar (low = light, high = dark).
std::string RenderHeatMap(const HeatMapSpec& spec);

struct BarChartSpec {
  std::string id;
  std::string title;
  std::string y_label;
  std::vector<std::string> categories;      // groups along x
  std::vector<std::string> series;          // bars within a group (legend)
  std::vector<std::vector<double>> values;  // [series][category]; NaN = no bar, labelled "n/a"
  std::string note;
  int width = 640;
  int height = 360;
};

// Grouped bars from 0, each with its value above it.
std::string RenderBarChart(const BarChartSpec& spec);

}  // namespace kvsim

#endif  // KVSIM_UTIL_SVG_PLOT_H_
