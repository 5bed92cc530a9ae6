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

class LruPolicy final : public EvictionPolicy {
 public:
  absl::string_view Name() const override { return "lru"; }
  void SetCapacity(int64_t num_blocks) override { lists_.Reserve(num_blocks + 1); }
  void OnInsert(BlockId block, const AccessInfo& info) override;
  void OnAccess(BlockId block, const AccessInfo& info) override;
  void OnRemove(BlockId block) override;
  bool TracksResidency() const override { return true; }
  bool IsResident(BlockId block) const override { return lists_.Contains(block); }
  BlockId SelectVictim(const std::function<bool(BlockId)>& evictable) override;
  absl::optional<BlockId> TrySelectVictim(const std::function<bool(BlockId)>& evictable) override;

 private:
  BlockLists lists_{1};
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_LRU_POLICY_H_
