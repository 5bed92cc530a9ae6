// File: sim/serving/vllm_metrics.h
//
// Serving metrics as vLLM's benchmark_serving names them, computed from a replay's per-request results,
// and its result JSON (key names `completed`, `request_throughput`, `mean_ttft_ms`, `p99_e2el_ms`, ...),
// so dashboards that read vLLM benchmark files read kvsim results.
//
// Definitions (over finished requests that are not warm-up):
// - TTFT = first token - arrival; E2E latency (e2el) = last token - arrival;
//   TPOT = (e2el - TTFT) / (output tokens - 1), requests with two or more output tokens;
//   ITL = the gaps between consecutive output tokens, pooled over the requests (RequestResult.token_gaps_ns,
//   recorded with ReplayOptions::record_token_gaps). Where a request lacks them only the ITL mean (total
//   decode time / total gaps, exact) is given, and its median, std and percentiles are null.
// - mean, median, std (population, as numpy.std) and percentiles with numpy's linear interpolation
//   (util/percentile.h LinearPercentile); the percentile keys are p<P>_<metric>_ms with P as vLLM writes
//   it (99, 99.9).
// - duration = first arrival to last finish of the counted requests; throughputs are per second of it:
//   request, input-token, output-token and total-token (input + output).
// - goodput: requests meeting every objective that is set (TTFT, TPOT, E2E; a request without a TPOT
//   meets the TPOT one) per second; null when no objective is set.
// - warm-up: the first `warmup_requests` by arrival and those arriving within `warmup_s` of the first
//   arrival are left out.
//
// Example:
//   VllmMetricsOptions options;
//   options.percentiles = {50, 90, 99};
//   KVSIM_ASSIGN_OR_RETURN(Json json, VllmBenchmarkJson(results, config.slo(), options));
//
// Thread-safety: stateless.
#ifndef KVSIM_SIM_SERVING_VLLM_METRICS_H_
#define KVSIM_SIM_SERVING_VLLM_METRICS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/config.pb.h"
#include "proto/results.pb.h"
#include "util/json_text.h"

namespace kvsim {

struct VllmMetricsOptions {
  std::vector<double> percentiles = {99};  // in (0, 100], as vLLM's --metric-percentiles (default 99)
  int64_t warmup_requests = 0;
  double warmup_s = 0;
};

// InvalidArgument for a percentile outside (0, 100] or a negative warm-up.
absl::StatusOr<Json> VllmBenchmarkJson(const proto::Results& results, const proto::SloConfig& slo,
                                       const VllmMetricsOptions& options);

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_VLLM_METRICS_H_
