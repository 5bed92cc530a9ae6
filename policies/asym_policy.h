// File: policies/asym_policy.h
//
// AsymPolicy ("asym"): position-aware eviction after AsymCache (arXiv 2606.02964): evict
//   argmin over evictable blocks B of f_B(t) x dT_B,
// where dT_B is the time to restore B if evicted (AccessInfo::restore_ns: the position-aware recompute
// latency from the cost model, or the reload latency if cheaper), so that late-position blocks, costly to
// rebuild, are kept longer; and f_B(t) is a recency-based reuse likelihood. We take
//   f_B(t) = 2^(-(t - t_B) / h),
// t = the number of accesses (inserts and hits) this policy has seen, t_B = B's latest, h = the
// half-life in accesses (AsymParams.half_life_accesses; default the capacity in blocks, 1024 without
// SetCapacity). Then log2(f_B x dT_B) = -t/h + (t_B + h log2 dT_B)/h, so the argmin is the smallest key
//   K_B = t_B + h x log2(dT_B),
// which does not change as t advances: a B-tree ordered by (K_B, t_B) gives O(log n) per operation.
// dT_B <= 0 (unknown or uniform) counts as 1 ns, log2 = 0. With uniform restore cost (all equal, or all
// 0) K_B = t_B + constant, the order of last use: the policy is exactly LRU (the paper: "degrades to LRU";
// a test replays traces with both and compares every victim). A block's dT is its latest access's.
//
// Example:
//   AsymPolicy asym; asym.SetCapacity(1024);
//   info.restore_ns = 1000; asym.OnInsert(1, info);   // K = 0 + 1024 x log2(1000)
//   info.restore_ns = 10;   asym.OnInsert(2, info);   // K = 1 + 1024 x log2(10): evicted first
//
// Thread-safety: one cache on one thread.
#ifndef KVSIM_POLICIES_ASYM_POLICY_H_
#define KVSIM_POLICIES_ASYM_POLICY_H_

#include <tuple>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "policies/eviction_policy.h"

namespace kvsim {

class AsymPolicy final : public EvictionPolicy, public ResidencyIndex {
 public:
  absl::string_view Name() const override { return "asym"; }
  absl::Status Configure(const proto::EvictionPolicyConfig& config) override;
  void SetCapacity(int64_t num_blocks) override { capacity_ = num_blocks; }
  void OnInsert(BlockId block, const AccessInfo& info) override;
  void OnAccess(BlockId block, const AccessInfo& info) override;
  void OnRemove(BlockId block) override;
  const ResidencyIndex* residency() const override { return this; }
  bool IsResident(BlockId block) const override { return entries_.contains(block); }

 private:
  absl::optional<BlockId> ChooseVictim(VictimFilter evictable) override;
  struct Entry {
    double key;
    int64_t last_use;
  };
  void Touch(BlockId block, const AccessInfo& info, bool insert);
  double HalfLife() const;

  absl::btree_set<std::tuple<double, int64_t, BlockId>> order_;
  absl::flat_hash_map<BlockId, Entry> entries_;
  int64_t uses_ = 0;
  int64_t capacity_ = 0;
  double half_life_ = 0;  // 0 = default
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_ASYM_POLICY_H_
