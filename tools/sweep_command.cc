// `kvsim sweep`: a grid of runs (policies x capacities x config fields), sharded and resumable; the
// logic is in sim/sweep/sweep.h.
#include <ostream>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "config/experiment_config.h"
#include "sim/sweep/sweep.h"
#include "tools/cache_flags.h"
#include "tools/command.h"
#include "tools/common_flags.h"
#include "util/progress.h"
#include "util/status_macros.h"
#include "util/text_proto.h"

ABSL_FLAG(std::string, grid, "",
          "sweep: space-separated axes NAME=VALUES, e.g. \"policy=lru,asym capacity_blocks=1000:64000:x2\"");
ABSL_FLAG(std::string, mode, "cache", "sweep: what each point runs when the grid has no mode axis: cache or replay");
ABSL_FLAG(std::string, shard, "0/1", "sweep: run shard i of N (points whose index mod N == i), as i/N");

namespace kvsim {
namespace {

// Axes whose values change what a byte capacity means (the KV bytes per block) or, with
// workload.max_requests too, a share of the trace's blocks: with one in the grid, give blocks.
bool ChangesBytesPerBlock(const std::string& axis) {
  return axis == "model_preset" || axis == "block_tokens" || axis == "cache.block_tokens" ||
         absl::StartsWith(axis, "model.") || absl::StartsWith(axis, "cost_model.");
}
bool ChangesDistinctBlocks(const std::string& axis) {
  return axis == "block_tokens" || axis == "cache.block_tokens" || axis == "workload.max_requests";
}

// The capacity_blocks axis as `kvsim cache --capacity` takes it (blocks, bytes, a share of the trace's
// distinct blocks), resolved to block counts against the base config and the sweep's trace.
absl::Status ResolveCapacityAxis(const proto::ExperimentConfig& base, const SweepOptions& sweep,
                                 std::vector<GridAxis>* axes) {
  GridAxis* capacity = nullptr;
  for (GridAxis& axis : *axes) {
    if (axis.name == "capacity_blocks") capacity = &axis;
  }
  if (capacity == nullptr) return absl::OkStatus();
  const std::string what = "grid axis 'capacity_blocks'";
  KVSIM_ASSIGN_OR_RETURN(std::vector<CapacityEntry> entries,
                         ParseCapacityList(absl::StrJoin(capacity->values, ","), what));
  if (!NeedsBytesPerBlock(entries) && !NeedsDistinctBlocks(entries)) return absl::OkStatus();
  for (const GridAxis& axis : *axes) {
    if ((NeedsBytesPerBlock(entries) && ChangesBytesPerBlock(axis.name)) ||
        (NeedsDistinctBlocks(entries) && ChangesDistinctBlocks(axis.name))) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": bytes or a share of the trace's blocks depend on '",
                                                     axis.name, "', which the grid varies; give blocks"));
    }
  }
  KVSIM_ASSIGN_OR_RETURN(proto::ExperimentConfig config, ResolveExperimentConfig(base, "--config"));
  CacheReplayOptions options;  // as the cache mode replays the trace (sim/sweep/sweep.cc)
  options.block_tokens = config.cache().block_tokens() > 0 ? config.cache().block_tokens() : 16;
  options.max_requests = config.workload().max_requests();
  TraceOptions trace_options;
  trace_options.format = sweep.trace_format;
  KVSIM_ASSIGN_OR_RETURN(std::vector<int64_t> blocks,
                         CapacitiesForTrace(entries, what, sweep.trace_path, trace_options, config, options));
  capacity->values.clear();
  for (int64_t b : blocks) capacity->values.push_back(absl::StrCat(b));
  return absl::OkStatus();
}

absl::Status RunSweepCommand(const std::vector<std::string>& args, std::ostream& out) {
  if (!args.empty() && args[0] == "merge") {
    std::vector<std::string> dirs(args.begin() + 1, args.end());
    std::string out_dir = absl::GetFlag(FLAGS_out);
    if (out_dir.empty() && !dirs.empty()) out_dir = dirs[0];
    KVSIM_ASSIGN_OR_RETURN(Table table, MergeSweep(dirs, out_dir));
    out << "merged " << table.rows().size() << " points into " << out_dir << "/results.csv and results.json\n";
    return absl::OkStatus();
  }
  if (!args.empty()) return absl::InvalidArgumentError("expected no arguments, or: merge DIR...");
  KVSIM_ASSIGN_OR_RETURN(std::vector<GridAxis> axes, ParseGrid(absl::GetFlag(FLAGS_grid)));
  KVSIM_ASSIGN_OR_RETURN(auto shard, ParseShard(absl::GetFlag(FLAGS_shard)));
  // The config as written: each point is applied to it before presets are resolved (sim/sweep/sweep.h).
  proto::ExperimentConfig base;
  const std::string config_path = absl::GetFlag(FLAGS_config);
  if (!config_path.empty()) KVSIM_RETURN_IF_ERROR(ParseTextProtoFile(config_path, &base));
  SweepOptions options;
  options.out_dir = absl::GetFlag(FLAGS_out);
  options.trace_path = absl::GetFlag(FLAGS_trace);
  if (options.trace_path.empty()) options.trace_path = base.workload().trace_path();
  options.trace_format = absl::GetFlag(FLAGS_trace_format);
  if (options.trace_format.empty()) options.trace_format = base.workload().trace_format();
  options.default_mode = absl::GetFlag(FLAGS_mode);
  options.shard_index = shard.first;
  options.num_shards = shard.second;
  KVSIM_ASSIGN_OR_RETURN(options.num_threads, ThreadsFromFlag());
  KVSIM_ASSIGN_OR_RETURN(options.memory_limit_bytes, MemoryLimitFromFlag());
  KVSIM_RETURN_IF_ERROR(ResolveCapacityAxis(base, options, &axes));
  // Progress on a terminal only (util/progress.h); RunSweep calls it one point at a time.
  Progress progress("sweep", 0, "points", Progress::ForStderr(absl::GetFlag(FLAGS_quiet)));
  options.progress = [&progress](int64_t done, int64_t total) {
    progress.set_total(total);
    progress.Update(done);
  };
  KVSIM_ASSIGN_OR_RETURN(SweepSummary summary, RunSweep(axes, base, options));
  progress.Finish();
  out << "shard " << shard.first << "/" << shard.second << ": " << summary.points_in_shard << " of "
      << NumGridPoints(axes) << " points (" << summary.points_run << " run, " << summary.points_skipped
      << " already done"
      << (summary.points_stale > 0
              ? absl::StrCat(", ", summary.points_stale, " rerun: trace, config or version changed")
              : "")
      << "); " << options.out_dir << "/shard-" << shard.first << "-of-" << shard.second << ".csv\n";
  if (shard.second == 1) {
    KVSIM_ASSIGN_OR_RETURN(Table table, MergeSweep({options.out_dir}, options.out_dir));
    out << "results: " << options.out_dir << "/results.csv and results.json (" << table.rows().size() << " rows)\n";
  }
  return absl::OkStatus();
}

}  // namespace

KVSIM_REGISTER_COMMAND(
    sweep,
    {
        .name = "sweep",
        .summary = "run a grid of policies x capacities x config fields; sharded, resumable, mergeable",
        .usage = "kvsim sweep --trace=T --grid=\"AXIS=VALUES ...\" --out=DIR [--mode=cache] [--shard=i/N]\n"
                 "            [--config=FILE] [--threads=0] [--memory_limit=BYTES]\n"
                 "kvsim sweep merge DIR... [--out=DIR]",
        .details =
            "Axes: {sweep_axes} (policy takes NAME[+leaf_first][+ttl]), mode ({sweep_modes}), or any\n"
            "scalar ExperimentConfig field by path (eviction.s3fifo.small_queue_ratio, workload.max_requests).\n"
            "VALUES: a comma list; LO:HI:xF is a geometric range, LO:HI:+S an arithmetic one. capacity_blocks also\n"
            "takes bytes (40GiB) and shares of the trace's distinct blocks (10%), as `kvsim cache --capacity`,\n"
            "resolved to blocks (the axis column) with --config's model. Points are the\n"
            "cartesian product (last axis fastest), run on --threads threads. Each finished point is written\n"
            "atomically to DIR/points/point-NNNNNNNN.pb and skipped on a rerun, so a killed shard resumes,\n"
            "unless its inputs changed (digest of trace bytes, resolved config, point, kvsim version).\n"
            "A shard writes DIR/shard-i-of-N.{csv,json}; with one shard, DIR/results.{csv,json} too. `merge`\n"
            "collects the points of several shard directories into one table with the grid coordinates in\n"
            "every row (columns axis.NAME); it fails when a point is missing or points come from different sweeps.\n"
            "Presets are resolved per point, so model_preset and device_preset are axes too. The replay mode\n"
            "is provided by the serving simulator. Cache points stream the trace as `kvsim cache` does: the\n"
            "points of one trace run together in passes whose estimated memory fits --memory_limit (default\n"
            "half the physical memory); Belady points hold the trace's accesses (checked against the limit).",
        .flags = {"trace", "trace_format", "grid", "mode", "shard", "config", "threads", "memory_limit", "out", "quiet"},
        .run = RunSweepCommand,
    });

}  // namespace kvsim
