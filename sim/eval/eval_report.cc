#include "sim/eval/eval_report.h"

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

std::string Budget(const EvalPoint& p) {
  return p.is_ratio ? absl::StrFormat("%gx", p.budget_value)
                    : absl::StrFormat("%d", static_cast<int64_t>(p.budget_value));
}

std::string Num(double x) { return std::isfinite(x) ? absl::StrFormat("%.6f", x) : "nan"; }

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

bool IsPerplexity(const EvalGroup& g) { return g.task == kPerplexityTask; }

constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                   "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000000", "#aec7e8"};

// One panel: y (accuracy, or mean NLL for perplexity) of every policy against the budgets, evenly spaced
// in budget order (tokens, then ratios).
std::string Panel(const EvalResults& r, const std::string& task, int64_t context, double x0, double y0) {
  constexpr double kWidth = 420, kHeight = 280, kLeft = 55, kBottom = 40, kTop = 25, kRight = 10;
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::pair<int, double>>> lines;
  std::vector<std::string> ticks;
  std::map<std::string, int> tick_index;
  double ymax = 0;
  const bool perplexity = task == kPerplexityTask;
  for (const EvalGroup& g : r.groups) {
    if (g.task != task || g.context_tokens != context) continue;
    const EvalPoint& p = r.points[g.point];
    const std::string label = Budget(p);
    if (!tick_index.count(label)) {
      tick_index[label] = static_cast<int>(ticks.size());
      ticks.push_back(label);
    }
    if (!lines.count(p.policy)) order.push_back(p.policy);
    const double y = perplexity ? g.mean_nll : g.accuracy;
    lines[p.policy].push_back({tick_index[label], y});
    ymax = std::max(ymax, y);
  }
  if (order.empty()) return "";
  if (!perplexity) ymax = 1.0;
  if (ymax <= 0) ymax = 1.0;
  auto fx = [&](int i) {
    const double t = ticks.size() > 1 ? static_cast<double>(i) / (ticks.size() - 1) : 0.5;
    return x0 + kLeft + t * (kWidth - kLeft - kRight);
  };
  auto fy = [&](double y) { return y0 + kTop + (1 - y / ymax) * (kHeight - kTop - kBottom); };
  std::string out =
      absl::StrFormat("<g><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#ccc\"/>\n",
                      x0 + kLeft, y0 + kTop, kWidth - kLeft - kRight, kHeight - kTop - kBottom);
  const std::string title =
      task == "all" ? "all exact-match tasks"
                    : absl::StrCat(task, context > 0 ? absl::StrCat(" @ ", context, " tokens") : std::string());
  absl::StrAppend(&out, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\">%s: %s vs budget</text>\n",
                                        x0 + kLeft, y0 + 16, title, perplexity ? "mean NLL" : "accuracy"));
  for (int t = 0; t <= 4; ++t) {
    const double y = ymax * t / 4;
    absl::StrAppend(&out,
                    absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%.2f</text>\n",
                                    x0 + kLeft - 4, fy(y) + 3, y));
  }
  for (size_t i = 0; i < ticks.size(); ++i) {
    absl::StrAppend(
        &out, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\">%s</text>\n", fx(i),
                              y0 + kHeight - kBottom + 14, ticks[i]));
  }
  for (size_t i = 0; i < order.size(); ++i) {
    const char* color = kColors[i % (sizeof(kColors) / sizeof(kColors[0]))];
    std::vector<std::string> pts;
    for (const auto& [x, y] : lines[order[i]]) pts.push_back(absl::StrFormat("%.1f,%.1f", fx(x), fy(y)));
    absl::StrAppend(
        &out, absl::StrFormat("<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"%s\"/>\n", color,
                              absl::StrJoin(pts, " ")));
    for (const auto& [x, y] : lines[order[i]]) {
      absl::StrAppend(
          &out, absl::StrFormat("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n", fx(x), fy(y), color));
    }
    absl::StrAppend(&out, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"%s\">%s</text>\n",
                                          x0 + kWidth + 5, y0 + kTop + 12 * (i + 1), color, order[i]));
  }
  return out + "</g>\n";
}

}  // namespace

std::string FormatEvalTable(const EvalResults& r) {
  std::string out = absl::StrFormat("closed-loop evaluation of %s: %d tasks\n", r.model, r.num_tasks);
  absl::StrAppend(&out, absl::StrFormat("%-24s %-9s %8s %8s %9s %9s %11s\n", "policy", "kind", "budget", "tasks",
                                        "accuracy", "mean_nll", "tokens_read"));
  for (const EvalGroup& g : r.groups) {
    if (g.task != "all" && !IsPerplexity(g)) continue;
    const EvalPoint& p = r.points[g.point];
    absl::StrAppend(&out, absl::StrFormat("%-24s %-9s %8s %8d %9s %9s %11.1f%s\n", p.policy, p.kind, Budget(p),
                                          g.num_tasks, IsPerplexity(g) ? "-" : absl::StrFormat("%.4f", g.accuracy),
                                          IsPerplexity(g) ? absl::StrFormat("%.4f", g.mean_nll) : "-",
                                          g.mean_tokens_read, IsPerplexity(g) ? "  (perplexity)" : ""));
  }
  return out;
}

std::string EvalResultsCsv(const EvalResults& r) {
  std::string out =
      "policy,kind,budget,task,context_tokens,tasks,correct,accuracy,needle_tasks,needle_covered,nll_tokens,mean_nll,"
      "perplexity,mean_tokens_read,mean_budget_tokens\n";
  for (const EvalGroup& g : r.groups) {
    const EvalPoint& p = r.points[g.point];
    const bool ppl = IsPerplexity(g);
    absl::StrAppend(&out, CsvField(p.policy), ",", p.kind, ",", Budget(p), ",", CsvField(g.task), ",", g.context_tokens,
                    ",", g.num_tasks, ",", g.num_correct, ",", ppl ? "" : Num(g.accuracy), ",", g.needle_tasks, ",",
                    g.needle_covered, ",", g.nll_tokens, ",", ppl ? Num(g.mean_nll) : "", ",",
                    ppl ? Num(g.perplexity) : "", ",", Num(g.mean_tokens_read), ",", Num(g.mean_budget_tokens), "\n");
  }
  return out;
}

std::string EvalTasksCsv(const EvalResults& r, const std::vector<EvalTask>& tasks) {
  std::string out =
      "task_id,task,context_tokens,policy,budget,budget_tokens,correct,nll_sum,scored_tokens,decode_steps,"
      "mean_tokens_read,generated\n";
  for (const EvalRun& run : r.runs) {
    const EvalTask& t = tasks[run.task];
    const EvalPoint& p = r.points[run.point];
    absl::StrAppend(&out, CsvField(t.id), ",", CsvField(t.task), ",", t.context_tokens, ",", CsvField(p.policy), ",",
                    Budget(p), ",", run.budget_tokens, ",", t.is_perplexity() ? "" : (run.correct ? "1" : "0"), ",",
                    t.is_perplexity() ? Num(run.nll_sum) : "", ",", run.scored_tokens, ",", run.decode_steps, ",",
                    Num(run.mean_tokens_read), ",", absl::StrJoin(run.generated, " "), "\n");
  }
  return out;
}

std::string EvalTimingCsv(const EvalResults& r) {
  std::string out = "policy,budget,runs,seconds_total,seconds_per_run\n";
  std::vector<double> total(r.points.size(), 0.0);
  std::vector<int64_t> count(r.points.size(), 0);
  for (const EvalRun& run : r.runs) {
    total[run.point] += run.seconds;
    ++count[run.point];
  }
  for (size_t p = 0; p < r.points.size(); ++p) {
    absl::StrAppend(&out, CsvField(r.points[p].policy), ",", Budget(r.points[p]), ",", count[p], ",", Num(total[p]),
                    ",", Num(count[p] > 0 ? total[p] / count[p] : 0), "\n");
  }
  double prefill = 0;
  for (double s : r.prefill_seconds) prefill += s;
  absl::StrAppend(&out, "(prefill),,", r.prefill_seconds.size(), ",", Num(prefill), ",",
                  Num(r.prefill_seconds.empty() ? 0 : prefill / r.prefill_seconds.size()), "\n");
  return out;
}

std::string EvalJson(const EvalResults& r) {
  std::string out =
      absl::StrCat("{\n  \"model\": ", JsonQuote(r.model), ",\n  \"num_tasks\": ", r.num_tasks,
                   ",\n  \"seed\": ", r.seed, ",\n  \"query_window\": ", r.query_window, ",\n  \"points\": [\n");
  for (size_t p = 0; p < r.points.size(); ++p) {
    const EvalPoint& point = r.points[p];
    absl::StrAppend(&out, "    {\"policy\": ", JsonQuote(point.policy), ", \"kind\": ", JsonQuote(point.kind),
                    ", \"is_ratio\": ", point.is_ratio ? "true" : "false",
                    ", \"budget\": ", JsonNumber(point.budget_value), ", \"groups\": [");
    bool first = true;
    for (const EvalGroup& g : r.groups) {
      if (g.point != static_cast<int32_t>(p)) continue;
      absl::StrAppend(
          &out, first ? "\n" : ",\n", "      {\"task\": ", JsonQuote(g.task),
          ", \"context_tokens\": ", g.context_tokens, ", \"tasks\": ", g.num_tasks, ", \"correct\": ", g.num_correct,
          ", \"accuracy\": ", IsPerplexity(g) ? "null" : JsonNumber(g.accuracy), ", \"needle_tasks\": ", g.needle_tasks,
          ", \"needle_covered\": ", g.needle_covered, ", \"nll_tokens\": ", g.nll_tokens,
          ", \"mean_nll\": ", IsPerplexity(g) ? JsonNumber(g.mean_nll) : "null",
          ", \"perplexity\": ", IsPerplexity(g) ? JsonNumber(g.perplexity) : "null",
          ", \"mean_tokens_read\": ", JsonNumber(g.mean_tokens_read),
          ", \"mean_budget_tokens\": ", JsonNumber(g.mean_budget_tokens), "}");
      first = false;
    }
    absl::StrAppend(&out, "]}", p + 1 < r.points.size() ? "," : "", "\n");
  }
  return out + "  ]\n}\n";
}

std::string EvalSvg(const EvalResults& r) {
  std::vector<std::pair<std::string, int64_t>> panels;
  for (const EvalGroup& g : r.groups) {
    const auto key = std::make_pair(g.task, g.context_tokens);
    if (std::find(panels.begin(), panels.end(), key) == panels.end()) panels.push_back(key);
  }
  // "all" first, then the families.
  std::stable_partition(panels.begin(), panels.end(), [](const auto& k) { return k.first == "all"; });
  const int columns = 2, rows = std::max<int>(1, (panels.size() + columns - 1) / columns);
  const double width = columns * 560, height = rows * 290 + 10;
  std::string out = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
      width, height);
  for (size_t i = 0; i < panels.size(); ++i) {
    out += Panel(r, panels[i].first, panels[i].second, (i % columns) * 560.0, 5 + (i / columns) * 290.0);
  }
  return out + "</svg>\n";
}

absl::Status WriteEvalReports(const EvalResults& results, const std::vector<EvalTask>& tasks, const std::string& dir) {
  KVSIM_RETURN_IF_ERROR(MakeDirectories(dir));
  return WriteFilesAtomically({{dir + "/results.csv", EvalResultsCsv(results)},
                               {dir + "/tasks.csv", EvalTasksCsv(results, tasks)},
                               {dir + "/timing.csv", EvalTimingCsv(results)},
                               {dir + "/results.json", EvalJson(results)},
                               {dir + "/accuracy.svg", EvalSvg(results)}});
}

}  // namespace kvsim
