// File: policies/arc_policy.h
//
// ArcPolicy ("arc"): Adaptive Replacement Cache (Megiddo and Modha, "ARC: A Self-Tuning, Low Overhead
// Replacement Cache", FAST 2003). Resident blocks are in T1 (seen once recently) or T2 (seen at least
// twice); ghost lists B1 and B2 remember the ids recently evicted from T1 and T2. A miss that finds the
// id in B1 grows the target size p of T1 by max(1, |B2|/|B1|) and enters T2; one in B2 shrinks p by
// max(1, |B1|/|B2|) and enters T2; otherwise the block enters T1 and the ghosts are trimmed so that
// |T1| + |B1| <= c and |T1| + |T2| + |B1| + |B2| <= 2c. A hit moves the block to T2's MRU end.
// REPLACE (SelectVictim): evict T1's LRU block if |T1| > p, else T2's (the other list if that one has
// no evictable block); the victim's id goes to B1 or B2.
// Interface simplification: the paper's REPLACE also evicts from T1 when |T1| = p and the incoming id is
// in B2; the incoming block is not known at SelectVictim, so that tie goes to T2. Removals the cache
// makes on its own (not the chosen victim) leave no ghost.
// c = SetCapacity(); without it, the number of resident blocks at the first SelectVictim.
// O(1) per operation (index-linked lists).
//
// Example:
//   ArcPolicy arc; arc.SetCapacity(1000);
//
// Thread-safety: one cache on one thread.
#ifndef KVSIM_POLICIES_ARC_POLICY_H_
#define KVSIM_POLICIES_ARC_POLICY_H_

#include "policies/block_lists.h"
#include "policies/eviction_policy.h"

namespace kvsim {

class ArcPolicy final : public EvictionPolicy, public ResidencyIndex {
 public:
  absl::string_view Name() const override { return "arc"; }
  void SetCapacity(int64_t num_blocks) override { capacity_ = num_blocks; }
  void OnInsert(BlockId block, const AccessInfo& info) override;
  void OnAccess(BlockId block, const AccessInfo& info) override;
  void OnRemove(BlockId block) override;
  const ResidencyIndex* residency() const override { return this; }
  bool IsResident(BlockId block) const override;

  int64_t target_t1() const { return p_; }  // tests

 private:
  absl::optional<BlockId> ChooseVictim(VictimFilter evictable) override;
  enum List { kT1 = 0, kT2 = 1, kB1 = 2, kB2 = 3 };
  void TrimGhosts();
  int64_t Resident() const { return lists_.Size(kT1) + lists_.Size(kT2); }

  BlockLists lists_{4};  // front = MRU
  int64_t capacity_ = 0;
  int64_t p_ = 0;
  BlockId victim_ = 0;
  bool has_victim_ = false;
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_ARC_POLICY_H_
