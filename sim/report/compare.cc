#include "sim/report/compare.h"

#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace kvsim {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string Budget(const Json& point) {
  const std::optional<double> b = JsonNumberAt(point, "budget");
  return b ? absl::StrFormat("%g", *b) : std::string("?");
}

std::string PolicyOf(const Json& point) {
  const auto it = point.find("policy");
  return it != point.end() && it->is_string() ? it->get<std::string>() : std::string("?");
}

void Replay(const Json& j, std::vector<Metric>* out) {
  const Json& s = j["summary"];
  auto add = [&](const std::string& key, Better better) {
    if (auto v = JsonNumberAt(s, key)) out->push_back({key, better, *v});
  };
  for (const char* dist : {"ttft_ms", "tpot_ms", "e2e_ms", "itl_ms"}) {
    for (const char* stat : {"mean", "p50", "p90", "p99"}) add(absl::StrCat(dist, ".", stat), Better::kLower);
  }
  add("queueing_ms.mean", Better::kLower);
  add("throughput_requests_per_s", Better::kHigher);
  add("throughput_output_tokens_per_s", Better::kHigher);
  const auto slo = s.find("slo_set");
  if (slo == s.end() || !slo->is_boolean() || slo->get<bool>()) add("goodput_requests_per_s", Better::kHigher);
  add("finished_requests", Better::kHigher);
  add("reuse_hit_ratio", Better::kHigher);
  add("prefix_hit_ratio", Better::kHigher);
  add("preemptions", Better::kLower);
  add("recomputed_tokens", Better::kLower);
}

struct TSample {
  double mean = 0, var = 0;
  int n = 0;
};

TSample Stats(const std::vector<double>& v) {
  TSample t;
  t.n = static_cast<int>(v.size());
  for (double x : v) t.mean += x;
  t.mean /= std::max(1, t.n);
  if (t.n > 1) {
    for (double x : v) t.var += (x - t.mean) * (x - t.mean);
    t.var /= t.n - 1;
  }
  return t;
}

std::string Pct(double x) {
  if (std::isnan(x)) return "";
  if (std::isinf(x)) return x > 0 ? "+inf%" : "-inf%";
  return absl::StrFormat("%+.2f%%", x);
}

std::string Value(double x) { return absl::StrFormat("%.6g", x); }

std::vector<std::vector<std::string>> Rows(const Comparison& c) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"metric", "better", "baseline", "candidate", "change", "95% interval", "tolerance", "verdict"});
  for (const MetricDelta& d : c.deltas) {
    const bool ci = !std::isnan(d.ci_low_pct);
    rows.push_back(
        {d.name, d.better == Better::kLower ? "lower" : "higher",
         absl::StrCat(Value(d.baseline_mean), d.baseline_runs > 1 ? absl::StrCat(" (n=", d.baseline_runs, ")") : ""),
         absl::StrCat(Value(d.candidate_mean), d.candidate_runs > 1 ? absl::StrCat(" (n=", d.candidate_runs, ")") : ""),
         Pct(d.change_pct), ci ? absl::StrCat(Pct(d.ci_low_pct), " .. ", Pct(d.ci_high_pct)) : "n/a",
         absl::StrFormat("%g%%", d.tolerance_pct), d.regressed ? "REGRESSED" : "ok"});
  }
  return rows;
}

std::string Verdict(const Comparison& c) {
  std::string out = c.regressions == 0
                        ? absl::StrCat("no regression beyond tolerance (", c.deltas.size(), " metrics)")
                        : absl::StrCat(c.regressions, " of ", c.deltas.size(), " metrics regressed beyond tolerance");
  if (!c.only_baseline.empty()) absl::StrAppend(&out, "; only in baseline: ", absl::StrJoin(c.only_baseline, ", "));
  if (!c.only_candidate.empty()) {
    absl::StrAppend(&out, "; only in candidate: ", absl::StrJoin(c.only_candidate, ", "));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<Metric>> ExtractMetrics(const ResultSet& set) {
  std::vector<Metric> out;
  switch (set.kind) {
    case ResultKind::kReplay:
      Replay(set.json, &out);
      break;
    case ResultKind::kCache:
      for (const CapacityPoint& p : set.capacity) {
        out.push_back({absl::StrFormat("hit_ratio[%s@%g]", p.policy, p.capacity_blocks), Better::kHigher, p.hit_ratio});
      }
      break;
    case ResultKind::kQuality:
      for (const Json& p : set.json["points"]) {
        const std::string key = absl::StrCat(PolicyOf(p), "@", Budget(p));
        if (auto v = JsonNumberAt(p, "recall.mean"))
          out.push_back({absl::StrCat("recall[", key, "]"), Better::kHigher, *v});
        if (auto v = JsonNumberAt(p, "error.mean"))
          out.push_back({absl::StrCat("error[", key, "]"), Better::kLower, *v});
      }
      break;
    case ResultKind::kEval:
      for (const Json& p : set.json["points"]) {
        double sum = 0;
        int n = 0;
        for (const Json& g : p["groups"]) {
          if (auto v = JsonNumberAt(g, "accuracy")) {
            sum += *v;
            ++n;
          }
        }
        if (n > 0) {
          out.push_back({absl::StrCat("accuracy[", PolicyOf(p), "@", Budget(p), "]"), Better::kHigher, sum / n});
        }
      }
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(set.path, ": ", ResultKindName(set.kind),
                                                     " results have no metrics to compare (replay, cache, quality, "
                                                     "eval do)"));
  }
  return out;
}

absl::StatusOr<std::vector<Tolerance>> ParseTolerances(absl::string_view text) {
  std::vector<Tolerance> out;
  if (text.empty()) return out;
  for (absl::string_view entry : absl::StrSplit(text, ',')) {
    const size_t colon = entry.rfind(':');
    Tolerance t;
    if (colon == absl::string_view::npos || colon == 0 ||
        !absl::SimpleAtod(absl::StripSuffix(entry.substr(colon + 1), "%"), &t.pct) || !(t.pct >= 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--tolerance: expected METRIC:PCT with PCT >= 0 (e.g. ttft_ms.p99:10), got '", entry, "'"));
    }
    t.pattern = std::string(entry.substr(0, colon));
    out.push_back(std::move(t));
  }
  return out;
}

double TQuantile975(int df) {
  static constexpr double kTable[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                      2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                      2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df <= 30) return kTable[std::max(1, df) - 1];
  if (df <= 60) return 2.0;
  if (df <= 120) return 1.98;
  return 1.96;
}

absl::StatusOr<Comparison> CompareResults(const std::vector<ResultSet>& baseline,
                                          const std::vector<ResultSet>& candidate,
                                          const std::vector<Tolerance>& tolerances, double default_pct) {
  if (baseline.empty() || candidate.empty()) return absl::InvalidArgumentError("each side needs a result set");
  const ResultKind kind = baseline[0].kind;
  for (const auto* side : {&baseline, &candidate}) {
    for (const ResultSet& s : *side) {
      if (s.kind != kind) {
        return absl::InvalidArgumentError(absl::StrCat("cannot compare ", ResultKindName(kind), " results with ",
                                                       ResultKindName(s.kind), " results (", s.path, ")"));
      }
    }
  }
  // name -> values per side, in the first baseline set's order.
  std::vector<std::string> order;
  std::map<std::string, Better> better;
  std::map<std::string, std::vector<double>> values[2];
  for (int side = 0; side < 2; ++side) {
    for (const ResultSet& s : side == 0 ? baseline : candidate) {
      auto metrics = ExtractMetrics(s);
      if (!metrics.ok()) return metrics.status();
      for (const Metric& m : *metrics) {
        if (!better.count(m.name)) order.push_back(m.name);
        better[m.name] = m.better;
        values[side][m.name].push_back(m.value);
      }
    }
  }
  Comparison c;
  for (const std::string& name : order) {
    const bool in_base = values[0].count(name) > 0, in_cand = values[1].count(name) > 0;
    if (!in_base || !in_cand) {
      (in_base ? c.only_baseline : c.only_candidate).push_back(name);
      continue;
    }
    const TSample b = Stats(values[0][name]), k = Stats(values[1][name]);
    MetricDelta d;
    d.name = name;
    d.better = better[name];
    d.baseline_runs = b.n;
    d.candidate_runs = k.n;
    d.baseline_mean = b.mean;
    d.candidate_mean = k.mean;
    const double diff = k.mean - b.mean;
    const double scale = std::abs(b.mean);
    d.change_pct = diff == 0 ? 0 : scale > 0 ? 100 * diff / scale : (diff > 0 ? INFINITY : -INFINITY);
    d.ci_low_pct = d.ci_high_pct = kNaN;
    if (b.n >= 2 && k.n >= 2 && scale > 0) {
      const double vb = b.var / b.n, vk = k.var / k.n, se = std::sqrt(vb + vk);
      double half = 0;
      if (se > 0) {
        const double df = (vb + vk) * (vb + vk) / (vb * vb / (b.n - 1) + vk * vk / (k.n - 1));
        half = TQuantile975(std::max(1, static_cast<int>(std::floor(df)))) * se;
      }
      d.ci_low_pct = 100 * (diff - half) / scale;
      d.ci_high_pct = 100 * (diff + half) / scale;
    }
    d.tolerance_pct = default_pct;
    for (const Tolerance& t : tolerances) {
      const bool match = absl::EndsWith(t.pattern, "*")
                             ? absl::StartsWith(name, absl::string_view(t.pattern).substr(0, t.pattern.size() - 1))
                             : name == t.pattern;
      if (match) {
        d.tolerance_pct = t.pct;
        break;
      }
    }
    // Worse-direction change (positive = worse), and whether the interval excludes "no change or better".
    const double sign = d.better == Better::kLower ? 1 : -1;
    const double worse = sign * d.change_pct;
    bool beyond_noise = true;
    if (!std::isnan(d.ci_low_pct)) beyond_noise = sign > 0 ? d.ci_low_pct > 0 : d.ci_high_pct < 0;
    d.regressed = worse > d.tolerance_pct && beyond_noise;
    c.regressions += d.regressed ? 1 : 0;
    c.deltas.push_back(std::move(d));
  }
  return c;
}

std::string FormatComparisonText(const Comparison& c) {
  const auto rows = Rows(c);
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      absl::StrAppend(&line, i == 0 ? "" : "  ", r[i], std::string(width[i] - r[i].size(), ' '));
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    absl::StrAppend(&out, line, "\n");
  }
  return absl::StrCat(out, Verdict(c), "\n");
}

std::string FormatComparisonMarkdown(const Comparison& c) {
  const auto rows = Rows(c);
  auto cell = [](std::string s) {
    std::string out;
    for (char ch : s) {
      if (ch == '|') out += "\\";
      out += ch;
    }
    return out;
  };
  std::string out = absl::StrCat("### kvsim compare: ", c.regressions == 0 ? "no regression" : "REGRESSION", "\n\n");
  for (size_t r = 0; r < rows.size(); ++r) {
    std::vector<std::string> cells;
    for (const std::string& s : rows[r]) cells.push_back(r > 0 && s == "REGRESSED" ? "**REGRESSED**" : cell(s));
    absl::StrAppend(&out, "| ", absl::StrJoin(cells, " | "), " |\n");
    if (r == 0) {
      absl::StrAppend(&out, "|---|---|---:|---:|---:|---:|---:|---|\n");
    }
  }
  return absl::StrCat(out, "\n", Verdict(c), "\n");
}

}  // namespace kvsim
