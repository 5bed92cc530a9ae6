// File: sim/serving/block_manager.h
//
// BlockManager: one replica's KV blocks, on the GPU and in the optional lower tiers (host DRAM, remote or
// disk). It owns the shared block cache (block hash -> entry), reference counts and pins, and each
// request's private blocks; it asks an EvictionPolicy (one instance per tier) for victims and performs the
// evictions itself (demote to the next tier or drop, per config).
//
// Semantics (docs/ARCHITECTURE.md):
// - Variable blocks (Request::block_token_counts, hash-per-chunk traces): each block holds its own tokens;
//   every token count (reused, recomputed, reloaded, potentials) and compute run uses them; capacity and
//   generated-token blocks use block_tokens (the trace's nominal size) as the slot size.
// - A block is identified by its prefix-chained hash. A block computed by a request enters the shared
//   cache when the prefill has computed all its tokens (vLLM v1: only computed blocks are reusable); if
//   the hash is already cached (computed concurrently by another request) the copy stays private to the
//   request and is freed when it finishes. Blocks of generated tokens are private: they are not offered
//   to later requests (a later turn's prompt carries its own hashes for that text). Blocks of requests
//   whose trace has no hashes (RequestState::unique_blocks) are private too: nothing could reuse them.
// - At admission every prompt block is classified: reused from the GPU (pinned), reloaded from a lower
//   tier, restored from swap, or computed. Which cached blocks may be reused depends on the reuse mode:
//   none; prefix (the leading run of cached blocks); segment (every cached block). A block cached only in
//   a lower tier is reloaded or recomputed per the RestoreRule (CHEAPER compares the tier transfer time
//   with the cost model's RecomputeTimeNs of the block at its position).
// - All of a request's prompt blocks (and the blocks its generated tokens need) are allocated at
//   admission, so a running request never waits for prompt blocks; decode growth allocates one block at
//   a time (Grow) and may fail, in which case the scheduler preempts.
// - Whatever the mode, the first admission records what prefix and segment reuse could have reused
//   (blocks cached in any tier), so results report all three figures.
// - Pinned blocks (reference count > 0) are never evicted. As in vLLM's free-block queue, a GPU block
//   is in the GPU tier's policy only while it is evictable: pinning removes it (OnRemove), the release
//   of its last reference inserts it again (OnInsert, with the release time), so the policy's victim is
//   always evictable and found without skipping pinned blocks. (A running request reads all its KV every
//   iteration, so its blocks' last use is their release.) Lower-tier blocks are never pinned; their
//   policies see every insert and removal. CheckIdle() verifies, once no request holds blocks, that every
//   count adds up: nothing leaked.
//
// Slot ids: when the policy AcceptsSlotIds() (LRU, FIFO, CLOCK, SIEVE) and every tier's blocks together
// number at most kMaxSlotIds, the GPU tier's policy sees each block as its entry's slot (dense ids: its
// index is an array, and the victim's entry needs no lookup) with a default AccessInfo, instead of the
// block's hash with the access details; the victims are the same. The policy keeps its state for a block in
// the block's entry (EvictionPolicy::SetDenseIdStorage): one cache line for both.
//
// Transfers (reloads, demotions from the GPU, swaps) accumulate bytes per tier; TakeTransferNs() turns
// them into time with the cost model (one transfer per tier per iteration: latency + bytes / bandwidth).
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(auto blocks, BlockManager::Create(options, cost_model));
//   if (blocks->Admit(&state, now_ns)) { ... } // later: blocks->Publish(&state); blocks->Release(&state);
//
// Thread-safety: none; one replica's scheduler owns it.
#ifndef KVSIM_SIM_SERVING_BLOCK_MANAGER_H_
#define KVSIM_SIM_SERVING_BLOCK_MANAGER_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cost_models/cost_model.h"
#include "policies/eviction_policy.h"
#include "proto/config.pb.h"
#include "util/block_hash_map.h"
#include "sim/serving/clock.h"
#include "sim/serving/gpu_block_directory.h"
#include "sim/serving/request_state.h"

namespace kvsim {

struct BlockManagerOptions {
  int64_t gpu_capacity_blocks = 0;  // > 0
  int32_t block_tokens = 16;        // > 0
  int64_t block_bytes = 0;          // KV bytes of one block per GPU; > 0
  proto::ReuseMode reuse_mode = proto::REUSE_MODE_PREFIX;
  proto::RestoreRule restore_rule = proto::RESTORE_RULE_CHEAPER;
  proto::EvictAction gpu_evict_action = proto::EVICT_ACTION_DROP;
  std::vector<proto::TierConfig> lower_tiers;  // host first, then remote
  proto::EvictionPolicyConfig policy;          // one instance per tier; name "" = "lru"
  // Number the GPU policy's blocks by slot when it accepts that (see "Slot ids" below); false keeps the
  // hashes (the same victims, slower: tests compare the two).
  bool allow_slot_ids = true;
};

// Options from a resolved config; capacities from GpuCapacityBlocks and the tiers' bytes.
absl::StatusOr<BlockManagerOptions> BlockManagerOptionsFromConfig(const proto::ExperimentConfig& config,
                                                                  int32_t block_tokens);

struct TierStats {
  std::string name;  // "gpu", "host", "remote"
  int64_t capacity_blocks = 0;
  int64_t used_blocks = 0;  // now: cached + private (GPU) or cached + swapped (lower tiers)
  int64_t max_used_blocks = 0;
  int64_t cached_blocks = 0;       // now: entries of the shared cache in this tier
  int64_t evicted_blocks = 0;      // left this tier to make room (then demoted or dropped)
  int64_t dropped_blocks = 0;      // forgotten on eviction from this tier
  int64_t demoted_in_blocks = 0;   // arrived from the tier above
  int64_t reloaded_blocks = 0;     // moved from this tier back to the GPU
  int64_t swapped_out_blocks = 0;  // swap preemption: into this tier
  int64_t swapped_in_blocks = 0;   // swap preemption: back to the GPU
  int64_t transfer_bytes = 0;      // bytes moved between the GPU and this tier (0 for the GPU itself)
};

// The bytes one lower tier moved to and from the GPU over one TakeTransferNs period, and the time they
// were priced at (one transfer: latency + (load + offload bytes) / bandwidth).
struct TierTransfer {
  int32_t tier = 0;             // index in tier_stats() (>= 1)
  absl::string_view tier_name;  // tier_stats()[tier].name; valid while the BlockManager lives
  int64_t load_bytes = 0;       // to the GPU (reloads, swap-ins)
  int64_t offload_bytes = 0;    // from the GPU (demotions, swap-outs)
  int64_t duration_ns = 0;
};

class BlockManager {
 public:
  // InvalidArgument for bad options or an unknown policy name (listing the known ones).
  static absl::StatusOr<std::unique_ptr<BlockManager>> Create(const BlockManagerOptions& options,
                                                              const CostModel* cost_model);

  // Admits `state` (its prefill_target_tokens set by the caller): classifies its prompt blocks, pins the
  // reused ones, makes room, allocates the rest and builds the compute runs. Returns false, changing
  // nothing, if the GPU cannot hold the blocks even after evicting every unpinned one.
  // A request without block hashes (a trace without them) has PromptBlocks(request, block_tokens) blocks,
  // all private (unique_blocks): their ids are never made, as nothing looks them up.
  // REQUIRES: state holds no blocks; block_hashes is empty or has NumBlocks(input_tokens, block_tokens)
  // entries, or (variable blocks) block_token_counts has one count per hash, summing to input_tokens.
  bool Admit(RequestState* state, SimTime now_ns);

  // Blocks needed on an empty GPU to run `request` to completion (prompt + generated tokens).
  int64_t BlocksToComplete(const Request& request) const;
  // The same for a request with its own KV configuration (state.kv; sim/serving/request_kv.h): its
  // regrouped prompt blocks plus its generated tokens in blocks of kv.block_factor x block_tokens (a
  // budget is not counted: an upper bound).
  int64_t BlocksToComplete(const RequestState& state) const;

  // Allocates the generated-token blocks for `kv_tokens` tokens of KV. False (nothing changed) if they
  // cannot be freed. REQUIRES: state is admitted.
  // Inline: most calls (a decode's next token in a block it holds) need no new block.
  bool Grow(RequestState* state, int64_t kv_tokens, SimTime now_ns) {
    const int64_t want = NumBlocks(std::max<int64_t>(0, kv_tokens - state->request.input_tokens), TailTokens(*state));
    const int64_t extra = want - state->tail_blocks;
    return extra <= 0 || GrowBy(state, extra, now_ns);
  }

  // Eviction budget (state->kv.prompt_keep_tokens >= 0, sim/serving/request_kv.h) when the prefill ends:
  // frees the request's blocks beyond NumBlocks(P) for the prompt and NumBlocks(GrowKvTokens(kv_tokens) -
  // input) for the generated tokens (at kv.block_factor x block_tokens tokens per block). REQUIRES:
  // state->unique_blocks (every prompt block private) and its prefill done.
  void CutToBudget(RequestState* state);

  // Offers to the shared cache the prompt blocks the prefill frontier has passed.
  void Publish(RequestState* state, SimTime now_ns);

  // Drops the request's hold on its blocks (finish, or recompute preemption): cached blocks stay resident
  // and become evictable when unpinned; private blocks are freed. A request with a session id leaves the
  // entries it held as its session's hint for the next Admit of that session (a speed-up only).
  void Release(RequestState* state, SimTime now_ns);

  // Tells the GPU policy the request is done (EvictionPolicy::OnRequestEnd; TTL pinning uses it).
  // Call after its final Release.
  void EndRequest(const RequestState& state, SimTime now_ns);

  // Swap preemption: copies the request's computed KV to the first lower tier and releases its GPU
  // blocks. False (nothing changed) if there is no lower tier, nothing computed, or no room there.
  bool SwapOut(RequestState* state, SimTime now_ns);

  // Leading prompt blocks of `request` cached on the GPU (cache-aware routing).
  int64_t GpuPrefixBlocks(const Request& request) const;

  // From now on, every block that enters or leaves this replica's GPU cache is added to or removed from
  // `directory` as `replica`'s (cache-aware routing over all replicas at once), and every cached block's
  // entry is registered there (the directory keeps the entries of the blocks this replica owns: one
  // table for both). Not owned; must outlive this. REQUIRES: before the first Admit; replica <
  // directory->num_replicas(); max_entries() <= GpuBlockDirectory::kMaxEntries.
  void ShareGpuDirectory(GpuBlockDirectory* directory, int32_t replica);

  // Transfer time of the bytes moved since the last call, summed over tiers; resets the counters. With
  // `transfers`, replaces its contents with one entry per tier that moved bytes, in tier order.
  int64_t TakeTransferNs(std::vector<TierTransfer>* transfers = nullptr);

  // OK if no request holds blocks and every count matches the entries; else Internal naming the count.
  absl::Status CheckIdle() const { return CheckAllIdle({this}); }
  // CheckIdle() of each of `managers`, the first failure in their order. A GpuBlockDirectory they share
  // is read once for all of them (CheckIdle alone reads all of it for one replica's blocks).
  static absl::Status CheckAllIdle(const std::vector<const BlockManager*>& managers);

  int64_t gpu_capacity_blocks() const { return tiers_[0].capacity_blocks; }
  // The most cached blocks that can exist at once, all tiers together: every entry is below it.
  int64_t max_entries() const { return max_entries_; }
  int64_t gpu_used_blocks() const { return tiers_[0].used_blocks; }
  int64_t gpu_pinned_blocks() const { return tiers_[0].used_blocks - gpu_evictable_; }
  int64_t host_used_blocks() const { return tiers_.size() > 1 ? tiers_[1].used_blocks : 0; }
  int32_t block_tokens() const { return block_tokens_; }
  int64_t block_bytes() const { return block_bytes_; }
  // GPU first, then the lower tiers in order.
  const std::vector<TierStats>& tier_stats() const { return stats_; }

 private:
  // 32 bytes, two to a cache line: with slot ids the GPU policy keeps its state for the block in it
  // (EvictionPolicy::SetDenseIdStorage), so a pin or an unpin, which reads the entry, finds the policy's
  // slot in the same line (they were two lines, each a cache miss, in two arrays).
  struct alignas(32) Entry {
    uint64_t hash = 0;
    int32_t refcount = 0;
    int32_t tier = 0;  // 0 = GPU; kTransit while moving to the GPU
    PolicySlot gpu_policy_slot{};  // the GPU policy's, while the block is in it; else zero
  };
  struct Tier {
    int64_t capacity_blocks = 0;
    int64_t used_blocks = 0;
    int64_t cached_blocks = 0;
    int64_t pending_load_bytes = 0;     // to the GPU since the last TakeTransferNs
    int64_t pending_offload_bytes = 0;  // from the GPU
    proto::TierConfig config;
    proto::EvictAction evict_action = proto::EVICT_ACTION_DROP;
    std::unique_ptr<EvictionPolicy> policy;
  };
  enum BlockKind : uint8_t { kCompute, kGpuHit, kReload, kRecomputeLower, kRestore };

  // Most blocks (all tiers' capacities) for slot ids: the GPU policy's index array, 4 bytes each.
  static constexpr int64_t kMaxSlotIds = int64_t{1} << 22;

  BlockManager(const BlockManagerOptions& options, const CostModel* cost_model);
  // The id the GPU tier's policy knows `entry` by: its slot with slot ids, else its hash.
  BlockId GpuPolicyId(int32_t entry) const { return gpu_slot_ids_ ? static_cast<BlockId>(entry) : entries_[entry].hash; }

  // Tokens per generated-token block of `state`: block_tokens, times its KV configuration's block factor.
  int64_t TailTokens(const RequestState& state) const {
    return static_cast<int64_t>(block_tokens_) * state.kv.block_factor;
  }
  // Grow's slow path: allocates `extra` > 0 generated-token blocks, or returns false.
  bool GrowBy(RequestState* state, int64_t extra, SimTime now_ns);
  int64_t BlockTokensAt(const Request& request, int64_t k) const;
  // Prompt tokens before block k (k <= n) and the number of blocks that start before `tokens` (<= input):
  // arithmetic on block_tokens_ for uniform blocks, state->block_start_tokens for variable ones.
  int64_t StartTokens(const RequestState& state, int64_t k) const;
  int64_t BlocksBefore(const RequestState& state, int64_t tokens) const;
  // Tokens a recompute of block k is priced at: block_tokens_ for uniform blocks, the block's own.
  int64_t RecomputeTokensAt(const Request& request, int64_t k) const {
    return request.block_token_counts.empty() ? block_tokens_ : request.block_token_counts[k];
  }
  bool ShouldReload(int32_t tier, int64_t position_tokens, int64_t tokens);
  AccessInfo Info(const RequestState* state, int64_t k, SimTime now_ns);
  void AddUsed(int32_t tier, int64_t blocks);
  void Pin(int32_t entry);
  void Unpin(int32_t entry, const RequestState* state, int64_t k, SimTime now_ns);
  // Estimated time to restore prompt block k if evicted (AccessInfo.restore_ns): recompute at its
  // position, or reload from the host tier when blocks are demoted there, whichever is cheaper. Memoised
  // for uniform blocks (by index); computed for variable ones.
  int64_t RestoreNs(const RequestState* state, int64_t k);
  void MakeGpuRoom(int64_t blocks, SimTime now_ns);
  // MakeGpuRoom when GPU victims are dropped: evicts `count` blocks (none if <= 0), the policy's victims
  // taken first, then removed from the directory and the index with their lookups prefetched.
  void DropGpuVictims(int64_t count);
  // The entry of the GPU policy's victim `victim` (its slot id, or through the index); -1 if absent.
  int32_t VictimEntry(BlockId victim) const;
  bool MakeLowerRoom(int32_t tier, int64_t blocks, SimTime now_ns);
  void PlaceIn(int32_t entry, int32_t tier, SimTime now_ns);
  // Forgets `entry` (its block leaves the shared cache) and frees it. `on_gpu`: the block is still in
  // the directory's GPU set (dropped from the GPU), removed there in the same lookup.
  void Drop(int32_t entry, bool on_gpu = false);
  int32_t NewEntry(uint64_t hash);
  // The entry the next NewEntry returns.
  int32_t NextEntry() const {
    return free_entries_.empty() ? static_cast<int32_t>(entries_.size()) : free_entries_.back();
  }
  // The entry of cached block `hash` (any tier), or -1: from the directory if this replica owns the
  // block there, else from index_.
  int32_t FindEntry(uint64_t hash) const;
  // Starts loading what FindEntry(hash) reads first (a hint).
  void PrefetchEntry(uint64_t hash) const;
  // Keeps the entries `state` holds (Release, before they are cleared) as its session's hint.
  void RememberHint(const RequestState& state);
  // CheckIdle's tally of the entries its maps name.
  struct IdleCounts {
    std::vector<int64_t> cached;  // by tier
    int64_t unpinned_gpu = 0;
    int64_t indexed = 0;  // entries in index_ and, with a directory, those it keeps
    absl::Status status;  // the first bad entry's
  };
  // Counts entry `entry`, which a map names for block `hash`, into `counts`.
  void CountIdle(uint64_t hash, int32_t entry, IdleCounts* counts) const;
  // The verdict of CheckIdle from the tally of every map's entries.
  absl::Status CheckCounts(const IdleCounts& counts) const;
  struct BlockCounts {
    int64_t gpu_hits = 0;       // kGpuHit blocks
    int64_t unpinned_hits = 0;  // of them, with refcount 0 before the admission
    int64_t lower = 0;          // kReload and kRecomputeLower blocks
    int64_t reloads = 0;        // kReload blocks
  };
  // Fills kinds_ and found_entries_ for the prompt's blocks; returns the counts by kind.
  BlockCounts ClassifyBlocks(RequestState* state, int64_t restored_blocks);
  // `all_computed`: no prompt block from `restored_blocks` on is a GPU hit or in a lower tier.
  void BuildComputeRuns(RequestState* state, int64_t frontier_tokens, int64_t restored_blocks, bool all_computed);

  const int32_t block_tokens_;
  const int64_t block_bytes_;
  const proto::ReuseMode reuse_mode_;
  const proto::RestoreRule restore_rule_;
  const CostModel* const cost_model_;
  std::vector<Tier> tiers_;
  std::vector<TierStats> stats_;
  // hash -> entry, for cached blocks in any tier (with a directory: those another replica owns there).
  BlockHashMap<int32_t, -1> index_;
  std::vector<Entry> entries_;
  std::vector<int32_t> free_entries_;
  int64_t gpu_evictable_ = 0;   // GPU entries with refcount 0
  int64_t private_blocks_ = 0;  // GPU blocks held privately by requests (prompt and generated)
  int64_t swap_blocks_ = 0;     // first lower tier blocks held by swapped-out requests
  int64_t access_clock_ = 0;
  int64_t max_entries_ = 0;  // all tiers' capacities
  bool gpu_slot_ids_ = false;                // see "Slot ids" above
  // The GPU policy's, to prefetch its slots (slot ids, when it keeps them apart from the entries; else null).
  const ResidencyIndex* gpu_residency_ = nullptr;
  GpuBlockDirectory* directory_ = nullptr;  // ShareGpuDirectory
  int32_t directory_replica_ = 0;
  std::vector<uint8_t> kinds_;          // scratch: BlockKind per prompt block during Admit
  std::vector<int32_t> found_entries_;  // scratch: entry of each cached prompt block (Admit; else unset)
  std::vector<int64_t> restore_ns_;     // memo of RestoreNs by block index (-1 = not computed)
  std::vector<int32_t> victims_;        // scratch: DropGpuVictims's entries
  // Session hints: per session id, the entries its last request held here when released, by block index
  // (kPrivateBlock for a block it held privately). A hint only saves a lookup: ClassifyBlocks uses it
  // for a block only if that entry still holds that block. Bounded: all are forgotten when their total
  // length would pass max_hint_blocks_.
  absl::flat_hash_map<int64_t, std::vector<int32_t>> session_hints_;
  int64_t hint_blocks_ = 0;      // total length of session_hints_'s vectors
  int64_t max_hint_blocks_ = 0;  // set from the GPU capacity
};

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_BLOCK_MANAGER_H_
