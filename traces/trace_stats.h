// File: traces/trace_stats.h
//
// TraceStats: the facts `kvsim inspect` reports about a trace, computed in one streaming pass.
//
// Definitions (blocks are accessed in cache-replay order: requests in trace order, each request's
// blocks one after another; see docs/ARCHITECTURE.md, Semantics):
//  * duration_ns = last arrival - first arrival. Rate per minute: mean = requests / (duration in
//    minutes) (requests if the duration is 0); peak = most arrivals in one minute window
//    [k min, (k+1) min) counted from the first arrival.
//  * Percentiles are nearest-rank: pX = the smallest value v with at least X% of the values <= v
//    (sorted[ceil(X/100 * n) - 1]).
//  * block_references = blocks accessed (sum of len(block_hashes)); distinct_blocks = distinct ids.
//  * Unbounded hit ratio = accesses to a block seen before / block_references.
//  * Prefix-hit ratio = sum over requests of the leading blocks that hit in an unbounded cache
//    (until the request's first miss) / block_references.
//  * reused_block_fraction = distinct blocks accessed twice or more / distinct_blocks.
//  * Tokens per id: over every block reference, the block's tokens (BlockTokensAt: block_tokens, the
//    last block of a request partial; a variable-block trace's own counts): mean, min, max.
//  * Ids look prefix-chained when no id is preceded, in a later request, by another id than at its first
//    access (the first block of a request counts as preceded by "nothing"), and no id occurs twice in one
//    request. Prefix-chained ids (id_k a function of the whole prefix) always pass; content hashes of
//    chunks fail as soon as a chunk recurs after a different one. ids_with_other_predecessor and
//    ids_repeated_in_request count the accesses that break it.
//  * LRU stack distance of a reuse = the number of distinct other blocks accessed since the previous
//    access to the same block (its depth below the top of the LRU stack). The access hits in an LRU
//    cache of distance + 1 blocks or more and misses in any smaller one. This is the definition under
//    which the published Mooncake figures (p25/p50/p75 = 2,269/6,265/12,728) come out. Computed with a
//    Fenwick tree over last-access times, O(log n) per access. Quartiles are nearest-rank.
// Memory: bounded, whatever the trace's length (TraceStatsOptions):
//  * counts, sums, means, min and max are exact in O(1) memory;
//  * token percentiles: a QuantileSketch (util/stream_sketch.h), exact while a column has at most
//    exact_quantile_values distinct values, else within 1% + 0.5 of the exact nearest-rank value;
//  * sessions and distinct blocks: a DistinctCounter, exact up to exact_distinct_values, else a HyperLogLog
//    estimate (relative standard error 0.81%); block_references - distinct_blocks is then the reuse count and
//    the unbounded hit ratio's numerator;
//  * the statistics that need each block's history (prefix-hit ratio, reused fraction, predecessors, stack
//    distances) are exact while the trace has at most max_tracked_blocks distinct blocks. Past that they come
//    from a spatial sample of the blocks (SHARDS, Waldspurger et al., FAST 2015, with the fixed-size variant's
//    lowering rate): a block is sampled while the top 24 bits of its hash have a bit length <= the level,
//    which drops by one (halving the rate) whenever the sample would outgrow the bound, discarding that
//    group's blocks and statistics, so what remains is a fixed-rate sample at the final rate R. Ratios are
//    over the sampled accesses, counts and distances scaled by 1 / R; block_sample_error is 3 standard errors
//    of an access-weighted ratio, 3 sqrt((1 - R) sum a_i^2) / (R N) (a_i the sampled blocks' accesses, N all
//    accesses). The prefix-hit ratio is the unbounded hit ratio times the sample's share of reuses that are
//    leading (a sampled reuse leads while the request's earlier sampled blocks hit: all of them for
//    prefix-chained ids, where a hit implies every earlier block hits; an upper estimate otherwise). The
//    reused fraction's 3-sigma error is 3 sqrt(p (1 - p) (1 - R) / n) over n sampled blocks. A stack-distance
//    quartile v: the exact share of reuses up to v (1 + d) is at least q - block_sample_error and below
//    v (1 - d) at most q + block_sample_error, d = 1% + 3 sqrt((1 - R) / (R v)). Known weakness: a block with
//    a large share of all accesses (a system prompt) is in or out of the sample whole, which the bound's sum
//    over sampled blocks does not see when it is out; `kvsim mrc --sample_rate` tracks such blocks apart;
//  * the peak arrival rate keeps one count per minute of the trace's duration.
// TraceStats::approximate names every figure that is not exact, with its bound; empty = all exact.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(auto reader, OpenTrace(path, {}));
//   KVSIM_ASSIGN_OR_RETURN(TraceStats stats, ComputeTraceStats(*reader));
//   std::cout << FormatTraceStats(stats);
#ifndef KVSIM_TRACES_TRACE_STATS_H_
#define KVSIM_TRACES_TRACE_STATS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "traces/trace_reader.h"

namespace kvsim {

struct Distribution {
  double mean = 0;
  int64_t p50 = 0, p90 = 0, p99 = 0, max = 0;
};

struct TraceStats {
  std::string path;
  std::string format;
  int32_t block_tokens = 0;
  int64_t num_requests = 0;
  int64_t duration_ns = 0;
  double mean_requests_per_minute = 0;
  int64_t peak_requests_per_minute = 0;
  Distribution input_tokens;
  Distribution output_tokens;
  int64_t num_failed = 0;
  // Sessions (only requests with a session id count).
  int64_t num_sessions = 0;
  int64_t requests_in_sessions = 0;
  int32_t max_turn = 0;
  double mean_requests_per_session = 0;
  // Blocks.
  int64_t block_references = 0;
  int64_t distinct_blocks = 0;
  double unbounded_hit_ratio = 0;
  double prefix_hit_ratio = 0;
  double reused_block_fraction = 0;
  int64_t num_reuses = 0;
  // LRU stack distance quartiles (a reuse hits in an LRU cache of distance + 1 blocks).
  int64_t stack_distance_p25 = 0, stack_distance_p50 = 0, stack_distance_p75 = 0;
  // Tokens per id and chaining (see above).
  int64_t block_token_sum = 0;
  double mean_tokens_per_id = 0;
  int64_t min_tokens_per_id = 0, max_tokens_per_id = 0;
  bool ids_look_chained = true;
  int64_t ids_with_other_predecessor = 0;
  int64_t ids_repeated_in_request = 0;
  std::vector<std::string> warnings;  // the reader's
  // Figures that are estimates (name as in the JSON, how and within what); empty = every figure exact.
  std::vector<std::pair<std::string, std::string>> approximate;
  double block_sample_rate = 1;   // < 1: the per-block statistics come from a spatial sample (see above)
  double block_sample_error = 0;  // 3-sigma error of its access-weighted ratios; 0 when exact
};

// The bounds of ComputeTraceStats' memory (see the header comment).
struct TraceStatsOptions {
  int64_t max_tracked_blocks = int64_t{1} << 20;     // blocks with exact histories; >= 1
  int64_t exact_distinct_values = int64_t{1} << 20;  // distinct blocks and sessions counted exactly
  int64_t exact_quantile_values = int64_t{1} << 16;  // distinct values of a percentile column kept exactly
};

// Reads `reader` to the end. Returns the reader's error if it fails; InvalidArgument for bad options.
absl::StatusOr<TraceStats> ComputeTraceStats(TraceReader& reader, const TraceStatsOptions& options = {});

// A human-readable table, one fact a line.
std::string FormatTraceStats(const TraceStats& stats);

// The same facts as one pretty-printed JSON object (stable key names in a fixed order, ending in a newline;
// a mean that is not finite is null).
std::string FormatTraceStatsJson(const TraceStats& stats);

}  // namespace kvsim

#endif  // KVSIM_TRACES_TRACE_STATS_H_
