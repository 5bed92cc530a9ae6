// File: sim/serving/metrics.h
//
// MetricsCollector: an EngineObserver that records every request's outcome, samples each replica's state
// over time, and at the end builds the Results proto (per-request records, time series, summary).
// The summary is accumulated as requests finish. Per-request records and time-series points are kept in
// the Results, or, with a ResultsSink (sim/serving/results_sink.h), handed to it as they are made and not
// kept: memory then does not grow with the number of requests, except the four latency distributions'
// values (8 bytes per finished request each), which stay in memory up to `sorted_run_values` per
// distribution and spill to a temporary file beyond (SortedSpill), so the percentiles stay exact.
//
// Definitions (times in the unit their field names):
// - queueing = first scheduled - arrival; TTFT = first output token - arrival; e2e = last token - arrival;
//   TPOT = (last token - first token) / (output tokens - 1), requests with at least two output tokens only.
// - Percentiles are nearest-rank over finished requests: p = the ceil(q n)-th smallest value.
// - duration = first arrival until the last event; throughput and goodput are per second of it.
// - A request is good if its TTFT, TPOT and end-to-end latency meet the SloConfig objectives that are set.
// - Hit ratios are over prompt tokens of admitted requests: prefix and segment are what those modes could
//   reuse at first admission (blocks cached in any tier); reuse is what the configured mode reused.
// - The time series holds, per replica, the first iteration that starts in each sampling interval.
//
// Example:
//   MetricsCollector metrics(/*interval_ns=*/100 * kNsPerMs, {.slo = config.slo()});
//   engine->AddObserver(&metrics);
//   KVSIM_RETURN_IF_ERROR(engine->Run(reader.get()));
//   KVSIM_ASSIGN_OR_RETURN(proto::Results results, metrics.TakeResults());
//
// Thread-safety: none.
#ifndef KVSIM_SIM_SERVING_METRICS_H_
#define KVSIM_SIM_SERVING_METRICS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/config.pb.h"
#include "proto/results.pb.h"
#include "sim/serving/observer.h"
#include "sim/serving/results_sink.h"
#include "util/sorted_spill.h"

namespace kvsim {

// The Distribution of `count` values given one at a time in ascending order: nearest-rank percentiles,
// the mean (summed in that order) and the max. Distribute and the spilled summaries both use it, so
// both give the same bits.
class SortedDistribution {
 public:
  explicit SortedDistribution(int64_t count);
  // REQUIRES: values arrive in ascending order, at most `count` of them.
  void Add(double value);
  // All 0 when count is 0. REQUIRES: `count` values were added.
  proto::Distribution Finish() const;

 private:
  const int64_t count_;
  int64_t seen_ = 0;
  double sum_ = 0;
  proto::Distribution distribution_;
};

// Nearest-rank percentiles, mean and max of `values` (sorted in place); all 0 when empty.
proto::Distribution Distribute(std::vector<double>* values);
// The Distribution of the values in `spill`, exactly as Distribute of them all; Internal if the spill's
// temporary file failed (SortedSpill::Visit).
absl::StatusOr<proto::Distribution> DistributeSpill(SortedSpill* spill);

// The record of a finished (or rejected) request, as Results.requests holds it; with `record_token_gaps`
// its token_gaps_ns too. Overwrites the fields it sets, not the others (Clear `result` first to reuse one).
void FillRequestResult(const RequestState& state, bool record_token_gaps, proto::RequestResult* result);

struct MetricsOptions {
  proto::SloConfig slo;  // the objectives a good request meets (goodput)
  // Fill each finished request's RequestResult.token_gaps_ns (its inter-token latencies).
  bool record_token_gaps = false;
  // Not owned; nullptr = keep the records and points in the Results.
  ResultsSink* sink = nullptr;
  // Latency values per distribution held in memory before they spill to disk (SortedSpill); >= 1.
  int64_t sorted_run_values = SortedSpill::kDefaultRunValues;
  // The engine's block size (Engine::block_tokens()): a request without block hashes counts
  // PromptBlocks(request, block_tokens) prompt blocks. Must be > 0 if any request has no hashes.
  int32_t block_tokens = 0;
};

class MetricsCollector final : public EngineObserver {
 public:
  // Samples each replica at most once per `interval_ns` (> 0).
  explicit MetricsCollector(int64_t interval_ns, const MetricsOptions& options = {});

  void OnArrival(SimTime now_ns, const RequestState& state) override;
  void OnIteration(const IterationRecord& record) override;
  void OnRequestFinished(SimTime now_ns, const RequestState& state) override;
  void OnRunEnd(SimTime end_ns, const std::vector<const BlockManager*>& replicas) override;

  // Summary, and (without a sink) requests in completion order and the series; RunInfo is left for the
  // caller. Moves the records out: call once, after OnRunEnd. Internal if a spill file failed.
  absl::StatusOr<proto::Results> TakeResults();

 private:
  const int64_t interval_ns_;
  const MetricsOptions options_;
  proto::Results results_;        // requests and series (without a sink)
  proto::RequestResult request_;  // scratch, with a sink
  proto::TimeSeriesPoint point_;  // scratch, with a sink
  SortedSpill ttft_ms_, tpot_ms_, e2e_ms_, queueing_ms_;
  int64_t num_requests_ = 0, rejected_ = 0, good_ = 0;
  int64_t input_tokens_ = 0, output_tokens_ = 0, prefix_tokens_ = 0, prefix_blocks_ = 0, prompt_blocks_ = 0;
  int64_t segment_tokens_ = 0, reused_tokens_ = 0, recomputed_tokens_ = 0, reloaded_tokens_ = 0;
  int64_t preemptions_ = 0;
  std::vector<int64_t> next_sample_ns_;  // per replica
  SimTime first_arrival_ns_ = -1;
  SimTime end_ns_ = 0;
  int64_t iterations_ = 0;
  int64_t batch_size_sum_ = 0;
  int32_t max_batch_size_ = 0;
  int64_t busy_ns_ = 0;
  double occupancy_ns_ = 0;  // sum of used/capacity x duration
  int64_t max_gpu_blocks_used_ = 0;
  int32_t num_replicas_ = 0;
  int64_t block_bytes_ = 0;
  std::vector<proto::TierSummary> tiers_;
};

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_METRICS_H_
