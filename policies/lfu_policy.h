// File: policies/lfu_policy.h
//
// LfuPolicy ("lfu"): evicts the evictable block with the fewest accesses since it became resident
// (in-cache LFU: the count starts at 1 on insert and is forgotten on removal); ties go to the least
// recently used block (the one whose latest insert or hit is oldest). O(log n) per operation: a B-tree
// ordered by (count, last use). Reference: LFU as defined in Aho, Denning and Ullman, "Principles of
// optimal page replacement", JACM 1971.
//
// Example:
//   lfu.OnInsert(1, info); lfu.OnInsert(2, info); lfu.OnAccess(1, info);
//   lfu.SelectVictim(all);  // 2: one access against two
//
// Thread-safety: one cache on one thread.
#ifndef KVSIM_POLICIES_LFU_POLICY_H_
#define KVSIM_POLICIES_LFU_POLICY_H_

#include <tuple>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "policies/eviction_policy.h"

namespace kvsim {

class LfuPolicy final : public EvictionPolicy, public ResidencyIndex {
 public:
  absl::string_view Name() const override { return "lfu"; }
  void OnInsert(BlockId block, const AccessInfo& info) override;
  void OnAccess(BlockId block, const AccessInfo& info) override;
  void OnRemove(BlockId block) override;
  const ResidencyIndex* residency() const override { return this; }
  bool IsResident(BlockId block) const override { return entries_.contains(block); }

 private:
  absl::optional<BlockId> ChooseVictim(VictimFilter evictable) override;
  struct Entry {
    int64_t count;
    int64_t last_use;
  };
  absl::btree_set<std::tuple<int64_t, int64_t, BlockId>> order_;
  absl::flat_hash_map<BlockId, Entry> entries_;
  int64_t uses_ = 0;
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_LFU_POLICY_H_
