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
// Any policy gets the constraint with EvictionPolicyConfig.leaf_first (policy_factory.h). When the inner
// policy offers an EligibleSubset (lru, fifo, arc, 2q, s3fifo: their BlockLists keep the leaves in list
// order in a B-tree), the wrapper marks the leaves there and the inner search visits only leaves: O(log n)
// per step, the same victims and state changes as the plain search. Otherwise the inner search skips the
// non-leaf blocks one by one, which can cost O(resident blocks) per eviction when most blocks have
// children. "leaf_lru", the SGLang radix-cache policy (LRU over
// leaves), is therefore a dedicated class, LeafLruPolicy: a B-tree of the leaves ordered by last use,
// O(log n) per operation, choosing exactly the victims of LeafFirstPolicy(LruPolicy) (a test checks it).
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

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "policies/eviction_policy.h"

namespace kvsim {

class LeafFirstPolicy : public ForwardingPolicy {
 public:
  // REQUIRES: inner != nullptr.
  explicit LeafFirstPolicy(std::unique_ptr<EvictionPolicy> inner);

  // "<inner>+leaf_first"; LeafLruPolicy overrides it with "leaf_lru".
  absl::string_view Name() const override { return name_; }
  void OnInsert(BlockId block, const AccessInfo& info) override;
  void OnRemove(BlockId block) override;

  // Resident children of `block` (tests).
  int32_t ResidentChildren(BlockId block) const;

 protected:
  absl::optional<BlockId> ChooseVictim(VictimFilter evictable) override;

 private:
  std::string name_;
  EligibleSubset* subset_;                             // the inner policy's, or null
  absl::flat_hash_map<BlockId, BlockId> parent_of_;    // resident blocks that have a parent
  absl::flat_hash_map<BlockId, int32_t> child_count_;  // > 0 entries only
};

// "leaf_lru": LRU among the leaves of the prefix tree (SGLang's radix cache), O(log n) per operation.
// Without an evictable leaf it falls back to the least recently used evictable block.
class LeafLruPolicy final : public EvictionPolicy, public ResidencyIndex {
 public:
  absl::string_view Name() const override { return "leaf_lru"; }
  void OnInsert(BlockId block, const AccessInfo& info) override;
  void OnAccess(BlockId block, const AccessInfo& info) override;
  void OnRemove(BlockId block) override;
  const ResidencyIndex* residency() const override { return this; }
  bool IsResident(BlockId block) const override { return last_use_.contains(block); }

 private:
  absl::optional<BlockId> ChooseVictim(VictimFilter evictable) override;
  bool IsLeaf(BlockId block) const { return !child_count_.contains(block); }

  absl::flat_hash_map<BlockId, int64_t> last_use_;       // resident blocks
  absl::flat_hash_map<BlockId, BlockId> parent_of_;      // resident blocks that have a parent
  absl::flat_hash_map<BlockId, int32_t> child_count_;    // > 0 entries only
  absl::btree_set<std::pair<int64_t, BlockId>> leaves_;  // resident leaves by last use
  absl::btree_set<std::pair<int64_t, BlockId>> all_;     // every resident block by last use (fallback)
  int64_t uses_ = 0;
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_LEAF_FIRST_POLICY_H_
