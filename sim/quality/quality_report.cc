#include "sim/quality/quality_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "util/file.h"
#include "util/json_text.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

std::string Budget(const QualityPoint& p) {
  return p.is_ratio ? absl::StrFormat("%gx", p.budget_value)
                    : absl::StrFormat("%d", static_cast<int64_t>(p.budget_value));
}

std::string Num(double x) {
  if (std::isnan(x)) return "nan";
  return absl::StrFormat("%.6f", x);
}

std::string TraceLabel(const QualityResults& r) { return r.synthetic ? "synthetic" : "recorded"; }

// `tail_key` names the bad-tail percentile as the CSV does: p10 for recall and overlap (low is bad), p90
// for the error (high is bad).
Json Summary(const MetricSummary& m, const char* tail_key) {
  Json out = Json::object();
  out["mean"] = JsonNumberOrNull(m.mean);
  out[tail_key] = JsonNumberOrNull(m.p10);
  out["worst"] = JsonNumberOrNull(m.worst);
  out["count"] = m.count;
  return out;
}

Json Doubles(const std::vector<double>& v) {
  Json out = Json::array();
  for (double x : v) out.push_back(JsonNumberOrNull(x));
  return out;
}

}  // namespace

std::string FormatQualityTable(const QualityResults& r) {
  std::string out = absl::StrFormat(
      "quality of token policies on %s trace '%s': %d samples, %d decode steps, %d kept layers x %d KV heads\n",
      r.synthetic ? "a SYNTHETIC" : "a recorded", r.model, r.num_samples, r.num_decode_steps, r.kept_layers.size(),
      r.kept_kv_heads.size());
  out += "recall = attention mass kept; error = ||o - o'|| / ||o||; p10 = the worst 10% boundary\n";
  out += absl::StrFormat("%-22s %-9s %-8s %9s %9s %9s %9s %9s %9s %9s %9s\n", "policy", "kind", "budget", "tokens",
                         "recall", "rec_p10", "rec_min", "error", "err_p90", "err_max", absl::StrCat("top", r.top_k));
  for (const QualityPoint& p : r.points) {
    out += absl::StrFormat("%-22s %-9s %-8s %9.1f %9.4f %9.4f %9.4f %9.4f %9.4f %9.4f %9.4f\n", p.policy, p.kind,
                           Budget(p), p.mean_kept_tokens, p.recall.mean, p.recall.p10, p.recall.worst, p.error.mean,
                           p.error.p10, p.error.worst, p.overlap.mean);
  }
  out += "areas under the curves (ratio to oracle_select; recall: higher is better, error: lower)\n";
  for (const QualityArea& a : r.areas) {
    out += absl::StrFormat("%-22s %-7s recall %s  error %s\n", a.policy, a.is_ratio ? "ratio" : "tokens",
                           Num(a.recall_vs_oracle), Num(a.error_vs_oracle));
  }
  return out;
}

std::string QualitySummaryCsv(const QualityResults& r) {
  std::string out =
      "trace,policy,kind,budget_axis,budget,budget_tokens,mean_tokens_read,recall_mean,recall_p10,recall_min,"
      "error_mean,error_p90,error_max,topk_overlap_mean,topk_overlap_p10,count\n";
  for (const QualityPoint& p : r.points) {
    out += absl::StrCat(TraceLabel(r), ",", p.policy, ",", p.kind, ",", p.is_ratio ? "ratio" : "tokens", ",",
                        absl::StrFormat("%g", p.budget_value), ",", Num(p.mean_budget_tokens), ",",
                        Num(p.mean_kept_tokens), ",", Num(p.recall.mean), ",", Num(p.recall.p10), ",",
                        Num(p.recall.worst), ",", Num(p.error.mean), ",", Num(p.error.p10), ",", Num(p.error.worst),
                        ",", Num(p.overlap.mean), ",", Num(p.overlap.p10), ",", p.recall.count, "\n");
  }
  return out;
}

std::string QualityLayerCsv(const QualityResults& r) {
  std::string out = "trace,policy,budget_axis,budget,layer,recall_mean,error_mean\n";
  for (const QualityPoint& p : r.points) {
    for (size_t l = 0; l < p.layer_recall.size(); ++l) {
      out += absl::StrCat(TraceLabel(r), ",", p.policy, ",", p.is_ratio ? "ratio" : "tokens", ",",
                          absl::StrFormat("%g", p.budget_value), ",", r.kept_layers[l], ",", Num(p.layer_recall[l]),
                          ",", Num(p.layer_error[l]), "\n");
    }
  }
  return out;
}

std::string QualityHeadCsv(const QualityResults& r) {
  std::string out = "trace,policy,budget_axis,budget,layer,kv_head,recall_mean,error_mean\n";
  const size_t heads = r.kept_kv_heads.size();
  for (const QualityPoint& p : r.points) {
    for (size_t i = 0; i < p.head_recall.size(); ++i) {
      out += absl::StrCat(TraceLabel(r), ",", p.policy, ",", p.is_ratio ? "ratio" : "tokens", ",",
                          absl::StrFormat("%g", p.budget_value), ",", r.kept_layers[i / heads], ",",
                          r.kept_kv_heads[i % heads], ",", Num(p.head_recall[i]), ",", Num(p.head_error[i]), "\n");
    }
  }
  return out;
}

std::string QualityAreaCsv(const QualityResults& r) {
  std::string out = "trace,policy,budget_axis,recall_area,error_area,recall_vs_oracle,error_vs_oracle\n";
  for (const QualityArea& a : r.areas) {
    out += absl::StrCat(TraceLabel(r), ",", a.policy, ",", a.is_ratio ? "ratio" : "tokens", ",", Num(a.recall_area),
                        ",", Num(a.error_area), ",", Num(a.recall_vs_oracle), ",", Num(a.error_vs_oracle), "\n");
  }
  return out;
}

std::string QualityJson(const QualityResults& r) {
  Json out = Json::object();
  out["trace"] = TraceLabel(r);
  out["synthetic"] = r.synthetic;
  out["model"] = r.model;
  out["kept_layers"] = r.kept_layers;
  out["kept_kv_heads"] = r.kept_kv_heads;
  out["num_samples"] = r.num_samples;
  out["num_decode_steps"] = r.num_decode_steps;
  out["num_dot_products"] = r.num_dot_products;
  out["top_k"] = r.top_k;
  out["points"] = Json::array();
  for (const QualityPoint& p : r.points) {
    Json point = Json::object();
    point["policy"] = p.policy;
    point["kind"] = p.kind;
    point["budget_axis"] = p.is_ratio ? "ratio" : "tokens";
    point["budget"] = JsonNumberOrNull(p.budget_value);
    point["budget_tokens"] = JsonNumberOrNull(p.mean_budget_tokens);
    point["mean_tokens_read"] = JsonNumberOrNull(p.mean_kept_tokens);
    point["recall"] = Summary(p.recall, "p10");
    point["error"] = Summary(p.error, "p90");
    point["topk_overlap"] = Summary(p.overlap, "p10");
    point["layer_recall"] = Doubles(p.layer_recall);
    point["layer_error"] = Doubles(p.layer_error);
    point["head_recall"] = Doubles(p.head_recall);
    point["head_error"] = Doubles(p.head_error);
    out["points"].push_back(std::move(point));
  }
  out["areas"] = Json::array();
  for (const QualityArea& a : r.areas) {
    Json area = Json::object();
    area["policy"] = a.policy;
    area["budget_axis"] = a.is_ratio ? "ratio" : "tokens";
    area["recall_area"] = JsonNumberOrNull(a.recall_area);
    area["error_area"] = JsonNumberOrNull(a.error_area);
    area["recall_vs_oracle"] = JsonNumberOrNull(a.recall_vs_oracle);
    area["error_vs_oracle"] = JsonNumberOrNull(a.error_vs_oracle);
    out["areas"].push_back(std::move(area));
  }
  return DumpJson(out);
}

namespace {

constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                   "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000000", "#aec7e8",
                                   "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5"};

// One panel: metric (recall or error mean) against budget for every policy on one axis.
std::string Panel(const QualityResults& r, bool ratio_axis, bool recall, double x0, double y0) {
  constexpr double kWidth = 420, kHeight = 300, kLeft = 55, kBottom = 40, kTop = 25, kRight = 10;
  std::map<std::string, std::vector<std::pair<double, double>>> lines;
  std::vector<std::string> order;
  double xmin = INFINITY, xmax = -INFINITY, ymax = recall ? 1.0 : 0.0;
  for (const QualityPoint& p : r.points) {
    if (p.is_ratio != ratio_axis) continue;
    if (!lines.count(p.policy)) order.push_back(p.policy);
    const double y = recall ? p.recall.mean : p.error.mean;
    lines[p.policy].push_back({p.budget_value, y});
    xmin = std::min(xmin, p.budget_value);
    xmax = std::max(xmax, p.budget_value);
    ymax = std::max(ymax, std::isfinite(y) ? y : 0.0);
  }
  if (order.empty()) return "";
  const bool log_x = !ratio_axis && xmin > 0 && xmax / xmin > 8;
  auto fx = [&](double x) {
    const double a = log_x ? std::log(x) : x, lo = log_x ? std::log(xmin) : xmin, hi = log_x ? std::log(xmax) : xmax;
    const double t = hi > lo ? (a - lo) / (hi - lo) : 0.5;
    return x0 + kLeft + t * (kWidth - kLeft - kRight);
  };
  auto fy = [&](double y) { return y0 + kTop + (1 - y / (ymax > 0 ? ymax : 1)) * (kHeight - kTop - kBottom); };
  std::string out =
      absl::StrFormat("<g><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#ccc\"/>\n",
                      x0 + kLeft, y0 + kTop, kWidth - kLeft - kRight, kHeight - kTop - kBottom);
  absl::StrAppend(&out, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\">%s vs budget (%s%s)%s</text>\n",
                                        x0 + kLeft, y0 + 16, recall ? "attention-mass recall" : "relative output error",
                                        ratio_axis ? "ratio of prompt" : "tokens", log_x ? ", log scale" : "",
                                        r.synthetic ? " [synthetic]" : ""));
  for (int t = 0; t <= 4; ++t) {
    const double y = ymax * t / 4;
    absl::StrAppend(&out,
                    absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%.2f</text>\n",
                                    x0 + kLeft - 4, fy(y) + 3, y));
  }
  std::vector<double> ticks;
  for (const auto& pt : lines[order[0]]) ticks.push_back(pt.first);
  for (double x : ticks) {
    absl::StrAppend(
        &out, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\">%g</text>\n", fx(x),
                              y0 + kHeight - kBottom + 14, x));
  }
  for (size_t i = 0; i < order.size(); ++i) {
    const char* color = kColors[i % (sizeof(kColors) / sizeof(kColors[0]))];
    std::vector<std::string> pts;
    for (const auto& pt : lines[order[i]]) pts.push_back(absl::StrFormat("%.1f,%.1f", fx(pt.first), fy(pt.second)));
    absl::StrAppend(
        &out, absl::StrFormat("<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"%s\"/>\n", color,
                              absl::StrJoin(pts, " ")));
    for (const std::string& pt : pts) {
      const size_t comma = pt.find(',');
      absl::StrAppend(&out, absl::StrFormat("<circle cx=\"%s\" cy=\"%s\" r=\"2.5\" fill=\"%s\"/>\n",
                                            pt.substr(0, comma), pt.substr(comma + 1), color));
    }
    absl::StrAppend(&out, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"%s\">%s</text>\n",
                                          x0 + kWidth + 5, y0 + kTop + 12 * (i + 1), color, order[i]));
  }
  return out + "</g>\n";
}

}  // namespace

std::string QualitySvg(const QualityResults& r) {
  bool has_tokens = false, has_ratios = false;
  for (const QualityPoint& p : r.points) (p.is_ratio ? has_ratios : has_tokens) = true;
  const int rows = (has_tokens ? 1 : 0) + (has_ratios ? 1 : 0);
  const double width = 2 * 560, height = std::max(1, rows) * 310 + 10;
  std::string out = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
      width, height);
  double y = 5;
  for (bool ratio : {false, true}) {
    if ((ratio && !has_ratios) || (!ratio && !has_tokens)) continue;
    out += Panel(r, ratio, true, 0, y);
    out += Panel(r, ratio, false, 560, y);
    y += 310;
  }
  return out + "</svg>\n";
}

absl::Status WriteQualityReports(const QualityResults& results, const std::string& dir) {
  KVSIM_RETURN_IF_ERROR(MakeDirectories(dir));
  return WriteFilesAtomically({{dir + "/summary.csv", QualitySummaryCsv(results)},
                               {dir + "/per_layer.csv", QualityLayerCsv(results)},
                               {dir + "/per_head.csv", QualityHeadCsv(results)},
                               {dir + "/areas.csv", QualityAreaCsv(results)},
                               {dir + "/results.json", QualityJson(results)},
                               {dir + "/curves.svg", QualitySvg(results)}});
}

}  // namespace kvsim
