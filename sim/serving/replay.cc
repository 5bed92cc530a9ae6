#include "sim/serving/replay.h"

#include <functional>
#include <memory>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "config/experiment_config.h"
#include "config/field_checks.h"
#include "policies/policy_factory.h"
#include "sim/serving/engine.h"
#include "sim/serving/metrics.h"
#include "sim/serving/session_metrics.h"
#include "sim/serving/timeline.h"
#include "sim/serving/ttft_decomposition.h"
#include "util/status_macros.h"
#include "util/text_proto.h"
#include "util/version.h"

namespace kvsim {
namespace {

std::string ReuseModeName(proto::ReuseMode mode) {
  switch (mode) {
    case proto::REUSE_MODE_NONE:
      return "none";
    case proto::REUSE_MODE_SEGMENT:
      return "segment";
    default:
      return "prefix";
  }
}

// Reports each finished (or rejected) request to ReplayOptions::progress.
class ProgressObserver final : public EngineObserver {
 public:
  ProgressObserver(std::function<void(int64_t, int64_t)> progress, int64_t total)
      : progress_(std::move(progress)), total_(total) {}
  void OnRequestFinished(SimTime, const RequestState&) override { progress_(++done_, total_); }

 private:
  std::function<void(int64_t, int64_t)> progress_;
  int64_t total_, done_ = 0;
};

}  // namespace

namespace {

absl::Status Prefixed(absl::string_view source, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(source, ": ", status.message()));
}

// CheckServingConfig without the cost model: RunReplay is handed one already built.
absl::Status CheckServingConfigExceptCostModel(const proto::ExperimentConfig& config, absl::string_view source) {
  const auto prefixed = [source](const absl::Status& status) { return Prefixed(source, status); };
  // A policy's refusal names its field ("field eviction.name: ..."), or is about the eviction block as a
  // whole; either way in FieldError's form, so that `kvsim config` and `kvsim replay` give its line.
  if (absl::Status s = CreateServingEvictionPolicy(config.eviction()).status(); !s.ok()) {
    if (absl::StartsWith(s.message(), "field ")) return prefixed(s);
    return FieldError(source, "eviction", s.message());
  }
  if (config.scheduler().preemption() == proto::PREEMPTION_MODE_SWAP && config.cache().lower_tiers().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": field scheduler.preemption: PREEMPTION_MODE_SWAP needs a host tier in cache.lower_tiers"));
  }
  absl::StatusOr<int64_t> blocks = GpuCapacityBlocks(config, config.cache().block_tokens());
  if (!blocks.ok()) return prefixed(blocks.status());
  if (*blocks < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": field cache.gpu_capacity_tokens: ", config.cache().gpu_capacity_tokens(),
                     " tokens hold no whole block of ", config.cache().block_tokens(), " tokens (cache.block_tokens)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckServingConfig(const proto::ExperimentConfig& config, absl::string_view source) {
  KVSIM_RETURN_IF_ERROR(CheckServingConfigExceptCostModel(config, source));
  if (absl::Status s = CreateCostModel(config).status(); !s.ok()) return Prefixed(source, s);
  return absl::OkStatus();
}

absl::StatusOr<ReplayOutput> RunReplay(const proto::ExperimentConfig& config, const CostModel& cost_model,
                                       TraceReader* reader, const ReplayOptions& options) {
  if (options.timeseries_interval_ns <= 0) {
    return absl::InvalidArgumentError("timeseries interval must be > 0 ns");
  }
  if (options.summary_memory_values < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("summary memory values must be >= 1, got ", options.summary_memory_values));
  }
  if (options.session_memory_records < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("session memory records must be >= 1, got ", options.session_memory_records));
  }
  KVSIM_RETURN_IF_ERROR(CheckServingConfigExceptCostModel(config, config.name()));
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine,
                         Engine::Create(config, &cost_model, reader->info().block_tokens,
                                        EngineOptions{.record_token_gaps = options.record_token_gaps,
                                                      .advance_decode_runs = options.advance_decode_runs}));
  KVSIM_RETURN_IF_ERROR(engine->SetRequestKv(options.request_kv));
  MetricsCollector metrics(options.timeseries_interval_ns, {.slo = config.slo(),
                                                            .record_token_gaps = options.record_token_gaps,
                                                            .sink = options.results_sink,
                                                            .sorted_run_values = options.summary_memory_values,
                                                            .block_tokens = engine->block_tokens()});
  engine->AddObserver(&metrics);
  SessionMetrics sessions({.memory_records = options.session_memory_records, .sink = options.results_sink});
  engine->AddObserver(&sessions);
  TtftDecomposition decomposition(&cost_model);
  engine->AddObserver(&decomposition);
  std::unique_ptr<TimelineRecorder> timeline;
  if (options.timeline) {
    if (options.timeline_max_events < 0 || options.timeline_window_start_ns > options.timeline_window_end_ns) {
      return absl::InvalidArgumentError(
          absl::StrCat("timeline: max events ", options.timeline_max_events, " must be >= 0 and window start ",
                       options.timeline_window_start_ns, " ns <= end ", options.timeline_window_end_ns, " ns"));
    }
    timeline = std::make_unique<TimelineRecorder>(TimelineOptions{.max_events = options.timeline_max_events,
                                                                  .window_start_ns = options.timeline_window_start_ns,
                                                                  .window_end_ns = options.timeline_window_end_ns},
                                                  options.timeline_path);
    engine->AddObserver(timeline.get());
  }
  std::unique_ptr<ProgressObserver> progress;
  if (options.progress) {
    progress = std::make_unique<ProgressObserver>(options.progress, config.workload().max_requests());
    engine->AddObserver(progress.get());
  }
  for (EngineObserver* observer : options.observers) engine->AddObserver(observer);
  KVSIM_RETURN_IF_ERROR(engine->Run(reader));

  ReplayOutput output;
  KVSIM_ASSIGN_OR_RETURN(output.results, metrics.TakeResults());
  output.run_advanced_iterations = engine->run_advanced_iterations();
  output.inline_completed_iterations = engine->inline_completed_iterations();
  KVSIM_RETURN_IF_ERROR(sessions.Fill(config.workload().closed_loop_sessions(), &output.results));
  *output.results.mutable_ttft_breakdown() = ToProto(decomposition.MeanParts());
  proto::RunInfo& run = *output.results.mutable_run();
  run.set_kvsim_version(kKvsimVersion);
  run.set_seed(config.seed());
  run.set_config_text(ToTextProto(config));
  run.set_trace_path(reader->info().path);
  run.set_cost_model(cost_model.Describe());
  *run.mutable_cost_model_accuracy() = cost_model.Accuracy();
  run.set_trace_format(reader->info().format);
  run.set_block_tokens(engine->block_tokens());
  run.set_block_bytes(engine->block_manager(0).block_bytes());
  run.set_eviction_policy(PolicyLabel(config.eviction()));
  run.set_num_replicas(config.cluster().num_replicas());
  run.set_reuse_mode(ReuseModeName(config.cache().reuse_mode()));
  run.set_timeseries_interval_ns(options.timeseries_interval_ns);
  if (timeline != nullptr) {
    KVSIM_RETURN_IF_ERROR(timeline->Finish());
    run.set_timeline_dropped_events(timeline->dropped_events());
    if (timeline->truncated()) run.set_timeline_truncated_at_ns(timeline->truncated_at_ns());
    output.timeline_json = timeline->TakeJson();
  }
  return std::move(output);
}

}  // namespace kvsim
