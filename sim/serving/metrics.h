// File: sim/serving/metrics.h
//
// MetricsCollector: an EngineObserver that records every request's outcome, samples each replica's state
// over time, and at the end builds the Results proto (per-request records, time series, summary).
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
//   MetricsCollector metrics(/*interval_ns=*/100 * kNsPerMs);
//   engine->AddObserver(&metrics);
//   KVSIM_RETURN_IF_ERROR(engine->Run(reader.get()));
//   proto::Results results = metrics.BuildResults(config.slo());
//
// Thread-safety: none.
#ifndef KVSIM_SIM_SERVING_METRICS_H_
#define KVSIM_SIM_SERVING_METRICS_H_

#include <cstdint>
#include <vector>

#include "proto/config.pb.h"
#include "proto/results.pb.h"
#include "sim/serving/observer.h"

namespace kvsim {

// Nearest-rank percentiles, mean and max of `values` (sorted in place); all 0 when empty.
proto::Distribution Distribute(std::vector<double>* values);

class MetricsCollector final : public EngineObserver {
 public:
  // Samples each replica at most once per `interval_ns` (> 0). `record_token_gaps`: each finished
  // request's RequestResult.token_gaps_ns (its inter-token latencies) is filled too.
  explicit MetricsCollector(int64_t interval_ns, bool record_token_gaps = false);

  void OnArrival(SimTime now_ns, const RequestState& state) override;
  void OnIteration(const IterationRecord& record) override;
  void OnRequestFinished(SimTime now_ns, const RequestState& state) override;
  void OnRunEnd(SimTime end_ns, const std::vector<const BlockManager*>& replicas) override;

  // Requests (in completion order), series and summary. RunInfo is left for the caller.
  proto::Results BuildResults(const proto::SloConfig& slo) const;

 private:
  struct Outcome {
    uint64_t request_id;
    int32_t replica;
    bool finished;
    int32_t preemptions;
    int64_t arrival_ns, first_scheduled_ns, first_token_ns, last_token_ns, finish_ns;
    int64_t input_tokens, output_tokens;
    int64_t prefix_potential_tokens, prefix_potential_blocks, segment_potential_tokens;
    int64_t reused_tokens, reused_blocks, recomputed_tokens, reloaded_tokens, swapped_tokens;
    int64_t prompt_blocks;
    std::vector<int64_t> token_gaps_ns;  // empty unless record_token_gaps_
  };
  void FillRequest(const Outcome& outcome, proto::RequestResult* result) const;

  const int64_t interval_ns_;
  const bool record_token_gaps_;
  std::vector<Outcome> outcomes_;
  std::vector<proto::TimeSeriesPoint> series_;
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
