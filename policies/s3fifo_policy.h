// File: policies/s3fifo_policy.h
//
// S3FifoPolicy ("s3fifo"): S3-FIFO as published (Yang et al., "FIFO queues are all you need for cache
// eviction", SOSP 2023, Algorithm 1). Three FIFO queues: a small queue S, a main queue M and a ghost
// queue G of ids only. With capacity c: S's share is s = max(1, round(small_queue_ratio x c)) blocks
// (default ratio 0.1), M's is m = c - s, and G holds m ids (or round(ghost_ratio x c) when ghost_ratio
// is set). Each resident block has a frequency, 0 at insertion, + 1 per hit, capped at 3.
//   Insert: an id found in G enters M's head (and leaves G); any other block enters S's head.
//   Hit: freq = min(freq + 1, 3). Nothing moves.
//   evict(): if |S| >= s, evictS, else evictM.
//   evictS: repeat on S's tail t: if freq > 1 (freq >= move_to_main_threshold, default 2), t moves to
//     M's head keeping its freq, and if M then holds more than m blocks, evictM; else t is evicted, its
//     id enters G's head (the oldest ids leave G beyond its size), and evictS ends. If S empties without
//     an eviction, evict() runs again (now evictM).
//   evictM: repeat on M's tail t: if freq > 0, freq - 1 and t moves to M's head; else t is evicted.
// One evict() can evict two blocks (evictS's move into a full M evicts from M first); the policy then
// reports EvictionPending() and the next SelectVictim returns the second victim. Cache replay asks for
// it before inserting, as the paper's INSERT does; a cache that does not ask gets it at its next eviction.
// Blocks the cache marks not evictable are passed over where they stand (neither moved nor counted).
// The capacity comes from SetCapacity(); without it, the resident count at the first SelectVictim.
// O(1) amortised per operation.
//
// Example:
//   S3FifoPolicy s3fifo; s3fifo.SetCapacity(1000);  // S 100 blocks, M 900, G 900 ids
//
// Thread-safety: one cache on one thread.
#ifndef KVSIM_POLICIES_S3FIFO_POLICY_H_
#define KVSIM_POLICIES_S3FIFO_POLICY_H_

#include <deque>

#include "policies/block_lists.h"
#include "policies/eviction_policy.h"

namespace kvsim {

class S3FifoPolicy final : public EvictionPolicy, public ResidencyIndex, public EligibleSubset {
 public:
  absl::string_view Name() const override { return "s3fifo"; }
  void SetDenseIds(int64_t num_ids) override { lists_.UseDenseIds(num_ids); }
  absl::Status Configure(const proto::EvictionPolicyConfig& config) override;
  void SetCapacity(int64_t num_blocks) override { capacity_ = num_blocks; }
  void OnInsert(BlockId block, const AccessInfo& info) override;
  void OnAccess(BlockId block, const AccessInfo& info) override;
  void OnRemove(BlockId block) override;
  bool EvictionPending() const override { return !pending_.empty(); }
  const ResidencyIndex* residency() const override { return this; }
  bool IsResident(BlockId block) const override;
  void Prefetch(BlockId block) const override { lists_.Prefetch(block); }

  // Leaf-first's restricted search (eviction_policy.h), through the lists' eligible view.
  EligibleSubset* eligible_subset() override { return this; }
  void EnableEligibility() override { lists_.EnableEligibility({kSmall, kMain}); }
  void SetEligible(BlockId block, bool eligible) override { lists_.SetEligible(block, eligible); }
  absl::optional<BlockId> ChooseEligibleVictim(VictimFilter evictable) override {
    EligibleViewScope view(&lists_);
    return TrySelectVictim(evictable);
  }

 private:
  absl::optional<BlockId> ChooseVictim(VictimFilter evictable) override;
  // kOutSmall / kOutMain: victims chosen by an evict() step and not yet removed by the cache (still
  // resident); a kOutSmall victim's id enters G when it is removed.
  enum List { kSmall = 0, kMain = 1, kGhost = 2, kOutSmall = 3, kOutMain = 4 };
  void Evict(VictimFilter evictable);
  void EvictSmall(VictimFilter evictable);
  bool EvictMain(VictimFilter evictable);
  void TakeVictim(int32_t s, List out);
  void CancelPending();  // puts unclaimed victims back at the tails of their queues
  int64_t SmallTarget() const;
  int64_t MainTarget() const { return capacity_ - SmallTarget(); }
  int64_t GhostSize() const;

  BlockLists lists_{5};  // front = head (newest); mark = frequency
  std::deque<BlockId> pending_;
  int64_t capacity_ = 0;
  double small_ratio_ = 0.1;
  double ghost_ratio_ = 0;  // 0 = as many ids as M's share
  int32_t move_threshold_ = 2;
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_S3FIFO_POLICY_H_
