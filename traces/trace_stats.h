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
// Memory: O(requests) for the exact token percentiles, O(distinct blocks + block references) for the
// block statistics.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(auto reader, OpenTrace(path, {}));
//   KVSIM_ASSIGN_OR_RETURN(TraceStats stats, ComputeTraceStats(*reader));
//   std::cout << FormatTraceStats(stats);
#ifndef KVSIM_TRACES_TRACE_STATS_H_
#define KVSIM_TRACES_TRACE_STATS_H_

#include <cstdint>
#include <string>
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
};

// Reads `reader` to the end. Returns the reader's error if it fails.
absl::StatusOr<TraceStats> ComputeTraceStats(TraceReader& reader);

// A human-readable table, one fact a line.
std::string FormatTraceStats(const TraceStats& stats);

// The same facts as one pretty-printed JSON object (stable key names in a fixed order, ending in a newline;
// a mean that is not finite is null).
std::string FormatTraceStatsJson(const TraceStats& stats);

}  // namespace kvsim

#endif  // KVSIM_TRACES_TRACE_STATS_H_
