// File: sim/sweep/sweep.h
//
// Sweeps: a grid over policies x capacities x any ExperimentConfig field, each point one run (a `cache`
// replay, or a `replay` of the serving simulator: sim/sweep/serving_mode.h registers that mode), on all cores,
// resumable and shardable.
//
// Grid syntax: space-separated axes NAME=VALUES. VALUES is a comma list of items; an item LO:HI:xF is
// the geometric range LO, LO*F, ... <= HI, and LO:HI:+S the arithmetic range LO, LO+S, ... <= HI
// (integers). Axis names:
//   policy           a policy spec "NAME[+leaf_first][+ttl]" (sets eviction.name/leaf_first/ttl_pin)
//   capacity_blocks  cache capacity in blocks (sets cache.gpu_capacity_blocks)
//   block_tokens     block size for traces without hashes (sets cache.block_tokens)
//   mode             "cache" or "replay" (default: the sweep's --mode)
//   a.b.c            any scalar field of ExperimentConfig by its path, e.g. eviction.s3fifo.small_queue_ratio,
//                    cache.reuse_mode (enum value name or number); set through protobuf reflection.
// Points are the cartesian product in a fixed order (the last axis varies fastest), numbered from 0.
// Axes apply in grid order, so put `policy` before eviction.* parameters.
//
// Each point's config is the base config with the point applied, then resolved (presets, defaults:
// config/experiment_config.h), so model_preset and device_preset are axes like any other.
//
// Memory: a cache point streams the trace, as `kvsim cache` does (sim/cache/cache_batches.h): the points of
// one trace run together in passes whose estimated memory fits SweepOptions::memory_limit_bytes, so memory
// grows with the capacities, not with the trace; only Belady, which needs every next use, holds the trace's
// accesses (about 50 bytes each, checked against the same limit). Replay points run one per thread, each
// in the serving simulator's bounded memory.
//
// Shard i/N runs the points whose index mod N == i. Each finished point is written atomically to
// DIR/points/point-<index>.pb (a proto::SweepPointResult) with the SHA-256 digest of what determines it
// (the trace file's bytes, trace format, mode, resolved config, coordinates, kvsim version). A rerun skips
// a point whose digest is unchanged, so an interrupted shard resumes where it stopped, and reruns one whose
// inputs changed (another --trace or --config); a point file of another grid is an error. After its points,
// a shard writes DIR/shard-<i>-of-<N>.csv and .json. MergeSweep reads the point files of any number of
// directories (each point once), requires one sweep (same inputs and grid) and every point of its grid, and
// writes one table (CSV + JSON) with the grid coordinates, prefixed `axis.`, in every row.
// Results are identical for any number of threads and shards.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(std::vector<GridAxis> axes, ParseGrid("policy=lru,asym capacity_blocks=1000:64000:x2"));
//   SweepOptions options; options.out_dir = "/tmp/sweep"; options.trace_path = "t.jsonl";
//   KVSIM_ASSIGN_OR_RETURN(SweepSummary summary, RunSweep(axes, base_config, options));
//
// Thread-safety: RunSweep uses its own threads; sweep modes must be reentrant.
#ifndef KVSIM_SIM_SWEEP_SWEEP_H_
#define KVSIM_SIM_SWEEP_SWEEP_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/config.pb.h"
#include "proto/sweep.pb.h"
#include "sim/cache/cache_simulator.h"
#include "util/registry.h"
#include "util/table.h"

namespace kvsim {

struct GridAxis {
  std::string name;
  std::vector<std::string> values;
};

// InvalidArgument naming the axis for a malformed axis, range or empty value list, or a repeated name.
absl::StatusOr<std::vector<GridAxis>> ParseGrid(absl::string_view grid);

// One axis' VALUES (see the header comment); also used for --capacity_blocks and --sizes lists.
absl::StatusOr<std::vector<std::string>> ExpandGridValues(absl::string_view values);

// The same, as positive integers (InvalidArgument naming `what` otherwise).
absl::StatusOr<std::vector<int64_t>> ParsePositiveIntList(absl::string_view values, absl::string_view what);

// Point `index` of the grid: one (axis, value) per axis. REQUIRES: index < NumGridPoints(axes).
std::vector<std::pair<std::string, std::string>> GridPoint(const std::vector<GridAxis>& axes, int64_t index);
int64_t NumGridPoints(const std::vector<GridAxis>& axes);

// Applies the point's coordinates to `config` (see the header comment) and returns the mode
// ("" if the point has no mode axis). InvalidArgument naming the axis and value if a field is unknown,
// not a scalar, or the value does not parse.
absl::StatusOr<std::string> ApplyGridPoint(const std::vector<std::pair<std::string, std::string>>& point,
                                           proto::ExperimentConfig* config);

// "i/N" with 0 <= i < N.
absl::StatusOr<std::pair<int, int>> ParseShard(absl::string_view shard);

// What a sweep mode needs to run one point.
struct SweepPointContext {
  proto::ExperimentConfig config;  // the base config with the point applied
  std::string trace_path;
  std::string trace_format;
};

// The points of a shard that one mode is to run (those not already done), and how.
struct SweepModeBatch {
  std::vector<const SweepPointContext*> points;  // in point-index order
  // results[i]: point i's result, its identity (index, coordinates, digests) already set; the mode fills
  // its `result` oneof.
  std::vector<proto::SweepPointResult*> results;
  int num_threads = 1;             // >= 1
  int64_t memory_limit_bytes = 0;  // the cache mode's budget of one pass (sim/cache/cache_batches.h); > 0
  // The mode calls this exactly once per point, as soon as the point is finished (status OK, results[i]
  // filled) or has failed (a message that names the point or points it concerns, "point 3: ...", by their
  // results' point_index); from any of its threads, for different points at the same time.
  std::function<void(size_t i, const absl::Status& status)> done;
};

// Runs the points of a batch. A mode may run them together: the cache mode replays every point that
// shares a trace (the same block_tokens and max_requests) as `kvsim cache` does, in passes over the trace
// within the memory limit; the replay mode runs each point on its own (RunEachPoint).
using SweepModeRunner = std::function<void(const SweepModeBatch& batch)>;

// Runs `run_point` for every point of `batch` on batch.num_threads threads, calling batch.done after each
// (errors prefixed "point INDEX: ").
void RunEachPoint(const SweepModeBatch& batch,
                  const std::function<absl::Status(const SweepPointContext& context, proto::SweepPointResult* out)>&
                      run_point);

// The sweep modes by name (util/registry.h). "cache" is built in; the serving simulator registers
// "replay" (sim/sweep/serving_mode.h).
Registry<SweepModeRunner>& SweepModeRegistry();

// A named grid axis: applies one value of it to the config. InvalidArgument naming the value if it does
// not parse. "policy", "capacity_blocks" and "block_tokens" are registered here; any other axis name is
// the path of a config field.
using SweepAxisApplier = std::function<absl::Status(const std::string& value, proto::ExperimentConfig* config)>;
Registry<SweepAxisApplier>& SweepAxisRegistry();

struct SweepOptions {
  std::string out_dir;       // required
  std::string trace_path;    // required
  std::string trace_format;  // "" = detect
  std::string default_mode = "cache";
  int shard_index = 0;
  int num_shards = 1;
  int num_threads = 0;  // 0 = hardware concurrency
  // The cache mode's budget for one pass over the trace (`kvsim cache --memory_limit`); 0 =
  // DefaultMemoryLimitBytes(), half the physical memory.
  int64_t memory_limit_bytes = 0;
  // Called after each point run here (not the skipped ones) with (points done, points to run), one call
  // at a time from the worker threads; may be empty.
  std::function<void(int64_t, int64_t)> progress;
};

struct SweepSummary {
  int64_t points_in_shard = 0;
  int64_t points_run = 0;
  int64_t points_skipped = 0;  // already finished in out_dir from the same inputs
  int64_t points_stale = 0;    // finished from other inputs (trace, config, kvsim version): rerun
};

absl::StatusOr<SweepSummary> RunSweep(const std::vector<GridAxis>& axes, const proto::ExperimentConfig& base,
                                      const SweepOptions& options);

// The table of the point results found in `dirs` (sorted by point index; each index once: a second copy
// must be identical, else InvalidArgument). FailedPrecondition naming the points when one of the grid's
// points is missing or points come from different sweeps (another trace, config, grid or kvsim version);
// NotFound when there are none. Writes <out_dir>/results.csv and results.json if out_dir is not empty.
absl::StatusOr<Table> MergeSweep(const std::vector<std::string>& dirs, const std::string& out_dir);

// The table of `results` (coordinates first as `axis.NAME`, then the mode's columns).
Table SweepTable(const std::vector<proto::SweepPointResult>& results);

}  // namespace kvsim

#endif  // KVSIM_SIM_SWEEP_SWEEP_H_
