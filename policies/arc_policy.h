// File: policies/arc_policy.h
//
// ArcPolicy ("arc"): Adaptive Replacement Cache (Megiddo and Modha, "ARC: A Self-Tuning, Low Overhead
// Replacement Cache", FAST 2003, Fig. 4), canonical. Resident blocks are in T1 (seen once recently) or T2
// (seen at least twice); ghost lists B1 and B2 remember the ids recently evicted from T1 and T2; c is the
// capacity and p (a real number, 0 <= p <= c) the adaptive target size of T1.
//   Case I   hit in T1 or T2: move to T2's MRU end.
//   Case II  miss found in B1: p = min(p + max(1, |B2|/|B1|), c); REPLACE; the block enters T2's MRU end.
//   Case III miss found in B2: p = max(p - max(1, |B1|/|B2|), 0); REPLACE; the block enters T2.
//   Case IV  other miss (with a full cache): if |T1| + |B1| = c: if |T1| < c delete B1's LRU id and
//            REPLACE, else evict T1's LRU block leaving no ghost; otherwise, if |T1|+|T2|+|B1|+|B2| = 2c
//            delete B2's LRU id, then REPLACE. The block enters T1's MRU end.
//   REPLACE: evict T1's LRU block into B1's MRU end if |T1| >= 1 and (|T1| > p or (the incoming block
//            was in B2 and |T1| = p)), else T2's LRU block into B2.
// The ratios |B2|/|B1| are real divisions and p is a double, as in the reference implementations that
// other simulators cross-check against. The incoming block and its case come from OnMiss, before the
// eviction (cache replay calls it). A cache that does not call OnMiss (the serving simulator, which
// makes room for a batch of blocks before inserting them) gets case IV's rule at every eviction, and a
// ghost hit adapts p and enters T2 at OnInsert, after its eviction.
// Victims pass the cache's filter: REPLACE takes the LRU-most evictable block of its list, or of the
// other list when its list has none. Removals the cache makes on its own (not the chosen victim) leave
// no ghost. c = SetCapacity(); without it, the number of resident blocks at the first SelectVictim.
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

class ArcPolicy final : public EvictionPolicy, public ResidencyIndex, public EligibleSubset {
 public:
  absl::string_view Name() const override { return "arc"; }
  void SetDenseIds(int64_t num_ids) override { lists_.UseDenseIds(num_ids); }
  void SetCapacity(int64_t num_blocks) override { capacity_ = num_blocks; }
  void OnMiss(BlockId block, const AccessInfo& info) override;
  void OnInsert(BlockId block, const AccessInfo& info) override;
  void OnAccess(BlockId block, const AccessInfo& info) override;
  void OnRemove(BlockId block) override;
  const ResidencyIndex* residency() const override { return this; }
  bool IsResident(BlockId block) const override;
  void Prefetch(BlockId block) const override { lists_.Prefetch(block); }

  double target_t1() const { return p_; }  // tests

  // Leaf-first's restricted search (eviction_policy.h), through the lists' eligible view.
  EligibleSubset* eligible_subset() override { return this; }
  void EnableEligibility() override { lists_.EnableEligibility({kT1, kT2}); }
  void SetEligible(BlockId block, bool eligible) override { lists_.SetEligible(block, eligible); }
  absl::optional<BlockId> ChooseEligibleVictim(VictimFilter evictable) override {
    EligibleViewScope view(&lists_);
    return TrySelectVictim(evictable);
  }

 private:
  absl::optional<BlockId> ChooseVictim(VictimFilter evictable) override;
  enum List { kT1 = 0, kT2 = 1, kB1 = 2, kB2 = 3 };
  // Where the block announced by OnMiss was found.
  enum class Incoming { kNone, kNew, kFromB1, kFromB2 };
  void AdaptTowardsT1();  // case II's change of p
  void AdaptTowardsT2();  // case III's
  void TrimGhosts();
  int64_t Resident() const { return lists_.Size(kT1) + lists_.Size(kT2); }

  BlockLists lists_{4};  // front = MRU
  int64_t capacity_ = 0;
  double p_ = 0;
  Incoming incoming_ = Incoming::kNone;
  BlockId incoming_block_ = 0;
  BlockId victim_ = 0;
  bool has_victim_ = false;
  bool victim_leaves_ghost_ = true;
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_ARC_POLICY_H_
