// File: sim/sweep/capacity_search.h
//
// Capacity search (`kvsim capacity`): the highest request rate at which a deployment meets its SLOs, found
// by replaying the trace with its arrival times scaled, and the cheapest of a grid of deployments that
// meets a target rate.
//
// Rate: the trace's own rate is (n - 1) / (last arrival - first arrival); replaying it at rate r scales
// every arrival by trace_rate / r (rounded to the ns). Lengths, hashes and order are unchanged.
//
// SLOs: "METRIC:STAT<=LIMIT" joined by commas, e.g. "ttft_ms:P99<=2000,tpot_ms:P99<=100". METRIC is one of
// ttft_ms, tpot_ms, e2e_ms, queueing_ms (the replay summary's distributions, milliseconds); STAT one of
// mean, P50, P90, P99, max (case-insensitive). A rate holds when every request finished and every bound
// holds on the replay summary.
//
// Search (assumes that a rate that holds is held by every lower rate):
//   1. bracket: from the start rate (the trace's, unless given), rounds of `width` rates, each round
//      doubling (while the start holds) or halving (while it fails) the last one, until a rate that holds
//      and one that fails are adjacent: lo holds, hi = the next one up fails;
//   2. bisect: rounds of `width` rates evenly spaced inside (lo, hi); lo becomes the highest that holds
//      below the lowest that fails, hi that lowest failure; until hi - lo <= tolerance x lo.
//   The answer is lo: every rate up to it that was tried holds, and the true threshold lies in [lo, hi),
//   so lo is within `tolerance` of it. The rates of a round run in parallel; which rates are tried does
//   not depend on the thread count, so the path and the answer are identical for any --threads.
//
// Sharded and resumable search (as `kvsim sweep`): with an output directory, each replay's outcome is
// written atomically to DIR/points/capacity-rate-<rate>.txt with a digest of what determines it (kvsim
// version, resolved config, SLO list, the trace's requests) and read back instead of replayed on a rerun
// (a file from other inputs is replayed again and overwritten). Shard i/N replays the rates of each round
// whose position in the round (ascending) mod N == i, and reads the others' from DIR: the rates of a round
// depend only on earlier rounds, so every shard follows the same path. When another shard's outcome is not
// in DIR yet, the shard waits for it up to `shard_wait_s` (polling), then stops with the search incomplete;
// rerunning any shard once the others have run continues where it stopped. The answer is identical for any
// shard count and thread count.
//
// Grid: each point of a sweep grid (sim/sweep/sweep.h axes: cluster.num_replicas, device_preset,
// model.tensor_parallel_size, scheduler.chunk_tokens, policy, ...) is replayed once at the target rate.
// GPUs = replicas x tensor-parallel size; GPU-hours per million requests = GPUs x 1e6 / rate / 3600. The
// cheapest point meeting the SLOs has the fewest GPU-hours per million requests (ties: lowest index).
// Shard i/N runs the points whose index mod N == i; each finished point is written to
// DIR/points/capacity-point-<index>.json and skipped on a rerun (a file of another grid point is an
// error); once all points are in DIR, the table and the answer are written.
//
// Thread-safety: the functions use their own threads; the cost models must be thread-safe for const use.
#ifndef KVSIM_SIM_SWEEP_CAPACITY_SEARCH_H_
#define KVSIM_SIM_SWEEP_CAPACITY_SEARCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cost_models/cost_model.h"
#include "proto/config.pb.h"
#include "proto/results.pb.h"
#include "sim/sweep/sweep.h"
#include "traces/request.h"
#include "traces/trace_reader.h"
#include "util/table.h"

namespace kvsim {

struct SloBound {
  std::string metric;  // ttft_ms, tpot_ms, e2e_ms, queueing_ms
  std::string stat;    // mean, p50, p90, p99, max (lower case)
  double limit = 0;    // milliseconds
};

// InvalidArgument naming the bound and what was expected for a malformed list or an unknown metric/stat.
absl::StatusOr<std::vector<SloBound>> ParseSloBounds(absl::string_view text);

// The bound's value in `summary`.
double SloValue(const proto::Summary& summary, const SloBound& bound);

struct CapacityOptions {
  double tolerance = 0.02;      // relative width of the final bracket; in (0, 1)
  int width = 4;                // rates per round; >= 1 (fixed, so the path does not depend on threads)
  int num_threads = 0;          // 0 = hardware concurrency
  double start_rate_per_s = 0;  // 0 = the trace's own rate
  int max_rounds = 64;          // bracketing rounds before giving up
  std::string out_dir;          // "" = nothing written or read; required when num_shards > 1
  int shard_index = 0;          // this shard, in [0, num_shards)
  int num_shards = 1;
  double shard_wait_s = 0;  // how long to wait for another shard's outcome before stopping; in [0, 1e6]
};

// One replay of the search.
struct CapacityEvaluation {
  int round = 0;
  std::string phase;  // "bracket" or "bisect"
  double rate_per_s = 0;
  bool holds = false;
  std::vector<double> values;  // one per SLO bound
  int64_t finished_requests = 0;
  int64_t num_requests = 0;
};

struct CapacityResult {
  // False when this shard stopped at a rate of another shard not yet in out_dir: then only `path` up to
  // there (this shard's and others' outcomes so far) and trace_rate_per_s are set.
  bool complete = true;
  int64_t rates_replayed = 0;  // by this call
  int64_t rates_read = 0;      // from out_dir (earlier runs or other shards)
  double trace_rate_per_s = 0;
  double max_rate_per_s = 0;             // lo: the highest rate tried that holds
  double first_fail_per_s = 0;           // hi: the lowest rate tried that fails
  std::vector<CapacityEvaluation> path;  // in the order tried (within a round: ascending rate)
};

// The trace a search replays, as a stream: every replay reads it afresh through `open`, arrivals scaled
// as they are read, so neither a replay nor the search holds the whole trace (memory does not grow with
// its length; each replay in flight has the serving simulator's bounded memory). Made by ScanCapacityTrace.
struct CapacityTrace {
  TraceReopener open;        // a fresh reader at the first record
  int64_t max_requests = 0;  // only the first max_requests records are replayed; 0 = all
  int64_t num_requests = 0;  // the records replayed
  double rate_per_s = 0;     // their rate (see the header comment)
  std::string digest;        // SHA-256 of their contents: what keys the outcome files
};

// One pass over the first `max_requests` (0 = all) records of `open`'s trace: their count, rate and
// digest. InvalidArgument if they have fewer than two distinct arrivals; the reader's errors as they are.
absl::StatusOr<CapacityTrace> ScanCapacityTrace(TraceReopener open, int64_t max_requests);

// Requests held in memory as a CapacityTrace (tests, generated workloads).
absl::StatusOr<CapacityTrace> CapacityTraceFromRequests(std::vector<Request> requests);

// Replays `trace` at `rate_per_s` with `config` (resolved) and `cost_model`; the summary.
absl::StatusOr<proto::Summary> ReplayAtRate(const CapacityTrace& trace, double rate_per_s,
                                            const proto::ExperimentConfig& config, const CostModel& cost_model);

// Whether `summary` meets every bound and every request finished.
bool SloHolds(const proto::Summary& summary, const std::vector<SloBound>& slos);

// The search (header comment). FailedPrecondition when no rate holds down to start / 2^max_rounds or
// every rate holds up to start x 2^max_rounds; InvalidArgument for a bad option; DataLoss naming the file
// for an unreadable outcome file; errors of the replays as they are.
absl::StatusOr<CapacityResult> SearchCapacity(const CapacityTrace& trace, const proto::ExperimentConfig& config,
                                              const CostModel& cost_model, const std::vector<SloBound>& slos,
                                              const CapacityOptions& options);

// The search path as a table (round, phase, rate_per_s, holds, finished, one column per bound).
Table CapacityPathTable(const CapacityResult& result, const std::vector<SloBound>& slos);

// The answer and the path as one JSON object.
std::string CapacityJson(const CapacityResult& result, const std::vector<SloBound>& slos, double tolerance);

struct CapacityGridOptions {
  std::string out_dir;           // required
  double target_rate_per_s = 0;  // > 0
  int shard_index = 0;
  int num_shards = 1;
  int num_threads = 0;
  // Builds each point's cost model from its resolved config; empty = CreateCostModel (tests pass fakes).
  CostModelFactory cost_model_factory;
};

struct CapacityGridResult {
  int64_t points_in_shard = 0;
  int64_t points_run = 0;
  int64_t points_skipped = 0;
  bool complete = false;        // every grid point is in out_dir: `table` and the answer are set
  Table table;                  // one row per point: coordinates, gpus, holds, GPU-hours per million, bound values
  int64_t cheapest_point = -1;  // -1 = none meets the SLOs (or not complete)
  std::string cheapest_label;   // its coordinates, "axis=value ..."
  double cheapest_gpu_hours_per_million = 0;
};

// The grid (header comment). `base` unresolved or resolved (each point is resolved after its axes apply).
absl::StatusOr<CapacityGridResult> RunCapacityGrid(const std::vector<GridAxis>& axes,
                                                   const proto::ExperimentConfig& base,
                                                   const CapacityTrace& trace, const std::vector<SloBound>& slos,
                                                   const CapacityGridOptions& options);

}  // namespace kvsim

#endif  // KVSIM_SIM_SWEEP_CAPACITY_SEARCH_H_
