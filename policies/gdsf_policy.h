// File: policies/gdsf_policy.h
//
// GdsfPolicy ("gdsf"): Greedy-Dual-Size-Frequency (Cherkasova, "Improving WWW Proxies Performance with
// Greedy-Dual-Size-Frequency Caching Policy", HP Labs HPL-98-69, 1998). Each resident block has the
// priority H = L + frequency x cost / size, where L is the inflation clock (the priority of the latest
// victim), frequency counts the block's insert and hits since it became resident, cost =
// AccessInfo::restore_ns and size = AccessInfo::size_bytes of its latest access. The victim is the
// evictable block with the lowest H (ties: the one whose H was set earliest); evicting it sets L to its H.
// When restore_ns or size_bytes is 0 (unknown or uniform, as in cache replay) it counts as 1, so with
// uniform cost and size GDSF is in-cache LFU with aging by L (LFU-DA). O(log n) per operation.
//
// Example:
//   info.restore_ns = 400; info.size_bytes = 2; gdsf.OnInsert(1, info);  // H = 0 + 1 x 400 / 2 = 200
//
// Thread-safety: one cache on one thread.
#ifndef KVSIM_POLICIES_GDSF_POLICY_H_
#define KVSIM_POLICIES_GDSF_POLICY_H_

#include <tuple>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "policies/eviction_policy.h"

namespace kvsim {

class GdsfPolicy final : public EvictionPolicy, public ResidencyIndex {
 public:
  absl::string_view Name() const override { return "gdsf"; }
  void OnInsert(BlockId block, const AccessInfo& info) override;
  void OnAccess(BlockId block, const AccessInfo& info) override;
  void OnRemove(BlockId block) override;
  const ResidencyIndex* residency() const override { return this; }
  bool IsResident(BlockId block) const override { return entries_.contains(block); }

  double inflation() const { return inflation_; }  // L (tests)

 private:
  absl::optional<BlockId> ChooseVictim(VictimFilter evictable) override;
  struct Entry {
    int64_t frequency;
    double priority;
    int64_t seq;
  };
  void SetPriority(BlockId block, Entry* entry, const AccessInfo& info);

  absl::btree_set<std::tuple<double, int64_t, BlockId>> order_;
  absl::flat_hash_map<BlockId, Entry> entries_;
  double inflation_ = 0;
  int64_t seq_ = 0;
  BlockId victim_ = 0;
  bool has_victim_ = false;
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_GDSF_POLICY_H_
