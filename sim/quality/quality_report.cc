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
#include "util/svg_plot.h"

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

constexpr int kPanelWidth = 560, kPanelHeight = 310;

// One panel (util/svg_plot.h): mean recall or error against budget, one line per policy, on one budget axis.
std::string Panel(const QualityResults& r, bool ratio_axis, bool recall) {
  std::map<std::string, PlotSeries> lines;
  std::vector<std::string> order;
  double xmin = INFINITY, xmax = -INFINITY;
  for (const QualityPoint& p : r.points) {
    if (p.is_ratio != ratio_axis) continue;
    if (!lines.count(p.policy)) order.push_back(p.policy);
    lines[p.policy].x.push_back(p.budget_value);
    lines[p.policy].y.push_back(recall ? p.recall.mean : p.error.mean);
    xmin = std::min(xmin, p.budget_value);
    xmax = std::max(xmax, p.budget_value);
  }
  if (order.empty()) return "";
  std::vector<PlotSeries> series;
  for (size_t i = 0; i < order.size(); ++i) {
    PlotSeries s = std::move(lines[order[i]]);
    s.name = order[i];
    s.markers = true;
    s.style = static_cast<int>(i);
    series.push_back(std::move(s));
  }
  LinePlotSpec spec;
  spec.id = absl::StrCat(recall ? "recall" : "error", ratio_axis ? "-ratio" : "-tokens");
  spec.log_x = !ratio_axis && xmin > 0 && xmax / xmin > 8;
  spec.title = absl::StrCat(recall ? "attention-mass recall" : "relative output error", " vs budget",
                            r.synthetic ? " [synthetic]" : "");
  spec.x_label = ratio_axis ? "budget (fraction of the prompt)"
                            : absl::StrCat("budget (tokens per KV head", spec.log_x ? ", log scale" : "", ")");
  spec.y_label = recall ? "recall (fraction of attention mass)" : "||o - o'|| / ||o|| (ratio)";
  spec.y_min = 0;
  if (recall) spec.y_max = 1;
  spec.width = kPanelWidth;
  spec.height = kPanelHeight;
  return RenderLinePlot(spec, series);
}

}  // namespace

std::string QualitySvg(const QualityResults& r) {
  bool has_tokens = false, has_ratios = false;
  for (const QualityPoint& p : r.points) (p.is_ratio ? has_ratios : has_tokens) = true;
  const int rows = (has_tokens ? 1 : 0) + (has_ratios ? 1 : 0);
  const int width = 2 * kPanelWidth, height = std::max(1, rows) * kPanelHeight;
  std::string out = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
      width, height);
  int y = 0;
  for (bool ratio : {false, true}) {
    if ((ratio && !has_ratios) || (!ratio && !has_tokens)) continue;
    for (bool recall : {true, false}) {
      absl::StrAppend(&out, absl::StrFormat("<g transform=\"translate(%d,%d)\">\n", recall ? 0 : kPanelWidth, y),
                      Panel(r, ratio, recall), "</g>\n");
    }
    y += kPanelHeight;
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
