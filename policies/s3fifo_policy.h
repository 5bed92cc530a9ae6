// File: policies/s3fifo_policy.h
//
// S3FifoPolicy ("s3fifo"): S3-FIFO (Yang et al., "FIFO queues are all you need for cache eviction",
// SOSP 2023). Three FIFO queues: a small queue S (target small_queue_ratio x capacity, default 10%), a
// main queue M, and a ghost queue G of ids only (ghost_ratio x capacity entries, default 0.9). Each
// resident block has a 2-bit hit counter (saturating at 3).
//   Insert: an id found in G goes to M (and leaves G); any other block enters S. Counter 0.
//   Hit: counter + 1 (at most 3). Nothing moves.
//   Evict: if |S| >= its target, walk S from its oldest block: a block with counter >=
//     move_to_main_threshold (default 1: hit at least once while in S) moves to M's newest end with
//     counter 0; the first other block is the victim, and its id enters G (oldest ids leave G beyond its
//     size). Otherwise (or when S has no evictable block) walk M from its oldest: a block with counter
//     > 0 is decremented and reinserted at M's newest end; the first block with counter 0 is the victim
//     (no ghost). Blocks the cache marks not evictable are passed over.
// The capacity comes from SetCapacity(); without it, the resident count at the first SelectVictim.
// O(1) amortised per operation.
//
// Example:
//   S3FifoPolicy s3fifo; s3fifo.SetCapacity(1000);  // S target 100 blocks, G 900 ids
//
// Thread-safety: one cache on one thread.
#ifndef KVSIM_POLICIES_S3FIFO_POLICY_H_
#define KVSIM_POLICIES_S3FIFO_POLICY_H_

#include "policies/block_lists.h"
#include "policies/eviction_policy.h"

namespace kvsim {

class S3FifoPolicy final : public EvictionPolicy, public ResidencyIndex {
 public:
  absl::string_view Name() const override { return "s3fifo"; }
  absl::Status Configure(const proto::EvictionPolicyConfig& config) override;
  void SetCapacity(int64_t num_blocks) override { capacity_ = num_blocks; }
  void OnInsert(BlockId block, const AccessInfo& info) override;
  void OnAccess(BlockId block, const AccessInfo& info) override;
  void OnRemove(BlockId block) override;
  const ResidencyIndex* residency() const override { return this; }
  bool IsResident(BlockId block) const override;

 private:
  absl::optional<BlockId> ChooseVictim(VictimFilter evictable) override;
  enum List { kSmall = 0, kMain = 1, kGhost = 2 };
  absl::optional<BlockId> EvictFromSmall(const std::function<bool(BlockId)>& evictable);
  absl::optional<BlockId> EvictFromMain(const std::function<bool(BlockId)>& evictable);
  int64_t SmallTarget() const;
  int64_t GhostSize() const;

  BlockLists lists_{3};  // front = newest; mark = hit counter
  int64_t capacity_ = 0;
  double small_ratio_ = 0.1;
  double ghost_ratio_ = 0.9;
  int32_t move_threshold_ = 1;
  BlockId victim_ = 0;
  bool has_victim_ = false;
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_S3FIFO_POLICY_H_
