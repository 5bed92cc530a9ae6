#include "sim/select/select_report.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "util/svg_plot.h"

namespace kvsim {
namespace {

std::string Num(double v) { return absl::StrFormat("%.6g", v); }

std::string Quote(absl::string_view text) {
  if (text.find_first_of(",\"\r\n") == absl::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// White (0) to dark blue (1).
std::string CsrColour(double v) {
  v = std::clamp(v, 0.0, 1.0);
  const int r = static_cast<int>(247 - v * (247 - 8)), g = static_cast<int>(251 - v * (251 - 48)),
            b = static_cast<int>(255 - v * (255 - 107));
  return absl::StrFormat("#%02x%02x%02x", r, g, b);
}

// Red (negative) - white (0) - green (positive), saturating at +-0.2.
std::string GainColour(double v) {
  const double t = std::clamp(std::abs(v) / 0.2, 0.0, 1.0);
  const int fade = static_cast<int>(255 - t * 175);
  return v >= 0 ? absl::StrFormat("#%02xff%02x", fade, fade) : absl::StrFormat("#ff%02x%02x", fade, fade);
}

}  // namespace

std::string CsrGridCsv(const OutcomeTable& table, const CsrSurface& surface) {
  std::string out =
      "latency_ms,memory_mb,feasible,infeasible_prompts,selector_csr,best_static_csr,best_static_config,"
      "oracle_csr,gain_over_best_static,fallbacks\n";
  for (const CsrPoint& p : surface.points) {
    absl::StrAppend(&out, Num(p.budget.latency_ms), ",", Num(p.budget.memory_mb), ",", p.feasible ? 1 : 0, ",",
                    p.infeasible_prompts, ",");
    if (p.feasible) {
      absl::StrAppend(&out, Num(p.selector), ",", Num(p.best_static), ",",
                      Quote(table.candidates[p.best_static_candidate]), ",", Num(p.oracle), ",",
                      Num(p.selector - p.best_static), ",", p.fallbacks, "\n");
    } else {
      absl::StrAppend(&out, ",,,,,", p.fallbacks, "\n");
    }
  }
  return out;
}

std::string CsrGridSvg(const OutcomeTable& table, const CsrSurface& surface, const std::string& title) {
  const int nl = static_cast<int>(surface.latency_grid_ms.size()), nm = static_cast<int>(surface.memory_grid_mb.size());
  const int cell = 36, margin_left = 70, margin_top = 60, panel_gap = 40, label_h = 60;
  const int panel_w = std::max(1, nl) * cell, panel_h = std::max(1, nm) * cell;
  const int width = margin_left + 4 * (panel_w + panel_gap), height = margin_top + panel_h + label_h + 30;
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
      "font-size=\"10\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
      width, height);
  absl::StrAppend(&svg, "<text x=\"10\" y=\"18\" font-size=\"14\">", XmlEscape(title), "</text>\n");
  absl::StrAppend(&svg, "<text x=\"10\" y=\"36\" font-size=\"11\">",
                  XmlEscape(absl::StrFormat("%d prompts x %d configurations; CSR gain of the selector over the best "
                                            "static configuration: mean %+.3f, max %+.3f over %d feasible budgets",
                                            table.num_prompts(), table.num_candidates(), surface.mean_gain,
                                            surface.max_gain, surface.feasible_points)),
                  "</text>\n");
  const char* names[] = {"selector CSR", "best static CSR", "oracle CSR", "selector - best static"};
  for (int panel = 0; panel < 4; ++panel) {
    const int x0 = margin_left + panel * (panel_w + panel_gap);
    absl::StrAppend(&svg, absl::StrFormat("<text x=\"%d\" y=\"%d\" font-size=\"12\">%s</text>\n", x0, margin_top - 6,
                                          names[panel]));
    for (int l = 0; l < nl; ++l) {
      for (int m = 0; m < nm; ++m) {
        const CsrPoint& p = surface.points[static_cast<size_t>(l) * nm + m];
        const int x = x0 + l * cell, y = margin_top + (nm - 1 - m) * cell;  // memory grows upwards
        if (!p.feasible) {
          absl::StrAppend(&svg, absl::StrFormat("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#bbbbbb\" "
                                                "stroke=\"white\"/><text x=\"%d\" y=\"%d\" text-anchor=\"middle\">"
                                                "&#215;</text>\n",
                                                x, y, cell, cell, x + cell / 2, y + cell / 2 + 4));
          continue;
        }
        const double v = panel == 0   ? p.selector
                         : panel == 1 ? p.best_static
                         : panel == 2 ? p.oracle
                                      : p.selector - p.best_static;
        const std::string fill = panel == 3 ? GainColour(v) : CsrColour(v);
        const char* ink = panel != 3 && v > 0.55 ? "white" : "black";
        absl::StrAppend(&svg, absl::StrFormat("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" "
                                              "stroke=\"white\"/><text x=\"%d\" y=\"%d\" text-anchor=\"middle\" "
                                              "fill=\"%s\">%s</text>\n",
                                              x, y, cell, cell, fill, x + cell / 2, y + cell / 2 + 4, ink,
                                              panel == 3 ? absl::StrFormat("%+.2f", v) : absl::StrFormat("%.2f", v)));
      }
    }
    for (int l = 0; l < nl; ++l) {
      absl::StrAppend(&svg,
                      absl::StrFormat("<text x=\"%d\" y=\"%d\" text-anchor=\"end\" transform=\"rotate(-45 %d "
                                      "%d)\">%s</text>\n",
                                      x0 + l * cell + cell / 2, margin_top + panel_h + 12, x0 + l * cell + cell / 2,
                                      margin_top + panel_h + 12, absl::StrFormat("%.4g", surface.latency_grid_ms[l])));
    }
    absl::StrAppend(&svg, absl::StrFormat("<text x=\"%d\" y=\"%d\">latency budget L (ms)</text>\n", x0,
                                          margin_top + panel_h + label_h));
    if (panel == 0) {
      for (int m = 0; m < nm; ++m) {
        absl::StrAppend(&svg, absl::StrFormat("<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n", x0 - 4,
                                              margin_top + (nm - 1 - m) * cell + cell / 2 + 4,
                                              absl::StrFormat("%.6g", surface.memory_grid_mb[m])));
      }
      absl::StrAppend(&svg, absl::StrFormat("<text x=\"12\" y=\"%d\" transform=\"rotate(-90 12 %d)\" "
                                            "text-anchor=\"middle\">memory budget M (MiB)</text>\n",
                                            margin_top + panel_h / 2, margin_top + panel_h / 2));
    }
  }
  svg += "</svg>\n";
  return svg;
}

std::string SelectionsCsv(const OutcomeTable& table, const std::vector<Prediction>& predictions,
                          const CsrPoint& point) {
  std::string out =
      "prompt_id,config,fallback,predicted_p_correct,predicted_latency_ms,predicted_peak_memory_mb,correct,"
      "latency_ms,peak_memory_mb,success\n";
  for (int p = 0; p < table.num_prompts(); ++p) {
    const int c = point.selection.choice[p];
    const Prediction& pr = predictions[static_cast<size_t>(p) * table.num_candidates() + c];
    const Outcome& o = table.at(p, c);
    absl::StrAppend(&out, Quote(table.prompt_ids[p]), ",", Quote(table.candidates[c]), ",",
                    point.selection.fallback[p] ? 1 : 0, ",", Num(pr.p_correct), ",", Num(pr.latency_ms), ",",
                    Num(pr.peak_memory_mb), ",", o.correct ? 1 : 0, ",", Num(o.latency_ms), ",", Num(o.peak_memory_mb),
                    ",", Succeeds(o, point.budget) ? 1 : 0, "\n");
  }
  return out;
}

std::string CalibrationCsv(const Calibration& calibration) {
  std::string out = "lower,upper,count,mean_predicted,observed_rate\n";
  for (const ReliabilityBin& b : calibration.bins) {
    absl::StrAppend(&out, Num(b.lower), ",", Num(b.upper), ",", b.count, ",", b.count ? Num(b.mean_predicted) : "", ",",
                    b.count ? Num(b.observed_rate) : "", "\n");
  }
  return out;
}

std::string FeatureImportanceCsv(const OutcomeTable& table, const std::vector<double>& importance) {
  std::string out = "feature,importance\n";
  for (size_t i = 0; i < importance.size() && i < table.feature_names.size(); ++i) {
    absl::StrAppend(&out, Quote(table.feature_names[i]), ",", Num(importance[i]), "\n");
  }
  return out;
}

std::string FormatCalibration(const Calibration& c) {
  std::string out = absl::StrFormat(
      "P(correct) on held-out prompts (%d rows): Brier %.4f (no-skill %.4f); latency error %.1f%%, memory "
      "error %.1f%% (mean |predicted - actual| / actual)\n  reliability:  bin        rows  predicted  observed\n",
      c.rows, c.brier, c.brier_no_skill, 100 * c.latency_mape, 100 * c.memory_mape);
  for (const ReliabilityBin& b : c.bins) {
    if (b.count == 0) continue;
    absl::StrAppend(&out, absl::StrFormat("                [%.1f, %.1f)  %5d  %9.3f  %8.3f\n", b.lower, b.upper,
                                          b.count, b.mean_predicted, b.observed_rate));
  }
  return out;
}

std::string FormatFeatureImportance(const OutcomeTable& table, const std::vector<double>& importance) {
  if (importance.empty()) return "feature importance: none (the models use no feature)\n";
  std::vector<int> order(importance.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return importance[a] > importance[b]; });
  std::string out = "features carrying P(correct) (share of importance):";
  for (int i : order) absl::StrAppend(&out, " ", table.feature_names[i], " ", absl::StrFormat("%.3f", importance[i]));
  return out + "\n";
}

std::string FormatCsrPoint(const OutcomeTable& table, const CsrPoint& p) {
  std::string out = absl::StrFormat("budget L = %.6g ms, M = %.6g MiB:\n", p.budget.latency_ms, p.budget.memory_mb);
  if (!p.feasible) {
    return out + absl::StrFormat(
                     "  infeasible: no configuration meets this budget for any of the %d prompts "
                     "(CSR is 0 for every selector)\n",
                     table.num_prompts());
  }
  absl::StrAppend(&out, absl::StrFormat("  selector CSR     %.4f  (fallback on %d prompt(s): none predicted to fit)\n",
                                        p.selector, p.fallbacks));
  absl::StrAppend(&out, absl::StrFormat("  best static CSR  %.4f  (%s)\n", p.best_static,
                                        table.candidates[p.best_static_candidate]));
  absl::StrAppend(&out, absl::StrFormat("  oracle CSR       %.4f\n", p.oracle));
  absl::StrAppend(&out, absl::StrFormat("  gain over best static %+.4f; %d prompt(s) no configuration can serve "
                                        "within the budget\n",
                                        p.selector - p.best_static, p.infeasible_prompts));
  return out;
}

std::string FormatCsrSurface(const OutcomeTable& table, const CsrSurface& s) {
  const int total = static_cast<int>(s.points.size());
  std::string out = absl::StrFormat("grid: %d latency x %d memory budgets, %d feasible", s.latency_grid_ms.size(),
                                    s.memory_grid_mb.size(), s.feasible_points);
  if (s.feasible_points < total) {
    absl::StrAppend(&out, absl::StrFormat(", %d infeasible (no configuration meets them for any prompt; left out of "
                                          "the gains)",
                                          total - s.feasible_points));
  }
  out += "\n";
  if (s.feasible_points == 0) return out + "  no feasible budget on the grid: no CSR gain to report\n";
  double selector = 0, statics = 0, oracle = 0;
  for (const CsrPoint& p : s.points) {
    if (!p.feasible) continue;
    selector += p.selector;
    statics += p.best_static;
    oracle += p.oracle;
  }
  absl::StrAppend(
      &out, absl::StrFormat("  mean CSR: selector %.4f, best static %.4f, oracle %.4f\n", selector / s.feasible_points,
                            statics / s.feasible_points, oracle / s.feasible_points));
  absl::StrAppend(&out, absl::StrFormat("  CSR gain over best static: mean %+.4f, max %+.4f (oracle: mean %+.4f)\n",
                                        s.mean_gain, s.max_gain, s.mean_oracle_gain));
  return out;
}

}  // namespace kvsim
