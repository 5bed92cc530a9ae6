// File: policies/fifo_policy.h
//
// FifoPolicy ("fifo"): evicts the evictable block inserted longest ago; hits change nothing. One
// index-linked list: insert at the front, victim search from the back skipping blocks the cache marks not
// evictable. O(1) per operation (plus skipped blocks in the search).
// Reference: Belady, "A study of replacement algorithms for a virtual-storage computer", IBM Systems
// Journal 1966 (FIFO among the algorithms studied).
//
// Example:
//   FifoPolicy fifo;
//   fifo.OnInsert(7, info); fifo.OnInsert(8, info); fifo.OnAccess(7, info);
//   fifo.SelectVictim([](BlockId) { return true; });  // 7: inserted first; the hit does not count
//
// Thread-safety: one cache on one thread.
#ifndef KVSIM_POLICIES_FIFO_POLICY_H_
#define KVSIM_POLICIES_FIFO_POLICY_H_

#include "policies/block_lists.h"
#include "policies/eviction_policy.h"

namespace kvsim {

class FifoPolicy final : public EvictionPolicy, public ResidencyIndex, public EligibleSubset {
 public:
  absl::string_view Name() const override { return "fifo"; }
  void SetDenseIds(int64_t num_ids) override { lists_.UseDenseIds(num_ids); }
  bool SetDenseIdStorage(int64_t num_ids, PolicySlot* slots, size_t stride_bytes) override {
    lists_.UseDenseIds(num_ids, slots, stride_bytes);
    return num_ids > 0;
  }
  bool AcceptsSlotIds() const override { return true; }
  void SetCapacity(int64_t num_blocks) override { lists_.Reserve(num_blocks + 1); }
  void OnInsert(BlockId block, const AccessInfo& info) override;
  void OnAccess(BlockId block, const AccessInfo& info) override;
  void OnRemove(BlockId block) override;
  const ResidencyIndex* residency() const override { return this; }
  bool IsResident(BlockId block) const override { return lists_.Contains(block); }
  void Prefetch(BlockId block) const override { lists_.Prefetch(block); }
  // The back of the list (the victim when it is evictable).
  absl::optional<BlockId> LikelyVictim() const override { return lists_.BackBlock(0); }

  // Leaf-first's restricted search (eviction_policy.h), through the lists' eligible view.
  EligibleSubset* eligible_subset() override { return this; }
  void EnableEligibility() override { lists_.EnableEligibility({0}); }
  void SetEligible(BlockId block, bool eligible) override { lists_.SetEligible(block, eligible); }
  absl::optional<BlockId> ChooseEligibleVictim(VictimFilter evictable) override {
    EligibleViewScope view(&lists_);
    return TrySelectVictim(evictable);
  }

 private:
  absl::optional<BlockId> ChooseVictim(VictimFilter evictable) override;
  BlockLists lists_{1};
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_FIFO_POLICY_H_
