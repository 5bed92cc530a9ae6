// File: policies/leaf_first_policy.h
//
// LeafFirstPolicy: a wrapper that applies any policy under the prefix-tree constraint of SGLang's radix
// cache (Zheng et al., "SGLang: Efficient Execution of Structured Language Model Programs", NeurIPS 2024):
// only a block with no resident child in the prefix tree may be evicted, since in prefix mode a block
// whose prefix is gone is useless. The tree comes from AccessInfo::parent/has_parent at insertion (the
// previous block of the same prompt); a block's resident-children count is kept in a flat hash map, so
// the constraint costs O(1) per callback. The inner policy ranks the candidates: SelectVictim asks it
// for its first choice among evictable leaves.
//
// "leaf_lru" is LeafFirstPolicy(LruPolicy), registered by name: the SGLang radix-cache policy (LRU over
// leaves). Any other policy gets the constraint with EvictionPolicyConfig.leaf_first (policy_factory.h).
// We chose a wrapper over a dedicated leaf-LRU heap so that every policy can run under the constraint;
// the price is that the inner search skips non-leaf blocks (for LRU, a request's earlier blocks).
//
// When no evictable block is a leaf (the leaves all pinned by the cache, or a cycle in a malformed
// trace's parent links), the constraint is dropped for that one choice: the inner policy picks among all
// evictable blocks.
//
// Example:
//   auto policy = std::make_unique<LeafFirstPolicy>(std::make_unique<LruPolicy>());
//
// Thread-safety: one cache on one thread.
#ifndef KVSIM_POLICIES_LEAF_FIRST_POLICY_H_
#define KVSIM_POLICIES_LEAF_FIRST_POLICY_H_

#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "policies/eviction_policy.h"

namespace kvsim {

class LeafFirstPolicy : public EvictionPolicy {
 public:
  // REQUIRES: inner != nullptr.
  explicit LeafFirstPolicy(std::unique_ptr<EvictionPolicy> inner);

  // "<inner>+leaf_first"; LeafLruPolicy overrides it with "leaf_lru".
  absl::string_view Name() const override { return name_; }
  void OnInsert(BlockId block, const AccessInfo& info) override;
  void OnAccess(BlockId block, const AccessInfo& info) override;
  void OnRemove(BlockId block) override;
  bool TracksResidency() const override { return inner_->TracksResidency(); }
  bool IsResident(BlockId block) const override { return inner_->IsResident(block); }
  BlockId SelectVictim(const std::function<bool(BlockId)>& evictable) override;
  absl::optional<BlockId> TrySelectVictim(const std::function<bool(BlockId)>& evictable) override;
  bool ShouldAdmit(BlockId block, const AccessInfo& info) override;
  void SetCapacity(int64_t num_blocks) override { inner_->SetCapacity(num_blocks); }
  void OnRequestEnd(const RequestEndInfo& end) override { inner_->OnRequestEnd(end); }

  // Resident children of `block` (tests).
  int32_t ResidentChildren(BlockId block) const;

 protected:
  std::string name_;

 private:
  std::unique_ptr<EvictionPolicy> inner_;
  absl::flat_hash_map<BlockId, BlockId> parent_of_;       // resident blocks that have a parent
  absl::flat_hash_map<BlockId, int32_t> child_count_;     // > 0 entries only
};

// "leaf_lru": LRU among leaves of the prefix tree (SGLang's radix cache).
class LeafLruPolicy final : public LeafFirstPolicy {
 public:
  LeafLruPolicy();
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_LEAF_FIRST_POLICY_H_
