// File: policies/lru_policy.h
//
// LruPolicy ("lru"): evicts the least recently used evictable block. Insert and hit move the block to
// the front of one list; the victim search walks from the back, skipping blocks the cache marks not
// evictable. O(1) per insert, hit and removal; the victim search is O(1 + skipped blocks).
// Reference: the classic stack algorithm (Mattson et al., "Evaluation techniques for storage
// hierarchies", IBM Systems Journal 1970).
//
// Example:
//   LruPolicy lru;
//   lru.OnInsert(7, info); lru.OnInsert(8, info); lru.OnAccess(7, info);
//   lru.SelectVictim([](BlockId) { return true; });  // 8
//
// Thread-safety: one cache on one thread.
#ifndef KVSIM_POLICIES_LRU_POLICY_H_
#define KVSIM_POLICIES_LRU_POLICY_H_

#include "policies/block_lists.h"
#include "policies/eviction_policy.h"

namespace kvsim {

class LruPolicy final : public EvictionPolicy, public ResidencyIndex, public EligibleSubset {
 public:
  absl::string_view Name() const override { return "lru"; }
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
  // Remembers the slot it finds: the cache's next call is OnAccess (a hit) or OnRemove (a victim) of
  // the same block, which then skip their own index lookup.
  const ResidencyIndex* residency() const override { return this; }
  bool IsResident(BlockId block) const override {
    looked_up_block_ = block;
    looked_up_slot_ = lists_.Find(block);
    return looked_up_slot_ != kNoSlot;
  }
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
  // The slot of resident `block` (REQUIRES: resident), reusing IsResident()'s lookup when it was for
  // the same block.
  int32_t SlotOf(BlockId block) const {
    const int32_t s = looked_up_slot_ != kNoSlot && looked_up_block_ == block ? looked_up_slot_ : lists_.Find(block);
    KVSIM_CHECK(s != kNoSlot) << "lru: non-resident block " << block;
    return s;
  }

  BlockLists lists_{1};
  // The last IsResident() lookup; valid while looked_up_slot_ != kNoSlot (reset when a slot is freed).
  mutable BlockId looked_up_block_ = 0;
  mutable int32_t looked_up_slot_ = kNoSlot;
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_LRU_POLICY_H_
