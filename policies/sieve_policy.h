// File: policies/sieve_policy.h
//
// SievePolicy ("sieve"): SIEVE (Zhang et al., "SIEVE is Simpler than LRU: an Efficient Turn-Key
// Eviction Algorithm for Web Caches", NSDI 2024). One FIFO queue with a visited bit per block, set by a
// hit, and a hand that persists between evictions. The hand moves from the oldest block towards the
// newest: a visited block has its bit cleared and stays in place; the first unvisited evictable block is
// the victim, and the hand then rests on the block newer than it. At the newest end the hand wraps to
// the oldest. New blocks enter at the newest end. Blocks the cache marks not evictable are passed over.
// O(1) amortised per operation.
//
// Example:
//   sieve.OnInsert(1, info); sieve.OnInsert(2, info); sieve.OnAccess(1, info);
//   sieve.SelectVictim(all);  // 2: 1 is visited (bit cleared, stays oldest)
//
// Thread-safety: one cache on one thread.
#ifndef KVSIM_POLICIES_SIEVE_POLICY_H_
#define KVSIM_POLICIES_SIEVE_POLICY_H_

#include "policies/block_lists.h"
#include "policies/eviction_policy.h"

namespace kvsim {

class SievePolicy final : public EvictionPolicy, public ResidencyIndex {
 public:
  absl::string_view Name() const override { return "sieve"; }
  void SetDenseIds(int64_t num_ids) override { lists_.UseDenseIds(num_ids); }
  bool SetDenseIdStorage(int64_t num_ids, PolicySlot* slots, size_t stride_bytes) override {
    lists_.UseDenseIds(num_ids, slots, stride_bytes);
    return num_ids > 0;
  }
  bool AcceptsSlotIds() const override { return true; }
  void OnInsert(BlockId block, const AccessInfo& info) override;
  void OnAccess(BlockId block, const AccessInfo& info) override;
  void OnRemove(BlockId block) override;
  const ResidencyIndex* residency() const override { return this; }
  bool IsResident(BlockId block) const override { return lists_.Contains(block); }
  void Prefetch(BlockId block) const override { lists_.Prefetch(block); }

 private:
  absl::optional<BlockId> ChooseVictim(VictimFilter evictable) override;
  BlockLists lists_{1};     // front = newest; mark = visited bit
  int32_t hand_ = kNoSlot;  // kNoSlot = start at the oldest
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_SIEVE_POLICY_H_
