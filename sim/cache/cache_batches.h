// File: sim/cache/cache_batches.h
//
// Cache replay of many (policy, capacity) points in bounded memory. Each point's memory is estimated up
// front (EstimatePointBytes), the points are grouped in spec order into batches whose estimates fit a
// budget (PlanCacheBatches), and each batch is one pass over the trace, which is reopened for every pass (a
// streaming reader cannot rewind). The results are those of RunCacheReplays over all points at once, in
// spec order, for any budget: every point is an independent simulator that sees the whole trace in order.
//
// The estimate of one point (an estimate of its peak resident bytes, not a bound):
//   kPointOverheadBytes + ids x BytesPerTrackedId(policy)                      streaming (hashed ids)
//   kPointOverheadBytes + ids x BytesPerTrackedId(policy) + distinct x kDenseBytesPerId   compiled trace
//     + accesses x kOracleBytesPerAccess                                                    Belady
// with ids = min(ceil(capacity x IdsPerCapacity(policy)), distinct blocks): the ids the policy tracks
// at most, resident ones and the ghosts some keep (ARC, 2Q: 2 c; S3-FIFO: 1.9 c by default). The distinct
// blocks are counted only when the capacities alone do not fit (a pass with a HyperLogLog counter,
// taken 3 standard errors high). A compiled trace (any point that needs the Belady oracle) is held once
// for all points: kCompiledBytesPerAccess per access plus its distinct-block table, counted in every
// batch. kPassOverheadBytes covers the reader and one chunk of requests.
//
// Example:
//   CacheBatchOptions batch{.memory_limit_bytes = 4LL << 30};
//   KVSIM_ASSIGN_OR_RETURN(std::vector<CacheRunResult> results,
//                          RunCacheReplaysInBatches(open, specs, replay_options, batch, &plan));
//
// Thread-safety: the functions are reentrant; RunCacheReplaysInBatches uses its own threads.
#ifndef KVSIM_SIM_CACHE_CACHE_BATCHES_H_
#define KVSIM_SIM_CACHE_CACHE_BATCHES_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/config.pb.h"
#include "sim/cache/cache_simulator.h"
#include "traces/trace_reader.h"

namespace kvsim {

// Constants of the estimate (see the header comment); measured on this simulator's structures.
inline constexpr int64_t kPointOverheadBytes = 4096;
inline constexpr int64_t kPassOverheadBytes = int64_t{64} << 20;
inline constexpr int64_t kDenseBytesPerId = 24;
inline constexpr int64_t kCompiledBytesPerAccess = 40;
// Belady's arrays over access indices (policies/belady_policy.h): 4 bytes to name the block of each index
// and 2 bits in its trees, both grown by doubling (up to twice that).
inline constexpr int64_t kOracleBytesPerAccess = 9;

// Bytes per id the policy tracks (its list slot and its share of the index, with the growth slack of
// vectors and hash tables), wrappers included (+leaf_first: its B-tree of eligible blocks; +ttl: pins).
int64_t BytesPerTrackedId(const proto::EvictionPolicyConfig& policy);

// The ids a policy tracks per block of capacity (resident blocks and ghosts).
double IdsPerCapacity(const proto::EvictionPolicyConfig& policy);

// Estimated peak bytes of one point. distinct_blocks < 0: unknown (the capacity alone bounds the ids).
// `compiled`: the point runs over a compiled trace with dense ids, of `num_accesses` accesses (counted for
// the oracle policy only).
int64_t EstimatePointBytes(const CacheRunSpec& spec, int64_t distinct_blocks, bool compiled, int64_t num_accesses = 0);

// Half of the machine's physical memory (sysconf); 4 GiB if it cannot be read.
int64_t DefaultMemoryLimitBytes();

struct CacheBatchOptions {
  int64_t memory_limit_bytes = 0;  // the budget of one pass; 0 = DefaultMemoryLimitBytes()
};

// How the points were run (for a line on stderr and tests).
struct CacheBatchPlan {
  std::vector<std::vector<size_t>> batches;  // indices into the specs, in order
  std::vector<int64_t> point_bytes;          // EstimatePointBytes of each spec
  int64_t shared_bytes = 0;                  // pass overhead plus the compiled trace, if any
  int64_t distinct_blocks = -1;              // estimate, if counted; -1 = not needed
  int64_t num_accesses = 0;                  // of the compiled trace, if any
  bool compiled = false;                     // the points ran over a compiled trace
};

// Groups the points in spec order: a batch takes the next point while shared_bytes plus its points'
// estimates stay within the limit. InvalidArgument naming the first point that does not fit alone, what it
// would need and the limit. Fills plan->batches.
absl::Status PlanCacheBatches(int64_t memory_limit_bytes, CacheBatchPlan* plan, const std::vector<CacheRunSpec>& specs);

// Runs every spec (as RunCacheReplays) in batches within options.memory_limit_bytes, `open` called once per
// pass; `plan` (may be null) receives the plan. Errors: those of RunCacheReplays and PlanCacheBatches, and
// the opener's.
absl::StatusOr<std::vector<CacheRunResult>> RunCacheReplaysInBatches(const TraceReopener& open,
                                                                     const std::vector<CacheRunSpec>& specs,
                                                                     const CacheReplayOptions& options,
                                                                     const CacheBatchOptions& batch_options,
                                                                     CacheBatchPlan* plan = nullptr);

// One line about the plan, e.g. "12 points in 3 passes over the trace (memory limit 4.00 GiB, largest point
// 120.0 MiB estimated)".
std::string DescribeCacheBatchPlan(const CacheBatchPlan& plan, int64_t memory_limit_bytes);

// "4.00 GiB", "512.0 MiB", "100 B": bytes for messages.
std::string FormatBytes(double bytes);

}  // namespace kvsim

#endif  // KVSIM_SIM_CACHE_CACHE_BATCHES_H_
