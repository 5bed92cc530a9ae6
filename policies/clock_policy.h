// File: policies/clock_policy.h
//
// ClockPolicy ("clock"): CLOCK / second chance (Corbató, "A paging experiment with the Multics system",
// MIT Project MAC 1968). Blocks sit in insertion order with a reference bit, set by a hit. The hand looks
// at the oldest block: bit set -> clear it and give the block a second chance at the newest end; bit
// clear and evictable -> the victim. Blocks the cache marks not evictable are passed over without
// changing their bit. O(1) amortised per operation (each search clears at most the bits it passes).
//
// Example:
//   clock.OnInsert(1, info); clock.OnInsert(2, info); clock.OnAccess(1, info);
//   clock.SelectVictim(all);  // 2: 1's bit gives it a second chance
//
// Thread-safety: one cache on one thread.
#ifndef KVSIM_POLICIES_CLOCK_POLICY_H_
#define KVSIM_POLICIES_CLOCK_POLICY_H_

#include "policies/block_lists.h"
#include "policies/eviction_policy.h"

namespace kvsim {

class ClockPolicy final : public EvictionPolicy, public ResidencyIndex {
 public:
  absl::string_view Name() const override { return "clock"; }
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
  BlockLists lists_{1};  // front = newest; mark = reference bit
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_CLOCK_POLICY_H_
