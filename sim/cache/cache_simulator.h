// File: sim/cache/cache_simulator.h
//
// Cache replay: the timing-free cache simulation that other cache simulators compute (docs/ARCHITECTURE.md,
// "Semantics"). Requests are taken in trace order and each request's blocks are accessed one
// after another; an access hits if the block is resident at that moment, and after it the block is
// resident (unless the policy declines admission: only Belady's bypass does). Capacity is in blocks.
// No block is pinned: every resident block is evictable, also those of the current request.
//
// Counted per run (policy x capacity):
//   hits          accesses that found their block resident;
//   prefix hits   the leading hits of each request (vLLM/SGLang prefix reuse): accesses before the
//                 request's first miss;
//   token ratios  each access weighs the tokens of its block: block_tokens, except a request's last
//                 block, which counts its real tokens (input_tokens - (n - 1) x block_tokens). Bytes are
//                 proportional to tokens, so this is the byte-weighted hit ratio. A request whose
//                 input_tokens is 0 or smaller than its hashes imply counts block_tokens per block.
//                 Variable blocks (Request::block_token_counts, hash-per-chunk traces) count their own
//                 tokens; hits and capacity stay in blocks (each id one block, whatever its size), and
//                 position_tokens stays block_index x block_tokens (the nominal size), a policy hint.
//
// Requests without hashes get AssignFreshBlockHashes(options.block_tokens). The AccessInfo each policy
// sees: clock = the access's index in the whole stream, time_ns = the request's arrival, block_index,
// position_tokens = block_index x block_tokens, size_bytes = 0 (uniform), restore_ns per
// options.restore_cost (kAuto by default: position-aware for asym and gdsf), next_access_clock when the oracle pre-pass
// ran (else -1), parent = previous block of the request. After each request's last block the policy gets OnRequestEnd
// (tool call of the request: the first tool's name and the sum of the tools' durations).
//
// Memory: runs without the oracle stream the trace (memory grows with the resident blocks, not the
// trace): requests are read in chunks of 4,096 that every run replays, the runs in parallel threads.
// Belady needs next uses, so RunCacheReplays loads the access stream (CompiledTrace, about 20 bytes per
// access) when any run uses Belady, and then runs all of them in parallel threads. Many runs at once:
// sim/cache/cache_batches.h groups them into passes that fit a memory budget.
//
// Example:
//   CacheReplayOptions options;
//   KVSIM_ASSIGN_OR_RETURN(std::vector<CacheRunResult> results,
//                          RunCacheReplays(reader.get(), {{"lru", 1000}, {"belady", 1000}}, options));
//   results[0].stats.HitRatio();
//
// Thread-safety: CacheSimulator is single-threaded; RunCacheReplays uses its own threads.
#ifndef KVSIM_SIM_CACHE_CACHE_SIMULATOR_H_
#define KVSIM_SIM_CACHE_CACHE_SIMULATOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "policies/eviction_policy.h"
#include "proto/config.pb.h"
#include "traces/request.h"
#include "traces/trace_reader.h"

namespace kvsim {

// How AccessInfo::restore_ns is filled in cache replay.
enum class RestoreCost {
  kUniform,   // 0: every block costs the same (cost-aware policies reduce to their uniform form)
  kPosition,  // PositionRestoreCost: proportional to recomputing the block, whose attention spans
              // everything before it (AsymCache's linear-in-position model; 1 unit per token)
  kAuto,      // kPosition for the cost-aware policies (IsCostAwarePolicy), kUniform for the others
};

// The restore cost of a block of `tokens` tokens after `position_tokens` tokens, in tokens of attention
// span: position_tokens + tokens. Cache replay reports, besides hits, the sum of this over all accesses
// (CacheStats::restore_cost) and over hits (restore_cost_saved: the recompute the cache spared), whatever
// restore cost the policy was shown.
inline int64_t PositionRestoreCost(int64_t position_tokens, int64_t tokens) { return position_tokens + tokens; }

// Policies whose choices depend on AccessInfo::restore_ns: "asym" and "gdsf" (by base name).
bool IsCostAwarePolicy(const proto::EvictionPolicyConfig& policy);

// `cost` with kAuto resolved for `policy`.
RestoreCost ResolveRestoreCost(RestoreCost cost, const proto::EvictionPolicyConfig& policy);

struct CacheReplayOptions {
  int32_t block_tokens = 16;  // block size for requests without hashes; > 0
  RestoreCost restore_cost = RestoreCost::kAuto;
  int64_t max_requests = 0;  // replay only the first N requests; 0 = all
  int num_threads = 0;       // parallel runs; 0 = hardware concurrency
  // Called with (requests done, total; 0 = not known) as a replay proceeds, from one thread at a time
  // (e.g. util/progress.h's Progress::Callback()): requests read while a trace streams (total
  // max_requests, if set), then requests x runs replayed on a compiled trace. Results do not depend on it.
  std::function<void(int64_t done, int64_t total)> progress;

  void ReportProgress(int64_t done, int64_t total) const {
    if (progress) progress(done, total);
  }
};

struct CacheStats {
  int64_t requests = 0;
  int64_t accesses = 0;
  int64_t hits = 0;
  int64_t prefix_hits = 0;
  int64_t tokens = 0;
  int64_t hit_tokens = 0;
  int64_t prefix_hit_tokens = 0;
  int64_t evictions = 0;
  int64_t bypasses = 0;            // misses the policy declined to admit (Belady)
  int64_t restore_cost = 0;        // PositionRestoreCost over all accesses
  int64_t restore_cost_saved = 0;  // PositionRestoreCost over hits

  double HitRatio() const { return accesses == 0 ? 0 : static_cast<double>(hits) / accesses; }
  double PrefixHitRatio() const { return accesses == 0 ? 0 : static_cast<double>(prefix_hits) / accesses; }
  double TokenHitRatio() const { return tokens == 0 ? 0 : static_cast<double>(hit_tokens) / tokens; }
  double PrefixTokenHitRatio() const { return tokens == 0 ? 0 : static_cast<double>(prefix_hit_tokens) / tokens; }
  double RestoreCostSavedRatio() const {
    return restore_cost == 0 ? 0 : static_cast<double>(restore_cost_saved) / restore_cost;
  }
};

// One request's accesses as the simulator consumes them.
struct RequestView {
  uint64_t request_id = 0;
  int64_t arrival_ns = 0;
  int64_t session_id = -1;
  int32_t block_tokens = 0;
  const BlockId* blocks = nullptr;
  const int32_t* tokens = nullptr;    // tokens of each block
  const int64_t* next_use = nullptr;  // next access clock of each access; nullptr = unknown
  // The blocks as dense ids (CompiledTrace::dense_blocks), or nullptr. A simulator after UseDenseIds
  // reads these (REQUIRES: set); any other reads `blocks`.
  const uint32_t* dense_blocks = nullptr;
  int64_t num_blocks = 0;
  RequestEndInfo end;  // MakeRequestEndInfo at the arrival time
};

// The access stream of a trace, in memory (struct of arrays).
struct CompiledTrace {
  struct RequestMeta {
    uint64_t request_id = 0;
    int64_t arrival_ns = 0;
    int64_t session_id = -1;
    int32_t block_tokens = 0;
    RequestEndInfo end;  // MakeRequestEndInfo at the arrival time
  };
  std::vector<BlockId> blocks;         // every access, in order
  std::vector<int32_t> tokens;         // tokens of each access's block
  std::vector<int64_t> request_begin;  // first access of each request; one extra entry at the end
  std::vector<RequestMeta> requests;
  std::vector<int64_t> next_use;  // filled by ComputeNextUse; empty otherwise
  // Dense ids (AssignDenseIds; empty otherwise): each access's block numbered in the order the trace
  // first uses it, so a prompt's blocks, and the same prefix when a later turn re-sends it, have
  // neighbouring ids and the arrays indexed by id are read in order; distinct_blocks[id] is the hash.
  // No policy's choice depends on the ids' values (ties break on access clocks or arrival order).
  std::vector<uint32_t> dense_blocks;
  std::vector<BlockId> distinct_blocks;

  int64_t num_requests() const { return static_cast<int64_t>(requests.size()); }
  int64_t num_accesses() const { return static_cast<int64_t>(blocks.size()); }
  RequestView View(int64_t request) const;
};

// Reads every record of `reader` (hashes assigned where missing). Errors: the reader's status; a
// request with block_tokens <= 0 and hashes (InvalidArgument naming the request).
absl::StatusOr<CompiledTrace> CompileTrace(TraceReader* reader, const CacheReplayOptions& options);

// Fills trace->next_use: for each access, the index of the next access of the same block, or
// AccessInfo::kNever. One backward pass; with dense ids its scratch is one entry per distinct block.
void ComputeNextUse(CompiledTrace* trace);

// Fills trace->dense_blocks and distinct_blocks (one hash lookup per access). Leaves both empty when the
// trace has 2^32 distinct blocks or more. CompileTrace calls it.
void AssignDenseIds(CompiledTrace* trace);

// InvalidArgument if block_tokens <= 0 or max_requests < 0.
absl::Status ValidateReplayOptions(const CacheReplayOptions& options);

// Assigns fresh hashes to a request without them (options.block_tokens); InvalidArgument naming the
// request if it has hashes but no block size.
absl::Status PrepareRequestForReplay(const CacheReplayOptions& options, Request* request);

// The tokens of each block of `request` (see the header comment) into `tokens`.
void BlockTokens(const Request& request, std::vector<int32_t>* tokens);

// One policy on one cache of `capacity_blocks` blocks.
class CacheSimulator {
 public:
  // REQUIRES: capacity_blocks > 0; the policy fresh (SetCapacity is called here). Residency comes from
  // the policy's index when it has one (EvictionPolicy::residency()) and `own_index` is false; otherwise
  // the simulator keeps its own index (tests compare the two).
  CacheSimulator(std::unique_ptr<EvictionPolicy> policy, int64_t capacity_blocks,
                 RestoreCost restore_cost = RestoreCost::kUniform, bool own_index = false);

  // Dense ids: from now on every request carries dense_blocks, ids below distinct_blocks->size(), which
  // the policy and the simulator's own index then address as arrays. REQUIRES: before the first request;
  // `distinct_blocks` (id -> hash, for RecordVictims) outlives the simulator.
  void UseDenseIds(const std::vector<BlockId>* distinct_blocks);

  void ProcessRequest(const RequestView& request);

  // If set, every victim is appended to it, in order, as its hash (tests).
  void RecordVictims(std::vector<BlockId>* victims) { victims_ = victims; }

  const CacheStats& stats() const { return stats_; }
  int64_t resident_blocks() const { return num_resident_; }
  // `block` as the policy sees it: the dense id after UseDenseIds, else the hash.
  bool IsResident(BlockId block) const {
    if (residency_ != nullptr) return residency_->IsResident(block);
    return distinct_ != nullptr ? resident_dense_[block] != 0 : resident_.contains(block);
  }

 private:
  // ProcessRequest's loop, the policy seen as `Policy`: EvictionPolicy (virtual calls) or its final class.
  template <typename Policy>
  void ReplayAs(const RequestView& request);
  using ReplayFn = void (CacheSimulator::*)(const RequestView&);
  // ReplayAs<P> for the first of `Policies` that `policy` is, else ReplayAs<EvictionPolicy>.
  template <typename... Policies>
  static ReplayFn ReplayFor(EvictionPolicy* policy);

  std::unique_ptr<EvictionPolicy> policy_;
  ReplayFn replay_ = nullptr;  // the loop ProcessRequest runs
  int64_t capacity_blocks_;
  RestoreCost restore_cost_;
  const ResidencyIndex* residency_;                 // the policy's index, or null: resident_ is used
  absl::flat_hash_set<BlockId> resident_;           // unused when residency_ is set or ids are dense
  std::vector<uint8_t> resident_dense_;             // by dense id, when ids are dense and residency_ is null
  const std::vector<BlockId>* distinct_ = nullptr;  // dense id -> hash; null: ids are hashes
  int64_t num_resident_ = 0;
  int64_t clock_ = 0;
  CacheStats stats_;
  std::vector<BlockId>* victims_ = nullptr;
};

// One run of RunCacheReplays: a policy configuration and a capacity.
struct CacheRunSpec {
  proto::EvictionPolicyConfig policy;  // name + parameters + wrappers (see policies/policy_factory.h)
  int64_t capacity_blocks = 0;
};

struct CacheRunResult {
  CacheRunSpec spec;
  std::string policy_label;  // PolicyLabel(spec.policy)
  CacheStats stats;
};

// Runs every spec over the trace (see the header comment for when the trace is held in memory).
// InvalidArgument for a capacity <= 0, an unknown policy or bad parameters (naming the run).
absl::StatusOr<std::vector<CacheRunResult>> RunCacheReplays(TraceReader* reader, const std::vector<CacheRunSpec>& specs,
                                                            const CacheReplayOptions& options);

// The same over a compiled trace (next uses computed here if a run needs them and they are missing),
// runs spread over options.num_threads threads; results in spec order, independent of the thread count.
absl::StatusOr<std::vector<CacheRunResult>> RunCacheReplaysOnTrace(CompiledTrace* trace,
                                                                   const std::vector<CacheRunSpec>& specs,
                                                                   const CacheReplayOptions& options);

}  // namespace kvsim

#endif  // KVSIM_SIM_CACHE_CACHE_SIMULATOR_H_
