// File: sim/cache/mrc.h
//
// One-pass LRU miss-ratio curves: the LRU hit ratio for every cache size from one pass over the trace,
// in the cache-replay semantics of sim/cache/cache_simulator.h. LRU is a stack algorithm (Mattson et al., IBM
// Systems Journal 1970): an access hits in an LRU cache of C blocks iff its stack distance d (the number
// of distinct blocks accessed since the previous access of the same block, itself included) is <= C.
// Distances come from markers over access times, one per block at its latest access: d = markers after
// the block's previous marker + 1. The markers are a bitmap with a Fenwick tree over its 64-bit words'
// counts (O(log n) per access; the tree is 64 times smaller than the time range, so it stays in cache). When the times
// reach the tree's size they are renumbered (compacted) into a tree of at least 4 x the distinct blocks, so memory is
// O(distinct blocks), not O(accesses). Each block's latest time lives in a flat open-addressing table (prefetched a few
// accesses ahead when the trace is in memory or within a request), and an array from time to table slot lets the
// compaction renumber the markers in one scan of the bitmap, no sort.
//
// Prefix hits: an access is a prefix hit at size C iff it and every earlier block of its request hit,
// i.e. the running maximum of the request's distances is <= C; its histogram gives the prefix curve.
//
// SHARDS (Waldspurger et al., "Efficient MRC Construction with SHARDS", FAST 2015), fixed rate R: only
// blocks with hash(block) mod 2^24 < R x 2^24 are tracked, and a sampled distance d stands for d / R
// blocks. Memory and time scale with R. The prefix curve is not available under sampling (a request's
// leading blocks are mostly not sampled): InvalidArgument.
//
// Hot blocks (MrcOptions::hot_blocks, found by FindHotBlocks): spatial sampling keeps or drops a block
// with all its accesses, so one block carrying a large share of the accesses (the system prompt every
// conversation starts with) makes the sampled curve wrong at every size: dropped (probability 1 - R) its
// hits are missing, kept it stands for 1 / R blocks. The remedy is stratified sampling with a take-all
// (certainty) stratum for the heaviest units beside the sample (Cochran, "Sampling Techniques", 3rd ed., Wiley 1977,
// sections 5.1-5.5; the sampled stratum is a cluster sample of blocks with a ratio estimator, section 6.2 and 9A).
// Here: the hot blocks are tracked on every access; a distance counts each hot block between as 1 and each sampled one
// as 1 / R; the hit ratio at C is (hits of hot accesses at C + (N - N_hot) x the sampled accesses' hit fraction at C)
// / N, with N and N_hot counted exactly over the whole stream (tokens likewise).
//
// Error bound (MrcPoint::error_bound, 0 when exact), an estimate of 3 standard errors of the block
// hit ratio at C, the sum of two terms:
//   selection  3 max(p, 1 - p) sqrt((1 - R) S) / (R N): the ratio estimator's variance under
//              independent inclusion of each block with probability R, each sampled block's residual
//              h_i - p a_i bounded by a_i max(p, 1 - p); S = sum over sampled blocks of a_i^2 (a_i its
//              accesses), p the sampled hit fraction at C;
//   distance   F(C (1 + d)) - F(C (1 - d)), d = min(1, 3 sqrt((1 - R) / (C R))): the estimated curve F's
//              change over 3 standard deviations of a distance that a scaled count of C R sampled
//              blocks gives.
//
// Memory (EstimateLruMrcBytes): the builder's arrays are per tracked block (a table slot of 24 bytes at load
// 1/4..1/2) and per time of the marker range (4 x to 8 x the tracked blocks; 12.2 bytes each: bitmap, tree,
// owner and histogram; +8 with the prefix curve, +8.2 with hot blocks). Both grow by doubling, and a growth
// holds the old and the new array a moment, so the peak is about 100 to 240 bytes per tracked block (147
// measured at 13.9M; more with the prefix curve or hot blocks), plus kPassOverheadBytes for the reader. A builder given
// MrcOptions::memory_limit_bytes refuses any growth that would take its arrays past the limit: ResourceExhausted,
// not a process killed for memory. ComputeLruMrcWithinLimit uses that to keep the whole pass within the limit,
// choosing the SHARDS rate from a distinct-block count (util/stream_sketch.h's DistinctCounter) when the exact
// curve does not fit. The tracked blocks at rate R are about hot + R (distinct - hot), so memory is flat in
// trace length at a fixed limit: a longer trace gets a lower rate (and a larger error bound), not more memory.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(LruMrc mrc, ComputeLruMrc(reader.get(), replay_options, {}));
//   mrc.HitRatio(4096);   // equals RunCacheReplays(lru @ 4096).HitRatio() exactly when R = 1
//
// Thread-safety: values; the functions are reentrant.
#ifndef KVSIM_SIM_CACHE_MRC_H_
#define KVSIM_SIM_CACHE_MRC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/cache/cache_batches.h"
#include "sim/cache/cache_simulator.h"
#include "traces/trace_reader.h"

namespace kvsim {

// The default MrcOptions::hot_share of `kvsim mrc --hot_share` and the Python module's mrc.
inline constexpr double kDefaultMrcHotShare = 0.001;

struct MrcOptions {
  double sample_rate = 1.0;  // SHARDS rate R in [1e-6, 1]; 1 = exact
  bool prefix = false;       // also the prefix-hit curve (exact only)
  // Blocks tracked exactly outside the sample (see above); ignored at R = 1. Usually FindHotBlocks'.
  std::vector<BlockId> hot_blocks;
  // For callers that find the hot blocks (kvsim mrc): the access share above which a block is hot,
  // in [0, 1); 0 = none. Not used by ComputeLruMrc itself.
  double hot_share = 0;
  // Run-time guard: ResourceExhausted as soon as the tracked blocks' arrays would grow past this many bytes
  // (kPassOverheadBytes included); 0 = none.
  int64_t memory_limit_bytes = 0;
};

// One point of a curve.
struct MrcPoint {
  int64_t capacity_blocks = 0;
  double hit_ratio = 0;
  double token_hit_ratio = 0;
  double prefix_hit_ratio = 0;        // 0 unless computed
  double prefix_token_hit_ratio = 0;  // 0 unless computed
  double error_bound = 0;             // estimated bound on |hit_ratio - exact|; 0 when exact (see above)
};

class LruMrc {
 public:
  // Ratios of an LRU cache of `capacity_blocks` blocks (>= 0).
  MrcPoint At(int64_t capacity_blocks) const;
  double HitRatio(int64_t capacity_blocks) const { return At(capacity_blocks).hit_ratio; }

  // The curve at every size where it changes (each is the capacity at which a distance first fits), in
  // increasing order: the step points that define it for every size.
  std::vector<MrcPoint> StepPoints() const;

  // The estimated error bound at `capacity_blocks` (see above).
  double ErrorBound(int64_t capacity_blocks) const;

  double sample_rate() const { return sample_rate_; }
  int64_t num_hot_blocks() const { return num_hot_blocks_; }
  int64_t sampled_accesses() const { return accesses_; }
  int64_t tracked_blocks() const { return tracked_blocks_; }  // distinct blocks the pass tracked
  bool has_prefix() const { return has_prefix_; }

 private:
  friend class MrcBuilder;
  // Cumulative counts of accesses with (scaled) distance <= index, built by Finish().
  int64_t CountAtMost(const std::vector<int64_t>& cumulative, int64_t capacity_blocks) const;

  double sample_rate_ = 1.0;
  bool has_prefix_ = false;
  int64_t accesses_ = 0;  // sampled accesses outside the hot blocks
  int64_t tokens_ = 0;
  int64_t total_accesses_ = 0;  // every access of the stream
  int64_t total_tokens_ = 0;
  int64_t hot_accesses_ = 0;
  int64_t hot_tokens_ = 0;
  int64_t num_hot_blocks_ = 0;
  int64_t tracked_blocks_ = 0;
  int64_t sampled_square_sum_ = 0;  // sum over sampled blocks of their accesses squared
  // Cumulative histograms by unscaled distance d (index d, 1-based; index 0 = 0).
  std::vector<int64_t> hits_, hit_tokens_, prefix_hits_, prefix_hit_tokens_;
  std::vector<int64_t> hot_hits_, hot_hit_tokens_;  // of the hot blocks' accesses
};

// Streams `reader` once. InvalidArgument for a rate outside (0, 1], prefix with sampling, or the
// reader's / replay options' errors; ResourceExhausted when options.memory_limit_bytes stops it.
absl::StatusOr<LruMrc> ComputeLruMrc(TraceReader* reader, const CacheReplayOptions& replay, const MrcOptions& options);

// The blocks whose share of all block accesses is `hot_share` or more (every one of them, and maybe some
// with at least half that share), in increasing id order, from one pass with Misra-Gries counters
// (Misra and Gries, "Finding repeated elements", Science of Computer Programming 1982): memory
// O(1 / hot_share), not O(distinct blocks). InvalidArgument for a share outside (0, 1).
absl::StatusOr<std::vector<BlockId>> FindHotBlocks(TraceReader* reader, const CacheReplayOptions& replay,
                                                   double hot_share);

// Estimated peak bytes of a one-pass LRU curve that tracks `tracked_blocks` blocks (see the header
// comment), kPassOverheadBytes included; an upper value of what the run-time guard checks.
int64_t EstimateLruMrcBytes(int64_t tracked_blocks, bool prefix, bool hot_blocks);

// The most blocks whose EstimateLruMrcBytes is within `memory_limit_bytes` (0 if none fits).
int64_t MaxLruMrcTrackedBlocks(int64_t memory_limit_bytes, bool prefix, bool hot_blocks);

// Expected tracked blocks at SHARDS rate `sample_rate` with `num_hot_blocks` of `distinct_blocks` tracked
// on every access, with three binomial standard deviations of margin: hot + R (distinct - hot) + 3 sqrt(that).
int64_t ExpectedLruMrcTrackedBlocks(int64_t distinct_blocks, int64_t num_hot_blocks, double sample_rate);

// The largest rate R <= 1, a multiple of 2^-24 (the sampling test's resolution, so it is exactly the
// rate a run at --sample_rate=R uses), whose ExpectedLruMrcTrackedBlocks fits MaxLruMrcTrackedBlocks.
// InvalidArgument when even the smallest rate (1e-6) does not fit, naming the limit.
absl::StatusOr<double> ChooseLruMrcSampleRate(int64_t distinct_blocks, int64_t num_hot_blocks,
                                              int64_t memory_limit_bytes);

// What ComputeLruMrcWithinLimit decided (for a line on stderr and tests).
struct MrcMemoryPlan {
  int64_t memory_limit_bytes = 0;
  double sample_rate = 1;         // of the curve returned
  bool exact_over_limit = false;  // an exact pass was stopped by the guard
  int64_t distinct_blocks = -1;   // upper estimate from a counting pass; -1 = not counted
  int64_t num_hot_blocks = 0;
  int64_t tracked_blocks = 0;   // expected (sampled) or counted (exact)
  int64_t estimated_bytes = 0;  // EstimateLruMrcBytes(tracked_blocks)
  int64_t num_passes = 0;       // over the trace, counting and stopped ones included
};

// The one-pass LRU curve within `memory_limit_bytes` (0 = DefaultMemoryLimitBytes()); `open` reopens the
// trace at its start for each pass. With `choose_rate` (and no prefix) options.sample_rate is ignored: an
// exact pass runs under the guard; if it stops, a second pass counts the distinct blocks (and finds the hot
// ones, options.hot_share) and a third runs at ChooseLruMrcSampleRate's rate. Without it the rate is the
// caller's: below 1 the counting pass comes first and InvalidArgument (before the curve's pass) says when
// its estimate exceeds the limit, with the rate that would fit; an exact pass (rate 1 or prefix) that the
// guard stops is refused with the memory it would need (from a counting pass) and the flag to raise.
absl::StatusOr<LruMrc> ComputeLruMrcWithinLimit(const TraceReopener& open, const CacheReplayOptions& replay,
                                                const MrcOptions& options, bool choose_rate, int64_t memory_limit_bytes,
                                                MrcMemoryPlan* plan = nullptr);

// E.g. "exact (1.2M distinct blocks tracked, 180.0 MiB estimated, memory limit 64.00 GiB)" or "sample rate
// 0.0241 chosen: the exact curve needs more than the memory limit 2.00 GiB; 13.9M distinct blocks estimated,
// 335K tracked at about 110 bytes each, 36.8 MiB estimated".
std::string DescribeMrcMemoryPlan(const MrcMemoryPlan& plan);

// The same over a trace held in memory (benchmarks; options validated as above).
absl::StatusOr<LruMrc> ComputeLruMrcOnTrace(const CompiledTrace& trace, const MrcOptions& options);

}  // namespace kvsim

#endif  // KVSIM_SIM_CACHE_MRC_H_
