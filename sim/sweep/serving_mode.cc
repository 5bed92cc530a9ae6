#include "sim/sweep/serving_mode.h"

#include <memory>

#include "config/experiment_config.h"
#include "cost_models/cost_model.h"
#include "sim/serving/replay.h"
#include "sim/serving/results_sink.h"
#include "traces/trace_io.h"
#include "traces/trace_reader.h"
#include "util/status_macros.h"

namespace kvsim {

absl::Status RunServingSweepPoint(const SweepPointContext& context, proto::SweepPointResult* out) {
  KVSIM_ASSIGN_OR_RETURN(proto::ExperimentConfig config, ResolveExperimentConfig(context.config, "sweep point config"));
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<CostModel> cost_model, CreateCostModel(config));
  TraceOptions trace_options;
  trace_options.format = context.trace_format;
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, OpenTrace(context.trace_path, trace_options));
  ReplayOptions options;
  options.timeline = false;
  DiscardResults discard;  // the point keeps the summary only: no per-request record is held
  options.results_sink = &discard;
  KVSIM_ASSIGN_OR_RETURN(ReplayOutput output, RunReplay(config, *cost_model, reader.get(), options));
  proto::Results* results = out->mutable_replay();
  *results->mutable_run() = output.results.run();
  *results->mutable_summary() = output.results.summary();
  return absl::OkStatus();
}

KVSIM_REGISTER(SweepModeRegistry(), "replay",
               [](const SweepModeBatch& batch) { RunEachPoint(batch, RunServingSweepPoint); });

}  // namespace kvsim
