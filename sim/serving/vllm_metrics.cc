#include "sim/serving/vllm_metrics.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "util/percentile.h"
#include "util/units.h"

namespace kvsim {
namespace {

constexpr double kNsPerMsD = 1e6;

// vLLM's p_word: "99" for 99.0, "99.9" for 99.9.
std::string PercentileWord(double p) {
  if (p == std::floor(p)) return absl::StrCat(static_cast<int64_t>(p));
  return absl::StrFormat("%g", p);
}

void AddMetric(const std::string& name, std::vector<double> values, const std::vector<double>& percentiles, Json* out) {
  std::sort(values.begin(), values.end());
  const bool empty = values.empty();
  double mean = 0, var = 0;
  for (double v : values) mean += v;
  if (!empty) mean /= static_cast<double>(values.size());
  for (double v : values) var += (v - mean) * (v - mean);
  if (!empty) var /= static_cast<double>(values.size());
  (*out)["mean_" + name + "_ms"] = empty ? Json(nullptr) : Json(mean);
  (*out)["median_" + name + "_ms"] = empty ? Json(nullptr) : Json(LinearPercentile(values, 0.5));
  (*out)["std_" + name + "_ms"] = empty ? Json(nullptr) : Json(std::sqrt(var));
  for (double p : percentiles) {
    (*out)["p" + PercentileWord(p) + "_" + name + "_ms"] =
        empty ? Json(nullptr) : Json(LinearPercentile(values, p / 100));
  }
}

}  // namespace

absl::StatusOr<Json> VllmBenchmarkJson(const proto::Results& results, const proto::SloConfig& slo,
                                       const VllmMetricsOptions& options) {
  for (double p : options.percentiles) {
    if (!(p > 0 && p <= 100)) return absl::InvalidArgumentError(absl::StrCat("percentile ", p, ": expected (0, 100]"));
  }
  if (options.warmup_requests < 0 || !(options.warmup_s >= 0)) {
    return absl::InvalidArgumentError("warm-up requests and seconds must be >= 0");
  }
  // Requests by arrival (ties by id), so warm-up is the earliest ones whatever the completion order.
  std::vector<const proto::RequestResult*> by_arrival;
  for (const proto::RequestResult& r : results.requests()) by_arrival.push_back(&r);
  std::sort(by_arrival.begin(), by_arrival.end(), [](const auto* a, const auto* b) {
    return a->arrival_ns() != b->arrival_ns() ? a->arrival_ns() < b->arrival_ns() : a->request_id() < b->request_id();
  });
  const int64_t first_arrival_ns = by_arrival.empty() ? 0 : by_arrival[0]->arrival_ns();
  const int64_t warmup_ns = SecondsToNs(options.warmup_s);
  std::vector<double> ttft, tpot, e2el, itl;
  bool all_gaps = true;  // every counted request recorded its token gaps (RequestResult.token_gaps_ns)
  int64_t completed = 0, good = 0, input = 0, output = 0, decode_ns = 0, gaps = 0, excluded = 0;
  int64_t start_ns = INT64_MAX, end_ns = INT64_MIN;
  const bool slo_set = slo.ttft_ms() > 0 || slo.tpot_ms() > 0 || slo.e2e_ms() > 0;
  for (size_t i = 0; i < by_arrival.size(); ++i) {
    const proto::RequestResult& r = *by_arrival[i];
    if (static_cast<int64_t>(i) < options.warmup_requests || r.arrival_ns() - first_arrival_ns < warmup_ns) {
      ++excluded;
      continue;
    }
    if (!r.finished()) continue;
    ++completed;
    input += r.input_tokens();
    output += r.output_tokens();
    start_ns = std::min(start_ns, r.arrival_ns());
    end_ns = std::max(end_ns, r.arrival_ns() + r.e2e_ns());
    const double ttft_ms = r.ttft_ns() / kNsPerMsD, e2el_ms = r.e2e_ns() / kNsPerMsD;
    ttft.push_back(ttft_ms);
    e2el.push_back(e2el_ms);
    double tpot_ms = 0;
    if (r.output_tokens() > 1) {
      tpot_ms = (e2el_ms - ttft_ms) / static_cast<double>(r.output_tokens() - 1);
      tpot.push_back(tpot_ms);
      decode_ns += r.e2e_ns() - r.ttft_ns();
      gaps += r.output_tokens() - 1;
      if (r.token_gaps_ns_size() == r.output_tokens() - 1) {
        for (int64_t gap_ns : r.token_gaps_ns()) itl.push_back(gap_ns / kNsPerMsD);
      } else {
        all_gaps = false;
      }
    }
    if ((slo.ttft_ms() <= 0 || ttft_ms <= slo.ttft_ms()) && (slo.tpot_ms() <= 0 || tpot_ms <= slo.tpot_ms()) &&
        (slo.e2e_ms() <= 0 || e2el_ms <= slo.e2e_ms())) {
      ++good;
    }
  }
  const double duration_s = completed > 0 ? (end_ns - start_ns) / 1e9 : 0;
  auto per_s = [&](double x) { return duration_s > 0 ? Json(x / duration_s) : Json(nullptr); };
  Json out = Json::object();
  out["backend"] = "kvsim";
  out["duration"] = duration_s;
  out["completed"] = completed;
  out["warmup_excluded"] = excluded;
  out["total_input_tokens"] = input;
  out["total_output_tokens"] = output;
  out["request_throughput"] = per_s(completed);
  out["request_goodput"] = slo_set ? per_s(good) : Json(nullptr);
  out["input_throughput"] = per_s(input);
  out["output_throughput"] = per_s(output);
  out["total_token_throughput"] = per_s(input + output);
  AddMetric("ttft", ttft, options.percentiles, &out);
  AddMetric("tpot", tpot, options.percentiles, &out);
  // ITL: the statistics of every token gap when each request recorded its gaps; else the exact mean
  // (total decode time / gaps) and null for the rest.
  if (all_gaps) {
    AddMetric("itl", itl, options.percentiles, &out);
  } else {
    AddMetric("itl", {}, options.percentiles, &out);
    out["mean_itl_ms"] = gaps > 0 ? Json(decode_ns / kNsPerMsD / static_cast<double>(gaps)) : Json(nullptr);
  }
  AddMetric("e2el", e2el, options.percentiles, &out);
  return out;
}

}  // namespace kvsim
