// File: policies/belady_policy.h
//
// BeladyPolicy ("belady"): the MIN oracle. On a miss with a full cache it evicts, among the resident
// blocks and the incoming one, the block whose next use is furthest in the future (never again =
// infinity): if that is the incoming block, ShouldAdmit() returns false and the cache stays as it is
// (bypass); otherwise SelectVictim() returns the resident block with the furthest next use. With unit
// block sizes this maximises the hit count of every access stream (Belady, "A study of replacement
// algorithms for a virtual-storage computer", IBM Systems Journal 1966; Mattson et al. 1970 for the
// bypass form), so it is the upper bound of every policy in cache-replay tables.
//
// Needs AccessInfo::next_access_clock on every OnInsert/OnAccess: cache replay computes it in a pre-pass
// over the whole trace held in memory. A call with next_access_clock == -1 (unknown) is a contract
// violation (checked). Ties between equal next uses (only blocks never used again tie) break towards the
// block accessed most recently (the larger access clock): deterministic, and the same whatever ids the
// cache gives the blocks (hashes, or cache replay's dense ids).
// O(log n) per operation (a B-tree ordered by next use).
//
// Example:
//   info.next_access_clock = 10; belady.OnInsert(1, info);
//   info.next_access_clock = AccessInfo::kNever; belady.OnInsert(2, info);
//   belady.SelectVictim(all);  // 2: never used again
//
// Thread-safety: one cache on one thread.
#ifndef KVSIM_POLICIES_BELADY_POLICY_H_
#define KVSIM_POLICIES_BELADY_POLICY_H_

#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "policies/eviction_policy.h"

namespace kvsim {

class BeladyPolicy final : public EvictionPolicy, public ResidencyIndex {
 public:
  absl::string_view Name() const override { return "belady"; }
  void OnInsert(BlockId block, const AccessInfo& info) override;
  void OnAccess(BlockId block, const AccessInfo& info) override;
  void OnRemove(BlockId block) override;
  const ResidencyIndex* residency() const override { return this; }
  void SetDenseIds(int64_t num_ids) override { dense_.assign(static_cast<size_t>(num_ids), Key{kAbsent, 0}); }
  bool IsResident(BlockId block) const override {
    return dense_.empty() ? keys_.contains(block) : dense_[block].next_use != kAbsent;
  }
  void Prefetch(BlockId block) const override {
    if (!dense_.empty()) __builtin_prefetch(&dense_[block]);
  }
  // False when the incoming block's next use is no earlier than every resident block's.
  bool ShouldAdmit(BlockId block, const AccessInfo& info) override;

 private:
  absl::optional<BlockId> ChooseVictim(VictimFilter evictable) override;
  void SetNextUse(BlockId block, const AccessInfo& info);

  static constexpr int64_t kAbsent = -1;
  struct Key {
    int64_t next_use;  // kAbsent = not resident (dense_)
    int64_t clock;     // of the access that set next_use
  };
  absl::btree_set<std::tuple<int64_t, int64_t, BlockId>> order_;  // (next use, clock, block)
  absl::flat_hash_map<BlockId, Key> keys_;                        // resident blocks, unless ids are dense
  std::vector<Key> dense_;                                        // by dense id, if dense
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_BELADY_POLICY_H_
