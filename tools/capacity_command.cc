// `kvsim capacity`: the highest request rate at which a deployment meets its SLOs (the trace's arrivals
// scaled), or, with --grid and --target_rate, the cheapest deployment meeting a target rate. The logic is
// in sim/sweep/capacity_search.h.
#include <memory>
#include <ostream>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "config/experiment_config.h"
#include "cost_models/cost_model.h"
#include "sim/sweep/capacity_search.h"
#include "sim/sweep/sweep.h"
#include "tools/command.h"
#include "tools/common_flags.h"
#include "traces/trace_reader.h"
#include "util/file.h"
#include "util/status_macros.h"

ABSL_FLAG(std::string, slo, "ttft_ms:P99<=2000,tpot_ms:P99<=100",
          "capacity: SLO bounds METRIC:STAT<=LIMIT (ms), comma-separated; METRIC ttft_ms, tpot_ms, e2e_ms or "
          "queueing_ms; STAT mean, P50, P90, P99 or max");
ABSL_FLAG(double, rate_tolerance, 0.02,
          "capacity: relative width of the final bracket around the highest rate, (0, 1)");
ABSL_FLAG(double, start_rate, 0, "capacity: first rate tried, requests/s; 0 = the trace's own rate");
ABSL_FLAG(double, target_rate, 0, "capacity --grid: the request rate each grid point must sustain, requests/s");
ABSL_FLAG(double, shard_wait_s, 0,
          "capacity --shard: seconds to wait for another shard's replay of a round before stopping (rerun to "
          "resume); 0 = stop at once");
// Defined by `kvsim sweep` (tools/sweep_command.cc); the capacity grid uses the same syntax.
ABSL_DECLARE_FLAG(std::string, grid);
ABSL_DECLARE_FLAG(std::string, shard);

namespace kvsim {
namespace {

// The trace as every replay of the search reads it (afresh, with the command's trace flags), scanned once
// for its rate over the first `max_requests` records if > 0 (so the rate is that of what is replayed).
absl::StatusOr<CapacityTrace> OpenCapacityTrace(const std::string& path, const std::string& format,
                                                int64_t max_requests) {
  if (path.empty()) return absl::InvalidArgumentError("--trace is required (or workload.trace_path in --config)");
  TraceOptions options = TraceOptionsFromFlags();
  options.format = format;
  return ScanCapacityTrace([path, options]() { return OpenTrace(path, options); }, max_requests);
}

absl::Status RunCapacity(const std::vector<std::string>& args, std::ostream& out) {
  if (!args.empty()) return absl::InvalidArgumentError("expected no arguments");
  KVSIM_ASSIGN_OR_RETURN(std::vector<SloBound> slos, ParseSloBounds(absl::GetFlag(FLAGS_slo)));
  KVSIM_ASSIGN_OR_RETURN(proto::ExperimentConfig config, LoadExperimentConfig(absl::GetFlag(FLAGS_config)));
  std::string trace_path = absl::GetFlag(FLAGS_trace);
  if (trace_path.empty()) trace_path = config.workload().trace_path();
  std::string trace_format = absl::GetFlag(FLAGS_trace_format);
  if (trace_format.empty()) trace_format = config.workload().trace_format();
  KVSIM_ASSIGN_OR_RETURN(CapacityTrace trace,
                         OpenCapacityTrace(trace_path, trace_format, config.workload().max_requests()));
  KVSIM_ASSIGN_OR_RETURN(int threads, ThreadsFromFlag());
  const std::string out_dir = absl::GetFlag(FLAGS_out);

  if (!absl::GetFlag(FLAGS_grid).empty()) {
    KVSIM_ASSIGN_OR_RETURN(std::vector<GridAxis> axes, ParseGrid(absl::GetFlag(FLAGS_grid)));
    KVSIM_ASSIGN_OR_RETURN(auto shard, ParseShard(absl::GetFlag(FLAGS_shard)));
    CapacityGridOptions options;
    options.out_dir = out_dir;
    options.target_rate_per_s = absl::GetFlag(FLAGS_target_rate);
    options.shard_index = shard.first;
    options.num_shards = shard.second;
    options.num_threads = threads;
    KVSIM_ASSIGN_OR_RETURN(CapacityGridResult result, RunCapacityGrid(axes, config, trace, slos, options));
    out << "shard " << shard.first << "/" << shard.second << ": " << result.points_in_shard << " of "
        << NumGridPoints(axes) << " points (" << result.points_run << " run, " << result.points_skipped
        << " already done) at " << FormatDouble(options.target_rate_per_s) << " requests/s\n";
    if (!result.complete) {
      out << "other shards' points are missing in " << out_dir << "; rerun any shard once all have run\n";
      return absl::OkStatus();
    }
    out << result.table.ToText();
    if (result.cheapest_point < 0) {
      out << "no grid point meets the SLOs at " << FormatDouble(options.target_rate_per_s) << " requests/s\n";
    } else {
      out << absl::StrFormat("cheapest meeting the SLOs: point %d (%s), %s GPU-hours per million requests\n",
                             result.cheapest_point, result.cheapest_label,
                             FormatDouble(result.cheapest_gpu_hours_per_million));
    }
    out << "results: " << out_dir << "/capacity_grid.csv and capacity_grid.json\n";
    return absl::OkStatus();
  }

  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<CostModel> cost_model, CreateCostModel(config));
  KVSIM_ASSIGN_OR_RETURN(auto shard, ParseShard(absl::GetFlag(FLAGS_shard)));
  CapacityOptions options;
  options.tolerance = absl::GetFlag(FLAGS_rate_tolerance);
  options.start_rate_per_s = absl::GetFlag(FLAGS_start_rate);
  options.num_threads = threads;
  options.out_dir = out_dir;
  options.shard_index = shard.first;
  options.num_shards = shard.second;
  options.shard_wait_s = absl::GetFlag(FLAGS_shard_wait_s);
  KVSIM_ASSIGN_OR_RETURN(CapacityResult result, SearchCapacity(trace, config, *cost_model, slos, options));
  if (!out_dir.empty()) {
    out << "shard " << shard.first << "/" << shard.second << ": " << result.rates_replayed << " rates replayed, "
        << result.rates_read << " read from " << out_dir << "/points\n";
  }
  const Table table = CapacityPathTable(result, slos);
  if (!result.complete) {
    out << table.ToText();
    out << "stopped after " << result.path.size() << " rates: the next round needs rates of other shards not yet in "
        << out_dir << "/points; rerun any shard once they have run (or give --shard_wait_s)\n";
    return absl::OkStatus();
  }
  out << table.ToText();
  out << absl::StrFormat(
      "highest rate meeting the SLOs: %s requests/s (%.4gx the trace's %s requests/s); %s requests/s fails; "
      "tolerance %s\n",
      FormatDouble(result.max_rate_per_s), result.max_rate_per_s / result.trace_rate_per_s,
      FormatDouble(result.trace_rate_per_s), FormatDouble(result.first_fail_per_s), FormatDouble(options.tolerance));
  if (!out_dir.empty()) {
    KVSIM_RETURN_IF_ERROR(MakeDirectories(out_dir));
    KVSIM_RETURN_IF_ERROR(
        WriteFilesAtomically({{out_dir + "/capacity_path.csv", table.ToCsv()},
                              {out_dir + "/capacity.json", CapacityJson(result, slos, options.tolerance)}}));
    out << "results: " << out_dir << "/capacity_path.csv and capacity.json\n";
  }
  return absl::OkStatus();
}

}  // namespace

KVSIM_REGISTER_COMMAND(
    capacity,
    {
        .name = "capacity",
        .summary = "highest request rate meeting SLOs; cheapest deployment of a grid for a target rate",
        .usage = "kvsim capacity --trace=T [--config=C] [--slo=ttft_ms:P99<=2000,tpot_ms:P99<=100]\n"
                 "               [--rate_tolerance=0.02] [--start_rate=0] [--out=DIR] [--threads=0]\n"
                 "               [--shard=i/N --out=DIR [--shard_wait_s=0]]\n"
                 "kvsim capacity --trace=T [--config=C] --grid=\"AXIS=VALUES ...\" --target_rate=R --out=DIR\n"
                 "               [--shard=i/N]",
        .details = "Replays the trace with its arrival times scaled to each rate tried (the trace's rate is\n"
                   "(n - 1) / its span). Bracketing: rounds of 4 rates doubling (or halving) from --start_rate\n"
                   "until one holds and the next fails; then rounds of 4 rates evenly inside the bracket until\n"
                   "its width is at most --rate_tolerance of its lower end, which is the answer. A rate holds when\n"
                   "every request finished and every --slo bound holds. Rates of a round run on --threads\n"
                   "threads; the rates tried never depend on the thread count, so results are identical.\n"
                   "Writes DIR/capacity_path.csv and capacity.json. With --out, each replay's outcome is kept\n"
                   "in DIR/points/ (keyed by rate, with a digest of config, SLOs, trace and version) and read\n"
                   "back on a rerun, so a killed search resumes. --shard=i/N replays the rates of each round\n"
                   "whose position mod N == i and reads the others' from DIR (a shared directory), waiting up\n"
                   "to --shard_wait_s for them, else stopping; rerun a shard to continue. Every shard follows\n"
                   "the same path, and the one that completes it prints and writes the answer.\n"
                   "With --grid (sweep axes, e.g.\n"
                   "cluster.num_replicas=1,2,4 device_preset=h100-sxm,h200 model.tensor_parallel_size=1,2\n"
                   "scheduler.chunk_tokens=512,2048 policy=lru,s3fifo), each point is replayed at --target_rate;\n"
                   "the cheapest point meeting the SLOs has the fewest GPU-hours per million requests (GPUs =\n"
                   "replicas x tensor parallelism). Points are written to DIR/points/ and skipped on a rerun;\n"
                   "--shard=i/N runs every N-th point; once all points are in DIR, DIR/capacity_grid.{csv,json}.",
        .flags = {"trace", "trace_format", "config", "slo", "rate_tolerance", "start_rate", "grid", "target_rate",
                  "shard", "shard_wait_s", "threads", "out"},
        .run = RunCapacity,
    });

}  // namespace kvsim
