// `kvsim replay`: one serving simulation of a request trace; prints the summary table and writes the
// results files (sim/serving/results_writer.h). The logic is in sim/replay.{h,cc}.
#include <cmath>
#include <iostream>
#include <memory>
#include <ostream>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "config/experiment_config.h"
#include "cost_models/cost_model.h"
#include "sim/select/candidates.h"
#include "sim/select/serving_kv.h"
#include "sim/serving/clock.h"
#include "sim/serving/replay.h"
#include "sim/serving/results_writer.h"
#include "sim/serving/vllm_metrics.h"
#include "tools/command.h"
#include "tools/common_flags.h"
#include "traces/trace_reader.h"
#include "util/file.h"
#include "util/json_text.h"
#include "util/progress.h"
#include "util/status_macros.h"

ABSL_FLAG(int64_t, sample_ms, 100,
          "time-series sampling period in simulated milliseconds (one row per replica per period); > 0");
ABSL_FLAG(bool, timeline, false,
          "also write timeline.json (Chrome trace events for Perfetto) into --out; off by default because "
          "it is the largest output (about 100 bytes per event)");
ABSL_FLAG(int64_t, timeline_max_events, 250000,
          "events kept in timeline.json (the run's first ones; count) before it is truncated");
ABSL_FLAG(std::string, timeline_window, "",
          "START:END in seconds of simulated time: timeline.json keeps only the events overlapping it (either "
          "side may be empty: from the start, to the end); empty = the whole run");

ABSL_FLAG(std::string, kv_configs, "",
          "per-request KV configurations: CSV with request_id (or prompt_id) and config columns naming a candidate "
          "of --configs for every trace request, e.g. the selections.csv of 'kvsim select' (see 'kvsim help "
          "replay')");
ABSL_FLAG(std::string, kv_config, "",
          "every request at this one candidate of --configs (e.g. fp16 or the best static configuration)");

ABSL_FLAG(std::string, vllm_json, "",
          "also write the serving metrics as vLLM's benchmark_serving result JSON (its key names: completed, "
          "request_throughput, mean_ttft_ms, p99_tpot_ms, mean_itl_ms, mean_e2el_ms, ...) to this file");
ABSL_FLAG(std::string, percentiles, "50,90,99",
          "percentiles of TTFT, TPOT, ITL and E2E latency in --vllm_json (numpy's linear interpolation), in (0, 100]");
ABSL_FLAG(int64_t, warmup_requests, 0, "--vllm_json: leave out the first N requests by arrival (warm-up)");
ABSL_FLAG(double, warmup_s, 0, "--vllm_json: leave out requests arriving within this many seconds of the first");

namespace kvsim {
namespace {

absl::StatusOr<VllmMetricsOptions> VllmOptionsFromFlags() {
  VllmMetricsOptions options;
  options.percentiles.clear();
  for (absl::string_view item : absl::StrSplit(absl::GetFlag(FLAGS_percentiles), ',', absl::SkipEmpty())) {
    double p;
    if (!absl::SimpleAtod(item, &p) || !(p > 0 && p <= 100)) {
      return absl::InvalidArgumentError(absl::StrCat("--percentiles: '", item, "' is not a number in (0, 100]"));
    }
    options.percentiles.push_back(p);
  }
  options.warmup_requests = absl::GetFlag(FLAGS_warmup_requests);
  options.warmup_s = absl::GetFlag(FLAGS_warmup_s);
  if (options.warmup_requests < 0) return absl::InvalidArgumentError("--warmup_requests must be >= 0");
  if (!(options.warmup_s >= 0)) return absl::InvalidArgumentError("--warmup_s must be >= 0");
  return options;
}

// --timeline_window=START:END (seconds; either side may be empty) into `options`.
absl::Status ParseTimelineWindow(absl::string_view text, ReplayOptions* options) {
  if (text.empty()) return absl::OkStatus();
  const std::vector<absl::string_view> sides = absl::StrSplit(text, ':');
  const auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("--timeline_window: '", text, "' ", why,
                                                   "; expected START:END in seconds, e.g. 10:20, 10: or :20"));
  };
  if (sides.size() != 2) return bad("has no single ':'");
  SimTime bounds_ns[2] = {options->timeline_window_start_ns, options->timeline_window_end_ns};
  for (int i = 0; i < 2; ++i) {
    if (sides[i].empty()) continue;
    double seconds;
    if (!absl::SimpleAtod(sides[i], &seconds) || !std::isfinite(seconds) || seconds < 0 || seconds > 1e9) {
      return bad(absl::StrCat(i == 0 ? "START" : "END", " '", sides[i], "' is not a number of seconds in [0, 1e9]"));
    }
    bounds_ns[i] = static_cast<SimTime>(std::llround(seconds * kNsPerS));
  }
  if (bounds_ns[0] >= bounds_ns[1]) return bad("is empty: START must be before END");
  options->timeline_window_start_ns = bounds_ns[0];
  options->timeline_window_end_ns = bounds_ns[1];
  return absl::OkStatus();
}

absl::Status RunReplayCommand(const std::vector<std::string>& args, std::ostream& out) {
  if (!args.empty()) return absl::InvalidArgumentError("takes no positional arguments; use --trace");
  const std::string kv_configs = absl::GetFlag(FLAGS_kv_configs), kv_config = absl::GetFlag(FLAGS_kv_config);
  const bool per_request_kv = !kv_configs.empty() || !kv_config.empty();  // priced by the roofline only
  KVSIM_ASSIGN_OR_RETURN(proto::ExperimentConfig config,
                         LoadExperimentConfig(absl::GetFlag(FLAGS_config), per_request_kv
                                                                              ? proto::COST_MODEL_KIND_ROOFLINE
                                                                              : proto::COST_MODEL_KIND_UNSPECIFIED));
  if (absl::GetFlag(FLAGS_seed) != 0) config.set_seed(absl::GetFlag(FLAGS_seed));
  std::string trace = absl::GetFlag(FLAGS_trace);
  if (trace.empty()) trace = config.workload().trace_path();
  if (trace.empty()) return absl::InvalidArgumentError("--trace is required (or workload.trace_path)");
  KVSIM_ASSIGN_OR_RETURN(TraceOptions trace_options, CheckedTraceOptionsFromFlags());
  if (trace_options.format.empty()) trace_options.format = config.workload().trace_format();
  const int64_t sample_ms = absl::GetFlag(FLAGS_sample_ms);
  if (sample_ms <= 0) return absl::InvalidArgumentError(absl::StrCat("--sample_ms must be > 0, got ", sample_ms));
  const std::string out_dir = absl::GetFlag(FLAGS_out);
  ReplayOptions options;
  options.timeseries_interval_ns = sample_ms * kNsPerMs;
  options.timeline = absl::GetFlag(FLAGS_timeline);
  if (options.timeline && out_dir.empty()) {
    return absl::InvalidArgumentError("--timeline writes DIR/timeline.json: it needs --out=DIR");
  }
  options.timeline_max_events = absl::GetFlag(FLAGS_timeline_max_events);
  if (options.timeline_max_events < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--timeline_max_events must be >= 0, got ", options.timeline_max_events));
  }
  const std::string window = absl::GetFlag(FLAGS_timeline_window);
  if (!window.empty() && !options.timeline) {
    return absl::InvalidArgumentError("--timeline_window selects what timeline.json keeps: it needs --timeline");
  }
  KVSIM_RETURN_IF_ERROR(ParseTimelineWindow(window, &options));
  if (options.timeline) {  // streamed during the run; the other results files are written at its end
    KVSIM_RETURN_IF_ERROR(MakeDirectories(out_dir));
    options.timeline_path = out_dir + "/timeline.json";
  }

  const std::string vllm_json = absl::GetFlag(FLAGS_vllm_json);
  KVSIM_ASSIGN_OR_RETURN(VllmMetricsOptions vllm_options, VllmOptionsFromFlags());
  options.record_token_gaps = !vllm_json.empty();  // the ITL median, std and percentiles need every gap
  // The vLLM metrics are collected as requests finish (their values spill like the summary's).
  std::unique_ptr<VllmMetricsCollector> vllm;
  if (!vllm_json.empty()) {
    KVSIM_ASSIGN_OR_RETURN(vllm, VllmMetricsCollector::Create(config.slo(), vllm_options));
    options.observers.push_back(vllm.get());
  }

  if (!kv_configs.empty() && !kv_config.empty()) {
    return absl::InvalidArgumentError("--kv_configs and --kv_config exclude each other: give one");
  }
  if (!absl::GetFlag(FLAGS_configs).empty() && kv_configs.empty() && kv_config.empty()) {
    return absl::InvalidArgumentError("--configs names the candidates of --kv_configs or --kv_config: give one");
  }
  std::unique_ptr<CandidateKvAssigner> request_kv;
  if (per_request_kv) {
    KVSIM_ASSIGN_OR_RETURN(proto::SelectCandidateSet set, LoadSelectCandidates(absl::GetFlag(FLAGS_configs)));
    if (!kv_configs.empty()) {
      KVSIM_ASSIGN_OR_RETURN(request_kv, CandidateKvAssigner::FromSelections(config, set, kv_configs));
    } else {
      KVSIM_ASSIGN_OR_RETURN(request_kv, CandidateKvAssigner::ForAll(config, set, kv_config));
    }
    options.request_kv = request_kv.get();
  }

  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<CostModel> cost_model, CreateCostModel(config));
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, OpenTrace(trace, trace_options));
  // The results files are written as requests finish; without --out the records are not kept (the
  // summary table and --json need the summary only).
  std::unique_ptr<ResultsFileStream> stream;
  DiscardResults discard;
  if (!out_dir.empty()) {
    KVSIM_ASSIGN_OR_RETURN(stream, ResultsFileStream::Open(out_dir));
    options.results_sink = stream.get();
  } else {
    options.results_sink = &discard;
  }
  // Progress on a terminal only (util/progress.h).
  Progress progress("replay", 0, "req", Progress::ForStderr(absl::GetFlag(FLAGS_quiet)));
  options.progress = progress.Callback();
  KVSIM_ASSIGN_OR_RETURN(ReplayOutput output, RunReplay(config, *cost_model, reader.get(), options));
  progress.Finish();
  if (output.results.run().timeline_dropped_events() > 0) {
    std::cerr << absl::StrCat("kvsim replay: warning: ", options.timeline_path, " stops at simulated time ",
                              NsToS(output.results.run().timeline_truncated_at_ns()),
                              " s: ", output.results.run().timeline_dropped_events(),
                              " events over --timeline_max_events=", options.timeline_max_events, " were dropped\n");
  }
  if (stream != nullptr) {
    // The sessions go to the files without a copy; the summary table and --json need run and summary only.
    proto::Results rest;
    rest.Swap(&output.results);
    *output.results.mutable_run() = rest.run();
    *output.results.mutable_summary() = rest.summary();
    KVSIM_RETURN_IF_ERROR(stream->Finish(std::move(rest), output.timeline_json));
  }
  if (vllm != nullptr) {
    KVSIM_ASSIGN_OR_RETURN(Json metrics, vllm->Finish());
    KVSIM_RETURN_IF_ERROR(WriteFileAtomically(vllm_json, DumpJson(metrics)));
  }
  if (absl::GetFlag(FLAGS_json)) {
    KVSIM_ASSIGN_OR_RETURN(std::string json, SummaryJson(output.results));
    out << json << "\n";
    return absl::OkStatus();
  }
  out << SummaryTable(output.results);
  for (const std::string& warning : reader->warnings()) out << "  warning: " << warning << "\n";
  if (!out_dir.empty()) out << "  results written to " << out_dir << "/\n";
  if (!vllm_json.empty()) out << "  vLLM benchmark_serving metrics written to " << vllm_json << "\n";
  return absl::OkStatus();
}

}  // namespace

KVSIM_REGISTER_COMMAND(
    replay,
    {
        .name = "replay",
        .summary = "simulate serving a request trace (TTFT, TPOT, throughput, cache hits)",
        .usage = "kvsim replay --trace=FILE [--config=FILE] [--out=DIR] [--seed=N] [--json] [--vllm_json=FILE]\n"
                 "             [--kv_configs=FILE | --kv_config=NAME] [--configs=FILE]",
        .details = "Replays the trace (any supported format) through the serving simulator: continuous batching,\n"
                   "KV blocks with prefix/segment reuse, eviction, tiers and preemption, iteration times from the\n"
                   "cost model: by default the fitted model where the GPU's preset has fitted parameters (A100,\n"
                   "H100, H200), else the roofline (L40S, B200). Without --config: Llama-3.1-8B on one H200, prefix\n"
                   "reuse, LRU, fitted costs.\n"
                   "Prints a summary table (or --json). With --out writes results.pb, summary.json, requests.csv\n"
                   "and timeseries.csv, and with --timeline also timeline.json (open it in ui.perfetto.dev;\n"
                   "--timeline_window=START:END keeps only that span of simulated seconds). The files are written\n"
                   "as requests finish: memory does not grow with the number of requests but for closed-loop\n"
                   "sessions (about 28 bytes per request; the requests themselves spill to TMPDIR); summary\n"
                   "percentiles stay exact (beyond 2^20 requests their values spill to TMPDIR).\n"
                   "--vllm_json=FILE writes TTFT/TPOT/ITL/E2E mean, median, std and --percentiles, throughputs and\n"
                   "goodput (slo.ttft_ms, slo.tpot_ms, slo.e2e_ms) under vLLM benchmark_serving's key names,\n"
                   "leaving out --warmup_requests / --warmup_s (sim/serving/vllm_metrics.h), computed as requests\n"
                   "finish: exact, in bounded memory (beyond 2^20 values, per metric, they spill to TMPDIR).\n"
                   "Per-request KV configurations: --kv_configs=FILE (CSV of request_id or prompt_id and config,\n"
                   "e.g. kvsim select's selections.csv) or --kv_config=NAME (all requests), naming candidates of\n"
                   "--configs (default: fp16 plus the ten KVQuant, H2O and RocketKV ones). Each request's KV\n"
                   "then has its candidate's format: a block holds floor(replica bytes per token / its bytes per\n"
                   "token) trace blocks, and prefill and decode attention are priced at its bytes by the roofline\n"
                   "(the cost model of these runs where --config sets none; another kind is refused).\n"
                   "An eviction budget (H2O, RocketKV) cuts its KV after prefill and frees the blocks; decodes read\n"
                   "the budget. Cached blocks are shared only between requests of the same format, never by\n"
                   "budgeted ones; recompute preemption only. Not charged: the policies' scoring overhead.",
        .flags = {"config", "trace", "trace_format", "chain_hashes", "reorder_window", "trace_block_tokens",
                  "trace_timestamp_unit", "out", "json", "seed", "sample_ms", "timeline", "timeline_max_events",
                  "timeline_window", "vllm_json", "percentiles", "warmup_requests", "warmup_s", "kv_configs",
                  "kv_config", "configs", "quiet"},
        .flag_aliases = {{"replay_sample_ms", "sample_ms"},
                         {"replay_timeline_max_events", "timeline_max_events"},
                         {"replay_timeline", "timeline"},
                         {"replay_timeline_window", "timeline_window"}},
        .run = RunReplayCommand,
    });

}  // namespace kvsim
