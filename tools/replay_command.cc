// `kvsim replay`: one serving simulation of a request trace; prints the summary table and writes the
// results files (sim/serving/results_writer.h). The logic is in sim/replay.{h,cc}.
#include <memory>
#include <ostream>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "config/experiment_config.h"
#include "cost_models/cost_model.h"
#include "sim/serving/clock.h"
#include "sim/serving/replay.h"
#include "sim/serving/results_writer.h"
#include "tools/command.h"
#include "tools/common_flags.h"
#include "traces/trace_reader.h"
#include "util/file.h"
#include "util/status_macros.h"

ABSL_FLAG(int64_t, replay_sample_ms, 100,
          "time-series sampling period in simulated milliseconds (one row per replica per period); > 0");
ABSL_FLAG(bool, replay_timeline, false,
          "also write timeline.json (Chrome trace events for Perfetto) into --out; off by default because "
          "it is the largest output (about 100 bytes per event)");
ABSL_FLAG(int64_t, replay_timeline_max_events, 250000,
          "events kept in timeline.json (the run's first ones; count) before it is truncated");

namespace kvsim {
namespace {

absl::Status RunReplayCommand(const std::vector<std::string>& args, std::ostream& out) {
  if (!args.empty()) return absl::InvalidArgumentError("takes no positional arguments; use --trace");
  KVSIM_ASSIGN_OR_RETURN(proto::ExperimentConfig config, LoadExperimentConfig(absl::GetFlag(FLAGS_config)));
  if (absl::GetFlag(FLAGS_seed) != 0) config.set_seed(absl::GetFlag(FLAGS_seed));
  std::string trace = absl::GetFlag(FLAGS_trace);
  if (trace.empty()) trace = config.workload().trace_path();
  if (trace.empty()) return absl::InvalidArgumentError("--trace is required (or workload.trace_path)");
  TraceOptions trace_options;
  trace_options.format = absl::GetFlag(FLAGS_trace_format);
  if (trace_options.format.empty()) trace_options.format = config.workload().trace_format();
  const int64_t sample_ms = absl::GetFlag(FLAGS_replay_sample_ms);
  if (sample_ms <= 0)
    return absl::InvalidArgumentError(absl::StrCat("--replay_sample_ms must be > 0, got ", sample_ms));
  const std::string out_dir = absl::GetFlag(FLAGS_out);
  ReplayOptions options;
  options.timeseries_interval_ns = sample_ms * kNsPerMs;
  options.timeline = absl::GetFlag(FLAGS_replay_timeline);
  if (options.timeline && out_dir.empty()) {
    return absl::InvalidArgumentError("--replay_timeline writes DIR/timeline.json: it needs --out=DIR");
  }
  options.timeline_max_events = absl::GetFlag(FLAGS_replay_timeline_max_events);
  if (options.timeline_max_events < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--replay_timeline_max_events must be >= 0, got ", options.timeline_max_events));
  }
  if (options.timeline) {  // streamed during the run; the other results files are written at its end
    KVSIM_RETURN_IF_ERROR(MakeDirectories(out_dir));
    options.timeline_path = out_dir + "/timeline.json";
  }

  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<CostModel> cost_model, CreateCostModel(config));
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, OpenTrace(trace, trace_options));
  KVSIM_ASSIGN_OR_RETURN(ReplayOutput output, RunReplay(config, *cost_model, reader.get(), options));
  if (!out_dir.empty()) {
    KVSIM_RETURN_IF_ERROR(WriteResultsFiles(out_dir, output.results, output.timeline_json));
  }
  if (absl::GetFlag(FLAGS_json)) {
    KVSIM_ASSIGN_OR_RETURN(std::string json, SummaryJson(output.results));
    out << json << "\n";
    return absl::OkStatus();
  }
  out << SummaryTable(output.results);
  for (const std::string& warning : reader->warnings()) out << "  warning: " << warning << "\n";
  if (!out_dir.empty()) out << "  results written to " << out_dir << "/\n";
  return absl::OkStatus();
}

}  // namespace

KVSIM_REGISTER_COMMAND(
    replay,
    {
        .name = "replay",
        .summary = "simulate serving a request trace (TTFT, TPOT, throughput, cache hits)",
        .usage = "kvsim replay --trace=FILE [--config=FILE] [--out=DIR] [--seed=N] [--json]",
        .details = "Replays the trace (any supported format) through the serving simulator: continuous batching,\n"
                   "KV blocks with prefix/segment reuse, eviction, tiers and preemption, iteration times from the\n"
                   "cost model. Without --config: Llama-3.1-8B on one H200, prefix reuse, LRU, roofline costs.\n"
                   "Prints a summary table (or --json). With --out writes results.pb, summary.json, requests.csv\n"
                   "and timeseries.csv, and with --replay_timeline also timeline.json (open it in ui.perfetto.dev).",
        .flags = {"config", "trace", "trace_format", "out", "json", "seed", "replay_sample_ms", "replay_timeline",
                  "replay_timeline_max_events"},
        .run = RunReplayCommand,
    });

}  // namespace kvsim
