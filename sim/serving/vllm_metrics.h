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
// VllmMetricsCollector computes the same JSON as a run goes, in bounded memory: an EngineObserver that
// sees each arrival and each finished request and keeps no record. Its TTFT, TPOT, E2E and ITL values go
// to SortedSpills (util/sorted_spill.h: `memory_values` held per metric, then spilled to a
// temporary file), read back in ascending order for the exact mean, std and percentiles. A finished
// request is held (as its RequestResult) only while it is not yet known whether it is among the first
// `warmup_requests` by arrival: until the arrivals have passed the one of that rank (until then it also
// holds the ids of the arrivals at the current arrival time). VllmBenchmarkJson is
// the collector fed from a Results in memory, so both give the same bytes. Ties: requests with equal
// arrival times and equal request ids are told apart by neither.
//
// Example:
//   VllmMetricsOptions options;
//   options.percentiles = {50, 90, 99};
//   KVSIM_ASSIGN_OR_RETURN(Json json, VllmBenchmarkJson(results, config.slo(), options));
//
//   KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<VllmMetricsCollector> vllm,
//                          VllmMetricsCollector::Create(config.slo(), options));
//   replay_options.observers.push_back(vllm.get());  // with replay_options.record_token_gaps for the ITL
//   ... RunReplay ...;
//   KVSIM_ASSIGN_OR_RETURN(Json json, vllm->Finish());
//
// Thread-safety: VllmBenchmarkJson is stateless; VllmMetricsCollector none.
#ifndef KVSIM_SIM_SERVING_VLLM_METRICS_H_
#define KVSIM_SIM_SERVING_VLLM_METRICS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/config.pb.h"
#include "proto/results.pb.h"
#include "sim/serving/observer.h"
#include "util/sorted_spill.h"
#include "util/json_text.h"

namespace kvsim {

struct VllmMetricsOptions {
  std::vector<double> percentiles = {99};  // in (0, 100], as vLLM's --metric-percentiles (default 99)
  int64_t warmup_requests = 0;
  double warmup_s = 0;
};

// InvalidArgument for a percentile outside (0, 100] or a negative warm-up.
absl::Status CheckVllmMetricsOptions(const VllmMetricsOptions& options);

// The metrics of results.requests(). Errors: CheckVllmMetricsOptions's.
absl::StatusOr<Json> VllmBenchmarkJson(const proto::Results& results, const proto::SloConfig& slo,
                                       const VllmMetricsOptions& options);

class VllmMetricsCollector final : public EngineObserver {
 public:
  // Errors: CheckVllmMetricsOptions's; InvalidArgument for memory_values < 1.
  static absl::StatusOr<std::unique_ptr<VllmMetricsCollector>> Create(
      const proto::SloConfig& slo, const VllmMetricsOptions& options,
      int64_t memory_values = SortedSpill::kDefaultRunValues);

  // A request arrived (every request, rejected ones too). REQUIRES: arrival_ns non-decreasing over calls.
  void AddArrival(int64_t arrival_ns, uint64_t request_id);
  // The outcome of a request whose arrival was added (its arrival_ns and request_id as given there). The
  // ITL statistics need its token_gaps_ns (output_tokens - 1 of them).
  void AddRequest(const proto::RequestResult& request);

  // EngineObserver: AddArrival and AddRequest of the engine's requests (token gaps when the run records them).
  void OnArrival(SimTime now_ns, const RequestState& state) override;
  void OnRequestFinished(SimTime now_ns, const RequestState& state) override;

  // The JSON, after every AddRequest. Call once. Internal if a spill file failed (SortedSpill::Visit).
  absl::StatusOr<Json> Finish();

 private:
  struct Key {
    int64_t arrival_ns;
    uint64_t request_id;
    bool operator<(const Key& o) const {
      return arrival_ns != o.arrival_ns ? arrival_ns < o.arrival_ns : request_id < o.request_id;
    }
  };
  VllmMetricsCollector(const proto::SloConfig& slo, const VllmMetricsOptions& options, int64_t memory_values);
  // The arrivals at group_time_ are all in: if the warm-up's rank falls among them, its key is now known.
  void CloseGroup();
  // Counts `request` (or leaves it out as warm-up); `first_by_rank`: it is among the first warmup_requests.
  void Count(const proto::RequestResult& request, bool first_by_rank);

  const proto::SloConfig slo_;
  const VllmMetricsOptions options_;
  const bool slo_set_;
  const int64_t warmup_ns_;
  SortedSpill ttft_ms_, tpot_ms_, itl_ms_, e2el_ms_;
  proto::RequestResult request_;  // scratch for OnRequestFinished
  // Arrivals: the first's time; the requests before the current group of equal arrival times; that group's
  // time and (while the warm-up rank's key is unknown) its ids.
  bool any_arrival_ = false;
  int64_t first_arrival_ns_ = 0;
  int64_t arrivals_before_group_ = 0;
  int64_t arrivals_in_group_ = 0;
  int64_t group_time_ns_ = 0;
  std::vector<uint64_t> group_ids_;
  // The key of the request at rank warmup_requests (0-based) by (arrival, id): those below it are warm-up.
  bool rank_key_known_ = false;
  Key rank_key_{0, 0};
  std::vector<proto::RequestResult> pending_;  // finished while rank_key_ was unknown
  bool all_gaps_ = true;
  int64_t completed_ = 0, good_ = 0, input_ = 0, output_ = 0, decode_ns_ = 0, gaps_ = 0, excluded_ = 0;
  int64_t start_ns_ = INT64_MAX, end_ns_ = INT64_MIN;
  bool finished_ = false;
};

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_VLLM_METRICS_H_
