// File: policies/two_q_policy.h
//
// TwoQPolicy ("2q"): the full 2Q algorithm (Johnson and Shasha, "2Q: A Low Overhead High Performance
// Buffer Management Replacement Algorithm", VLDB 1994). A1in is a FIFO of blocks seen once (target Kin
// = kin_ratio x capacity, default 25%), A1out a FIFO of ids evicted from A1in (Kout = kout_ratio x
// capacity ids, default 50%), Am an LRU of blocks seen again.
//   Miss: an id in A1out enters Am (MRU end); any other block enters A1in.
//   Hit: in Am, move to its MRU end; in A1in, nothing (correlated references).
//   Reclaim (SelectVictim): if |A1in| > Kin, evict A1in's oldest block and remember its id in A1out;
//   else evict Am's LRU block (forgotten). The other queue is used when the chosen one has no
//   evictable block.
// The capacity comes from SetCapacity(); without it, the resident count at the first SelectVictim.
// O(1) per operation.
//
// Example:
//   TwoQPolicy two_q; two_q.SetCapacity(1000);  // Kin 250, Kout 500
//
// Thread-safety: one cache on one thread.
#ifndef KVSIM_POLICIES_TWO_Q_POLICY_H_
#define KVSIM_POLICIES_TWO_Q_POLICY_H_

#include "policies/block_lists.h"
#include "policies/eviction_policy.h"

namespace kvsim {

class TwoQPolicy final : public EvictionPolicy, public ResidencyIndex, public EligibleSubset {
 public:
  absl::string_view Name() const override { return "2q"; }
  void SetDenseIds(int64_t num_ids) override { lists_.UseDenseIds(num_ids); }
  absl::Status Configure(const proto::EvictionPolicyConfig& config) override;
  void SetCapacity(int64_t num_blocks) override { capacity_ = num_blocks; }
  void OnInsert(BlockId block, const AccessInfo& info) override;
  void OnAccess(BlockId block, const AccessInfo& info) override;
  void OnRemove(BlockId block) override;
  const ResidencyIndex* residency() const override { return this; }
  bool IsResident(BlockId block) const override;

  // Leaf-first's restricted search (eviction_policy.h), through the lists' eligible view.
  EligibleSubset* eligible_subset() override { return this; }
  void EnableEligibility() override { lists_.EnableEligibility({kA1in, kAm}); }
  void SetEligible(BlockId block, bool eligible) override { lists_.SetEligible(block, eligible); }
  absl::optional<BlockId> ChooseEligibleVictim(VictimFilter evictable) override {
    EligibleViewScope view(&lists_);
    return TrySelectVictim(evictable);
  }

 private:
  absl::optional<BlockId> ChooseVictim(VictimFilter evictable) override;
  enum List { kAm = 0, kA1in = 1, kA1out = 2 };

  BlockLists lists_{3};  // front = newest / MRU
  int64_t capacity_ = 0;
  double kin_ratio_ = 0.25;
  double kout_ratio_ = 0.5;
  BlockId victim_ = 0;
  bool has_victim_ = false;
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_TWO_Q_POLICY_H_
