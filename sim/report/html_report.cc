#include "sim/report/html_report.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "util/status_macros.h"
#include "util/svg_plot.h"
#include "util/version.h"

namespace kvsim {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

class Page {
 public:
  void Section(const std::string& title) { absl::StrAppend(&body_, "<h2>", XmlEscape(title), "</h2>\n"); }
  void Paragraph(const std::string& text) { absl::StrAppend(&body_, "<p>", XmlEscape(text), "</p>\n"); }
  void Raw(const std::string& html) { body_ += html; }
  void Plot(const std::string& id, const std::string& svg) {
    ids_.push_back(id);
    absl::StrAppend(&body_, "<figure>\n", svg, "</figure>\n");
  }
  const std::string& body() const { return body_; }
  const std::vector<std::string>& ids() const { return ids_; }

 private:
  std::string body_;
  std::vector<std::string> ids_;
};

// A latency's CDF points (result_set.h) as a curve.
PlotSeries Cdf(const std::string& name, const LatencyCdf& cdf, int style) {
  return PlotSeries{.name = name, .x = cdf.x, .y = cdf.y, .style = style};
}

// Whether values spanning [lo, hi] read better on a log axis.
bool WantLog(const std::vector<PlotSeries>& series) {
  double lo = INFINITY, hi = 0;
  for (const PlotSeries& s : series) {
    for (double x : s.x) {
      if (x > 0 && std::isfinite(x)) {
        lo = std::min(lo, x);
        hi = std::max(hi, x);
      }
    }
  }
  return hi > 0 && hi / lo > 100;
}

// A table cell: n/a when absent; whole numbers from 1000 up without exponent (341919, not 3.419e+05).
std::string Fmt(std::optional<double> v, const char* format = "%.4g") {
  if (!v) return "n/a";
  if (std::abs(*v) >= 1000) return absl::StrFormat("%.0f", *v);
  return absl::StrFormat(format, *v);
}

bool SloSet(const ResultSet& s) {
  const auto it = s.json["summary"].find("slo_set");
  return it == s.json["summary"].end() || !it->is_boolean() || it->get<bool>();
}

void ServingSummaryTable(const std::vector<const ResultSet*>& sets, Page* page) {
  std::string html =
      "<table>\n<tr><th>result set</th><th>finished / requests</th><th>duration (s)</th>"
      "<th>throughput (req/s)</th><th>output (tok/s)</th><th>goodput (req/s)</th>"
      "<th>TTFT p50 / p99 (ms)</th><th>TPOT p50 / p99 (ms)</th><th>E2E p50 / p99 (ms)</th>"
      "<th>reuse hit ratio</th><th>cost model</th></tr>\n";
  for (const ResultSet* s : sets) {
    const Json& sum = s->json["summary"];
    auto at = [&](const char* key) { return JsonNumberAt(sum, key); };
    const auto& run = s->json.contains("run") ? s->json["run"] : Json::object();
    const std::string cost_model =
        run.contains("cost_model") && run["cost_model"].is_string() ? run["cost_model"].get<std::string>() : "";
    absl::StrAppend(&html, "<tr><td>", XmlEscape(s->label), "</td><td>", Fmt(at("finished_requests"), "%.0f"), " / ",
                    Fmt(at("num_requests"), "%.0f"), "</td><td>", Fmt(at("duration_s"), "%.1f"), "</td><td>",
                    Fmt(at("throughput_requests_per_s")), "</td><td>", Fmt(at("throughput_output_tokens_per_s")),
                    "</td><td>", SloSet(*s) ? Fmt(at("goodput_requests_per_s")) : std::string("no SLO set"),
                    "</td><td>", Fmt(at("ttft_ms.p50")), " / ", Fmt(at("ttft_ms.p99")), "</td><td>",
                    Fmt(at("tpot_ms.p50")), " / ", Fmt(at("tpot_ms.p99")), "</td><td>", Fmt(at("e2e_ms.p50")), " / ",
                    Fmt(at("e2e_ms.p99")), "</td><td>", Fmt(at("reuse_hit_ratio"), "%.3f"), "</td><td>",
                    XmlEscape(cost_model), "</td></tr>\n");
  }
  page->Raw(html + "</table>\n");
}

// A CDF plot over the result sets; `pick` gives each set's values, or nullptr when it has none.
void CdfPlot(const std::string& id, const std::string& title, const std::string& metric,
             const std::vector<const ResultSet*>& sets, const LatencyCdf* (*pick)(const ResultSet&),
             const std::string& missing_note, Page* page) {
  std::vector<PlotSeries> series;
  int missing = 0;
  for (size_t i = 0; i < sets.size(); ++i) {
    const LatencyCdf* v = pick(*sets[i]);
    if (v == nullptr || v->count == 0) ++missing;
    series.push_back(Cdf(sets[i]->label, v ? *v : LatencyCdf(), static_cast<int>(i)));
  }
  LinePlotSpec spec;
  spec.id = id;
  spec.title = title + " CDF";
  const bool log = WantLog(series);
  spec.x_label = absl::StrCat(metric, " (ms", log ? ", log scale" : "", ")");
  spec.y_label = "fraction of finished requests";
  spec.log_x = log;
  spec.y_min = 0;
  spec.y_max = 1;
  if (missing > 0) spec.note = missing_note;
  page->Plot(id, RenderLinePlot(spec, series));
}

void TimePlots(const std::vector<const ResultSet*>& sets, Page* page) {
  std::vector<const ReplicaSums*> ts;
  for (const ResultSet* s : sets) ts.push_back(&s->series);
  struct Panel {
    const char* id;
    const char* title;
    const char* y_label;
    std::vector<double> ReplicaSums::*field;
    bool fraction;
  };
  const Panel panels[] = {
      {"gpu-occupancy", "GPU KV occupancy over time", "GPU KV blocks used / capacity (fraction)",
       &ReplicaSums::occupancy, true},
      {"queue-length", "Queue length over time", "queued requests (all replicas)", &ReplicaSums::queued, false},
      {"batch-size", "Batch size over time", "sequences per iteration (all replicas)", &ReplicaSums::batch, false},
  };
  for (const Panel& p : panels) {
    std::vector<PlotSeries> series;
    bool missing = false;
    for (size_t i = 0; i < sets.size(); ++i) {
      series.push_back({.name = sets[i]->label, .x = ts[i]->time_s, .y = ts[i]->*p.field, .style = static_cast<int>(i)});
      missing = missing || ts[i]->time_s.empty();
    }
    LinePlotSpec spec;
    spec.id = p.id;
    spec.title = p.title;
    spec.x_label = "simulated time (s)";
    spec.y_label = p.y_label;
    spec.y_min = 0;
    if (p.fraction) spec.y_max = 1;
    if (missing) spec.note = "a result set without timeseries.csv has no curve";
    page->Plot(p.id, RenderLinePlot(spec, series));
  }
}

void ServingSection(const std::vector<const ResultSet*>& sets, Page* page) {
  page->Section("Serving replay");
  ServingSummaryTable(sets, page);
  const std::string no_requests = "a result set without requests.csv has no curve";
  CdfPlot(
      "ttft-cdf", "Time to first token (TTFT)", "TTFT", sets,
      [](const ResultSet& s) { return s.has_requests ? &s.latencies.ttft : nullptr; }, no_requests, page);
  CdfPlot(
      "tpot-cdf", "Time per output token (TPOT, requests with 2+ output tokens)", "TPOT", sets,
      [](const ResultSet& s) { return s.has_requests ? &s.latencies.tpot : nullptr; }, no_requests, page);
  CdfPlot(
      "itl-cdf", "Inter-token latency (ITL)", "ITL", sets,
      [](const ResultSet& s) { return s.has_requests ? &s.latencies.itl : nullptr; },
      "no inter-token latencies in these results (requests.csv has no itl_ns column)", page);
  CdfPlot(
      "e2e-cdf", "End-to-end latency", "end-to-end latency", sets,
      [](const ResultSet& s) { return s.has_requests ? &s.latencies.e2e : nullptr; }, no_requests, page);

  BarChartSpec bars;
  bars.id = "throughput";
  bars.title = "Request throughput and goodput";
  bars.y_label = "requests per second";
  bars.series = {"throughput", "goodput (all SLOs met)"};
  bars.values.assign(2, {});
  BarChartSpec tokens;
  tokens.id = "token-throughput";
  tokens.title = "Output-token throughput";
  tokens.y_label = "output tokens per second";
  tokens.series = {"output tokens"};
  tokens.values.assign(1, {});
  std::vector<std::string> no_slo;
  for (const ResultSet* s : sets) {
    const Json& sum = s->json["summary"];
    bars.categories.push_back(s->label);
    tokens.categories.push_back(s->label);
    bars.values[0].push_back(JsonNumberAt(sum, "throughput_requests_per_s").value_or(kNaN));
    bars.values[1].push_back(SloSet(*s) ? JsonNumberAt(sum, "goodput_requests_per_s").value_or(kNaN) : kNaN);
    if (!SloSet(*s)) no_slo.push_back(s->label);
    tokens.values[0].push_back(JsonNumberAt(sum, "throughput_output_tokens_per_s").value_or(kNaN));
  }
  if (!no_slo.empty()) bars.note = absl::StrCat("goodput n/a: no SLO set in ", absl::StrJoin(no_slo, ", "));
  page->Plot(bars.id, RenderBarChart(bars));
  page->Plot(tokens.id, RenderBarChart(tokens));
  TimePlots(sets, page);
}

void CacheSection(const std::vector<const ResultSet*>& sets, Page* page) {
  page->Section("Cache replay: hit ratio and miss-ratio curves");
  // One series per (result set, policy), in input order; Belady's bound in black.
  std::vector<PlotSeries> hit, miss;
  bool has_belady = false;
  double lo = INFINITY, hi = 0;
  for (const ResultSet* s : sets) {
    std::vector<std::string> order;
    std::map<std::string, std::vector<std::pair<double, double>>> curves;
    for (const CapacityPoint& p : s->capacity) {
      if (!curves.count(p.policy)) order.push_back(p.policy);
      curves[p.policy].push_back({p.capacity_blocks, p.hit_ratio});
      if (p.capacity_blocks > 0) {
        lo = std::min(lo, p.capacity_blocks);
        hi = std::max(hi, p.capacity_blocks);
      }
    }
    for (const std::string& policy : order) {
      auto& pts = curves[policy];
      std::sort(pts.begin(), pts.end());
      const bool belady = absl::StartsWith(policy, "belady");
      has_belady = has_belady || belady;
      const std::string name = absl::StrCat(sets.size() > 1 ? s->label + ": " : "", policy, belady ? " (bound)" : "");
      PlotSeries h{.name = name, .markers = pts.size() < 30, .style = static_cast<int>(hit.size())};
      for (const auto& [c, r] : pts) {
        h.x.push_back(c);
        h.y.push_back(r);
      }
      PlotSeries m = h;
      for (double& y : m.y) y = 1 - y;
      hit.push_back(std::move(h));
      miss.push_back(std::move(m));
    }
  }
  const bool log = hi > 0 && hi / lo > 10;
  const std::string x_label = absl::StrCat("cache capacity (blocks", log ? ", log scale" : "", ")");
  LinePlotSpec spec;
  spec.id = "hit-ratio-capacity";
  spec.title = "Block hit ratio vs cache capacity";
  spec.x_label = x_label;
  spec.y_label = "hit ratio (hits / block accesses)";
  spec.log_x = log;
  spec.y_min = 0;
  spec.y_max = 1;
  spec.note = has_belady ? "Belady (offline optimal) is the upper bound any online policy can reach"
                         : "no Belady run in these results (add --policy=belady for the upper bound)";
  page->Plot(spec.id, RenderLinePlot(spec, hit));
  spec.id = "miss-ratio-curves";
  spec.title = "Miss-ratio curves";
  spec.y_label = "miss ratio (1 - hit ratio)";
  spec.note = "";
  page->Plot(spec.id, RenderLinePlot(spec, miss));
}

bool AllNumeric(const std::vector<std::string>& values) {
  for (const std::string& v : values) {
    double d;
    if (!absl::SimpleAtod(v, &d)) return false;
  }
  return true;
}

// Distinct values of a column in first-seen order (numeric ones sorted by value).
std::vector<std::string> Levels(const CsvTable& t, int column) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& row : t.rows) {
    if (seen.insert(row[column]).second) out.push_back(row[column]);
  }
  if (AllNumeric(out)) {
    std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
      double x, y;
      (void)absl::SimpleAtod(a, &x);
      (void)absl::SimpleAtod(b, &y);
      return x < y;
    });
  }
  return out;
}

absl::Status SweepSection(const ResultSet& s, int n, const ReportOptions& options, Page* page) {
  const CsvTable& t = s.table;
  const std::vector<std::string> axes = SweepAxes(t);
  page->Section(absl::StrCat("Sweep ", s.label));
  if (axes.empty()) {
    page->Paragraph("no grid axes found in this sweep");
    return absl::OkStatus();
  }
  std::string x_axis = axes[0], y_axis = axes.size() > 1 ? axes[1] : "";
  // By default a numeric axis (capacity, block size) runs along x and a named one (policy) makes the lines.
  if (!y_axis.empty() && !AllNumeric(Levels(t, t.Column(x_axis))) && AllNumeric(Levels(t, t.Column(y_axis)))) {
    std::swap(x_axis, y_axis);
  }
  if (!options.sweep_axes.empty()) {
    // An axis is named as the sweep's grid names it (`policy`) or as its column (`axis.policy`).
    std::vector<std::string> chosen;
    for (const std::string& a : options.sweep_axes) {
      const std::string column = absl::StrCat("axis.", a);
      if (std::find(axes.begin(), axes.end(), a) != axes.end()) {
        chosen.push_back(a);
      } else if (std::find(axes.begin(), axes.end(), column) != axes.end()) {
        chosen.push_back(column);
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("--sweep_axes: ", s.path, " has no axis '", a, "'; its axes: ", absl::StrJoin(axes, ", ")));
      }
    }
    x_axis = chosen[0];
    y_axis = chosen.size() > 1 ? chosen[1] : "";
  }
  const int point = t.Column("point");
  const int mode_col = t.Column("mode", point + 1);
  std::string metric = options.sweep_metric;
  if (metric.empty()) {
    const bool replay = mode_col >= 0 && !t.rows.empty() && t.rows[0][mode_col] == "replay";
    metric = replay ? "ttft_p50_ms" : "hit_ratio";
  }
  const int metric_col = t.Column(metric, point + 1);
  if (metric_col < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--sweep_metric: ", s.path, " has no column '", metric, "'"));
  }
  const int xc = t.Column(x_axis), yc = y_axis.empty() ? -1 : t.Column(y_axis);
  const std::vector<std::string> xs = Levels(t, xc);
  const std::vector<std::string> ys = yc >= 0 ? Levels(t, yc) : std::vector<std::string>{""};
  // Mean of the metric per (y, x) cell over any other axes.
  std::map<std::pair<std::string, std::string>, std::pair<double, int>> cells;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const double v = t.Number(r, metric_col);
    if (std::isnan(v)) continue;
    auto& c = cells[{yc >= 0 ? t.rows[r][yc] : "", t.rows[r][xc]}];
    c.first += v;
    c.second += 1;
  }
  const bool averaged = axes.size() > (yc >= 0 ? 2u : 1u);
  const std::string note =
      averaged ? absl::StrCat("mean over the other axes (", axes.size(), " axes in the grid)") : std::string();
  const std::string& metric_label = metric;  // sweep columns carry their unit in the name (_ms, _ratio)
  if (yc >= 0) {
    HeatMapSpec heat;
    heat.id = absl::StrCat("sweep-heatmap-", n);
    heat.title = absl::StrCat(metric, " over ", x_axis, " x ", y_axis);
    heat.x_label = x_axis;
    heat.y_label = y_axis;
    heat.value_label = metric_label;
    heat.x_categories = xs;
    heat.y_categories = ys;
    heat.note = note;
    for (const std::string& y : ys) {
      std::vector<double> row;
      for (const std::string& x : xs) {
        const auto it = cells.find({y, x});
        row.push_back(it == cells.end() ? kNaN : it->second.first / it->second.second);
      }
      heat.values.push_back(std::move(row));
    }
    page->Plot(heat.id, RenderHeatMap(heat));
  }
  LinePlotSpec spec;
  spec.id = absl::StrCat("sweep-lines-", n);
  spec.title = absl::StrCat(metric, " along ", x_axis, yc >= 0 ? absl::StrCat(", one line per ", y_axis) : "");
  const bool numeric_x = AllNumeric(xs);
  std::vector<PlotSeries> series;
  double lo = INFINITY, hi = 0;
  for (size_t k = 0; k < ys.size(); ++k) {
    PlotSeries line{
        .name = yc >= 0 ? absl::StrCat(y_axis, "=", ys[k]) : metric, .markers = true, .style = static_cast<int>(k)};
    for (size_t i = 0; i < xs.size(); ++i) {
      double x = static_cast<double>(i);
      if (numeric_x) (void)absl::SimpleAtod(xs[i], &x);
      const auto it = cells.find({ys[k], xs[i]});
      line.x.push_back(x);
      line.y.push_back(it == cells.end() ? kNaN : it->second.first / it->second.second);
      if (x > 0) {
        lo = std::min(lo, x);
        hi = std::max(hi, x);
      }
    }
    series.push_back(std::move(line));
  }
  spec.log_x = numeric_x && hi > 0 && hi / lo > 10;
  spec.x_label = numeric_x ? absl::StrCat(x_axis, spec.log_x ? " (log scale)" : "")
                           : absl::StrCat(x_axis, " (", absl::StrJoin(xs, ", "), " at 0, 1, ...)");
  spec.y_label = metric_label;
  spec.note = note;
  page->Plot(spec.id, RenderLinePlot(spec, series));
  return absl::OkStatus();
}

void QualitySection(const ResultSet& s, int n, Page* page) {
  page->Section(absl::StrCat("Quality (open loop) ", s.label));
  const bool synthetic =
      s.json.contains("synthetic") && s.json["synthetic"].is_boolean() && s.json["synthetic"].get<bool>();
  // Token budgets when any point has them, else ratios of the prompt.
  bool tokens = false;
  for (const Json& p : s.json["points"]) tokens = tokens || (p.contains("budget_axis") && p["budget_axis"] == "tokens");
  const std::string axis = tokens ? "tokens" : "ratio";
  std::vector<std::string> order;
  std::map<std::string, PlotSeries> recall, error;
  double lo = INFINITY, hi = 0;
  for (const Json& p : s.json["points"]) {
    if (!p.contains("budget_axis") || p["budget_axis"] != axis || !p["policy"].is_string()) continue;
    const std::string policy = p["policy"].get<std::string>();
    if (!recall.count(policy)) order.push_back(policy);
    const double b = JsonNumberAt(p, "budget").value_or(kNaN);
    recall[policy].x.push_back(b);
    recall[policy].y.push_back(JsonNumberAt(p, "recall.mean").value_or(kNaN));
    error[policy].x.push_back(b);
    error[policy].y.push_back(JsonNumberAt(p, "error.mean").value_or(kNaN));
    if (b > 0) {
      lo = std::min(lo, b);
      hi = std::max(hi, b);
    }
  }
  std::vector<PlotSeries> r, e;
  for (size_t i = 0; i < order.size(); ++i) {
    for (auto* pair : {&recall, &error}) {
      PlotSeries& ps = (*pair)[order[i]];
      ps.name = order[i];
      ps.markers = true;
      ps.style = static_cast<int>(i);
    }
    r.push_back(recall[order[i]]);
    e.push_back(error[order[i]]);
  }
  LinePlotSpec spec;
  spec.log_x = hi > 0 && hi / lo > 10;
  spec.x_label = tokens ? absl::StrCat("budget (tokens per KV head", spec.log_x ? ", log scale" : "", ")")
                        : "budget (fraction of the prompt)";
  spec.note = synthetic ? "SYNTHETIC attention trace" : "recorded attention trace";
  spec.id = absl::StrCat("quality-recall-", n);
  spec.title = "Attention-mass recall vs budget (mean)";
  spec.y_label = "recall (fraction of attention mass kept)";
  spec.y_min = 0;
  spec.y_max = 1;
  page->Plot(spec.id, RenderLinePlot(spec, r));
  spec.id = absl::StrCat("quality-error-", n);
  spec.title = "Relative output error vs budget (mean)";
  spec.y_label = "||o - o'|| / ||o|| (ratio)";
  spec.y_max = kNaN;
  page->Plot(spec.id, RenderLinePlot(spec, e));
}

void EvalSection(const ResultSet& s, int n, Page* page) {
  page->Section(absl::StrCat("Closed loop ", s.label));
  // Mean accuracy over the accuracy-scored groups of each point; mean NLL where none is.
  bool any_accuracy = false;
  for (const Json& p : s.json["points"]) {
    for (const Json& g : p["groups"]) any_accuracy = any_accuracy || JsonNumberAt(g, "accuracy").has_value();
  }
  const char* key = any_accuracy ? "accuracy" : "mean_nll";
  std::vector<std::string> order;
  std::map<std::string, PlotSeries> lines;
  for (const Json& p : s.json["points"]) {
    if (!p["policy"].is_string()) continue;
    const std::string policy = p["policy"].get<std::string>();
    const bool ratio = p.contains("is_ratio") && p["is_ratio"].is_boolean() && p["is_ratio"].get<bool>();
    if (ratio) continue;  // token budgets only, one x axis
    double sum = 0;
    int count = 0;
    for (const Json& g : p["groups"]) {
      if (auto v = JsonNumberAt(g, key)) {
        sum += *v;
        ++count;
      }
    }
    if (!lines.count(policy)) order.push_back(policy);
    lines[policy].x.push_back(JsonNumberAt(p, "budget").value_or(kNaN));
    lines[policy].y.push_back(count > 0 ? sum / count : kNaN);
  }
  std::vector<PlotSeries> series;
  for (size_t i = 0; i < order.size(); ++i) {
    PlotSeries ps = lines[order[i]];
    ps.name = order[i];
    ps.markers = true;
    ps.style = static_cast<int>(i);
    series.push_back(std::move(ps));
  }
  LinePlotSpec spec;
  spec.id = absl::StrCat("eval-accuracy-", n);
  spec.title = any_accuracy ? "Closed-loop accuracy vs budget (mean over task families)"
                            : "Closed-loop mean NLL vs budget (no accuracy-scored tasks)";
  spec.x_label = "budget (tokens per KV head)";
  spec.y_label = any_accuracy ? "exact-match accuracy (fraction)" : "mean NLL (nats per token)";
  spec.y_min = 0;
  if (any_accuracy) spec.y_max = 1;
  if (s.json.contains("model") && s.json["model"].is_string())
    spec.note = "model " + s.json["model"].get<std::string>();
  page->Plot(spec.id, RenderLinePlot(spec, series));
}

constexpr char kStyle[] =
    "body{font-family:sans-serif;margin:24px;color:#222;max-width:1400px}"
    "h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}"
    "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}"
    "td:first-child,th:first-child{text-align:left}"
    "figure{display:inline-block;margin:8px}svg{display:block}";

}  // namespace

std::vector<std::string> SweepAxes(const CsvTable& table) {
  std::vector<std::string> axes;
  for (const std::string& h : table.header) {
    if (absl::StartsWith(h, "axis.")) axes.push_back(h);
  }
  if (!axes.empty()) return axes;
  for (const std::string& h : table.header) {
    if (h == "point") break;
    axes.push_back(h);
  }
  if (axes.size() == table.header.size()) axes.clear();  // no `point` column: not a sweep table
  return axes;
}

absl::StatusOr<HtmlReport> BuildHtmlReport(const std::vector<ResultSet>& sets, const ReportOptions& options) {
  if (sets.empty()) return absl::InvalidArgumentError("no result sets to report on");
  Page page;
  std::string inputs = "<table>\n<tr><th>result set</th><th>kind</th><th>path</th></tr>\n";
  for (const ResultSet& s : sets) {
    absl::StrAppend(&inputs, "<tr><td>", XmlEscape(s.label), "</td><td>", ResultKindName(s.kind), "</td><td>",
                    XmlEscape(s.path), "</td></tr>\n");
  }
  page.Raw(inputs + "</table>\n");

  std::vector<const ResultSet*> replays, capacity;
  for (const ResultSet& s : sets) {
    if (s.kind == ResultKind::kReplay) replays.push_back(&s);
    if (!s.capacity.empty()) capacity.push_back(&s);
  }
  if (!replays.empty()) ServingSection(replays, &page);
  if (!capacity.empty()) CacheSection(capacity, &page);
  int sweeps = 0, qualities = 0, evals = 0, svgs = 0;
  for (const ResultSet& s : sets) {
    if (s.kind == ResultKind::kSweep) KVSIM_RETURN_IF_ERROR(SweepSection(s, ++sweeps, options, &page));
    if (s.kind == ResultKind::kQuality) QualitySection(s, ++qualities, &page);
    if (s.kind == ResultKind::kEval) EvalSection(s, ++evals, &page);
  }
  for (const ResultSet& s : sets) {
    if (s.kind != ResultKind::kSvg) continue;
    const std::string id = absl::StrCat("included-svg-", ++svgs);
    page.Section(absl::StrCat("Included plot ", s.label));
    // The included file's own <svg> element gets the id (any id it had is kept after ours; the first wins).
    page.Plot(id, absl::StrCat("<svg id=\"", id, "\"", s.svg.substr(4)));
  }

  HtmlReport report;
  report.plot_ids = page.ids();
  report.html = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>", XmlEscape(options.title),
      "</title>\n<meta name=\"generator\" content=\"kvsim ", kKvsimVersion,
      "\">\n<meta name=\"kvsim-plots\" content=\"", absl::StrJoin(report.plot_ids, " "), "\">\n<style>", kStyle,
      "</style>\n</head>\n<body>\n<h1>", XmlEscape(options.title), "</h1>\n<p>kvsim ", kKvsimVersion, ", ", sets.size(),
      " result set", sets.size() == 1 ? "" : "s", "; ", report.plot_ids.size(),
      " plots. Self-contained: no script, no network.</p>\n", page.body(), "</body>\n</html>\n");
  return report;
}

}  // namespace kvsim
