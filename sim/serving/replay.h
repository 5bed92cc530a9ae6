// File: sim/serving/replay.h
//
// RunReplay: one serving simulation from a resolved config, a cost model and a trace reader to the
// Results proto (run info, summary, per-request records, time series) and, optionally, the Perfetto
// timeline. It wires the Engine with the MetricsCollector and TimelineRecorder observers; `kvsim replay`
// is a thin command around it and WriteResultsFiles (sim/serving/results_writer.h).
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(proto::ExperimentConfig config, LoadExperimentConfig(path));
//   KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<CostModel> cost, CreateCostModel(config));
//   KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, OpenTrace(trace, {}));
//   KVSIM_ASSIGN_OR_RETURN(ReplayOutput output, RunReplay(config, *cost, reader.get(), {}));
//
// Thread-safety: RunReplay is reentrant (no shared state between calls).
#ifndef KVSIM_SIM_SERVING_REPLAY_H_
#define KVSIM_SIM_SERVING_REPLAY_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cost_models/cost_model.h"
#include "proto/config.pb.h"
#include "proto/results.pb.h"
#include "sim/serving/clock.h"
#include "sim/serving/observer.h"
#include "sim/serving/request_kv.h"
#include "sim/serving/results_sink.h"
#include "sim/serving/session_metrics.h"
#include "util/sorted_spill.h"
#include "traces/trace_reader.h"

namespace kvsim {

struct ReplayOptions {
  int64_t timeseries_interval_ns = 100 * kNsPerMs;  // sampling period of the time series; > 0
  bool timeline = true;                             // record the Perfetto timeline
  int64_t timeline_max_events = 250000;             // cap on timeline events (then truncated); >= 0
  // Simulated time the timeline keeps: events overlapping [start, end) (TimelineOptions).
  SimTime timeline_window_start_ns = std::numeric_limits<SimTime>::min();
  SimTime timeline_window_end_ns = std::numeric_limits<SimTime>::max();
  // Where the timeline streams to (written atomically); empty = kept in ReplayOutput::timeline_json.
  std::string timeline_path;
  // Fill every RequestResult.token_gaps_ns (output_tokens - 1 values each: the inter-token latencies
  // vLLM-style ITL statistics need; sim/serving/vllm_metrics.h). Off by default: it grows the results
  // by a number per output token.
  bool record_token_gaps = false;
  // EngineOptions::advance_decode_runs: false only to check the faster path against the full one.
  bool advance_decode_runs = true;
  // Called with (requests finished or rejected, total: workload.max_requests, 0 = not known) as the run
  // proceeds, on the engine's thread (e.g. util/progress.h's Progress::Callback()). Results do not depend on it.
  std::function<void(int64_t done, int64_t total)> progress;
  // Where each request's record and each time-series point go as they are made (e.g. ResultsFileStream in
  // sim/serving/results_writer.h); ReplayOutput::results then holds neither, and memory does not grow with
  // the number of requests (MetricsCollector). nullptr = kept in ReplayOutput::results. Not owned.
  ResultsSink* results_sink = nullptr;
  // Latency values per summary distribution held in memory before they spill to a temporary file (exact
  // percentiles either way; MetricsOptions::sorted_run_values); >= 1.
  int64_t summary_memory_values = SortedSpill::kDefaultRunValues;
  // Sessions' records held in memory before they spill to a temporary file (the same results either way;
  // SessionMetricsOptions::memory_records); >= 1. With a results_sink, the sessions go to it too.
  int64_t session_memory_records = SessionMetricsOptions::kDefaultMemoryRecords;
  // More observers of the engine (e.g. VllmMetricsCollector, sim/serving/vllm_metrics.h), called after the
  // built-in ones, in this order. Not owned.
  std::vector<EngineObserver*> observers;
  // Per-request KV configurations (Engine::SetRequestKv, sim/serving/request_kv.h); nullptr = every request
  // at the config's KV format. Not owned.
  const RequestKvAssigner* request_kv = nullptr;
};

struct ReplayOutput {
  proto::Results results;
  std::string timeline_json;  // empty unless options.timeline without a timeline_path
  int64_t run_advanced_iterations = 0;  // Engine::run_advanced_iterations (not part of the results)
  int64_t inline_completed_iterations = 0;  // Engine::inline_completed_iterations (neither)
};

// Every check a serving run makes of a resolved config before it reads a trace: the eviction policy and
// the cost model can be built from it (their parameters, a calibration table), PREEMPTION_MODE_SWAP has a
// lower tier to swap to, and the GPU holds at least one block of cache.block_tokens tokens. `kvsim
// config`, `kvsim replay` and `kvsim sweep` (through RunReplay) all run it, so a config `kvsim config`
// accepts is not refused later. Errors are InvalidArgument (or the cost model's code) prefixed "SOURCE: ".
absl::Status CheckServingConfig(const proto::ExperimentConfig& config, absl::string_view source);

// Replays every request of `reader` (up to workload.max_requests). `config` is resolved (config/experiment_config.h).
// Runs CheckServingConfig(config, config.name()) first, except its cost-model check (`cost_model` is given). Errors:
// the trace's (with file and record), the cost model's, InvalidArgument for bad options.
absl::StatusOr<ReplayOutput> RunReplay(const proto::ExperimentConfig& config, const CostModel& cost_model,
                                       TraceReader* reader, const ReplayOptions& options);

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_REPLAY_H_
