#include "policies/leaf_first_policy.h"

#include "absl/strings/str_cat.h"
#include "policies/lru_policy.h"
#include "util/check.h"

namespace kvsim {

LeafFirstPolicy::LeafFirstPolicy(std::unique_ptr<EvictionPolicy> inner)
    : ForwardingPolicy(std::move(inner)),
      name_(absl::StrCat(this->inner().Name(), "+leaf_first")),
      subset_(this->inner().eligible_subset()) {
  if (subset_ != nullptr) subset_->EnableEligibility();
}

void LeafFirstPolicy::OnInsert(BlockId block, const AccessInfo& info) {
  bool parent_stops_being_leaf = false;
  if (info.has_parent && info.parent != block) {
    parent_of_[block] = info.parent;
    parent_stops_being_leaf = ++child_count_[info.parent] == 1;
  }
  inner().OnInsert(block, info);
  if (subset_ != nullptr) {
    if (child_count_.contains(block)) subset_->SetEligible(block, false);  // its children came first
    if (parent_stops_being_leaf) subset_->SetEligible(info.parent, false);
  }
}

void LeafFirstPolicy::OnRemove(BlockId block) {
  auto it = parent_of_.find(block);
  if (it != parent_of_.end()) {
    auto count = child_count_.find(it->second);
    KVSIM_CHECK(count != child_count_.end() && count->second > 0);
    if (--count->second == 0) {
      child_count_.erase(count);
      if (subset_ != nullptr) subset_->SetEligible(it->second, true);
    }
    parent_of_.erase(it);
  }
  inner().OnRemove(block);
}

int32_t LeafFirstPolicy::ResidentChildren(BlockId block) const {
  auto it = child_count_.find(block);
  return it == child_count_.end() ? 0 : it->second;
}

absl::optional<BlockId> LeafFirstPolicy::ChooseVictim(VictimFilter evictable) {
  auto evictable_leaf = [&](BlockId b) { return !child_count_.contains(b) && evictable(b); };
  absl::optional<BlockId> leaf =
      subset_ != nullptr ? subset_->ChooseEligibleVictim(evictable_leaf) : inner().TrySelectVictim(evictable_leaf);
  KVSIM_CHECK(!leaf.has_value() || evictable_leaf(*leaf))
      << name_ << ": chose block " << *leaf << ", not an evictable leaf";
  if (leaf.has_value()) return leaf;
  return inner().TrySelectVictim(evictable);
}

void LeafLruPolicy::OnInsert(BlockId block, const AccessInfo& info) {
  const int64_t now = uses_++;
  bool inserted = last_use_.emplace(block, now).second;
  KVSIM_CHECK(inserted) << "leaf_lru: block " << block << " inserted twice";
  all_.insert({now, block});
  if (IsLeaf(block)) leaves_.insert({now, block});
  if (info.has_parent && info.parent != block) {
    parent_of_[block] = info.parent;
    if (++child_count_[info.parent] == 1) {
      auto parent = last_use_.find(info.parent);
      if (parent != last_use_.end()) leaves_.erase({parent->second, info.parent});
    }
  }
}

void LeafLruPolicy::OnAccess(BlockId block, const AccessInfo& info) {
  auto it = last_use_.find(block);
  KVSIM_CHECK(it != last_use_.end()) << "leaf_lru: access to non-resident block " << block;
  all_.erase({it->second, block});
  const bool leaf = leaves_.erase({it->second, block}) > 0;
  it->second = uses_++;
  all_.insert({it->second, block});
  if (leaf) leaves_.insert({it->second, block});
}

void LeafLruPolicy::OnRemove(BlockId block) {
  auto it = last_use_.find(block);
  KVSIM_CHECK(it != last_use_.end()) << "leaf_lru: removal of non-resident block " << block;
  all_.erase({it->second, block});
  leaves_.erase({it->second, block});
  last_use_.erase(it);
  auto parent = parent_of_.find(block);
  if (parent == parent_of_.end()) return;
  auto count = child_count_.find(parent->second);
  KVSIM_CHECK(count != child_count_.end() && count->second > 0);
  if (--count->second == 0) {
    child_count_.erase(count);
    auto p = last_use_.find(parent->second);
    if (p != last_use_.end()) leaves_.insert({p->second, parent->second});
  }
  parent_of_.erase(parent);
}

absl::optional<BlockId> LeafLruPolicy::ChooseVictim(VictimFilter evictable) {
  for (const auto& [last_use, block] : leaves_) {
    if (evictable(block)) return block;
  }
  for (const auto& [last_use, block] : all_) {
    if (evictable(block)) return block;
  }
  return absl::nullopt;
}

KVSIM_REGISTER_EVICTION_POLICY("leaf_lru", LeafLruPolicy);

}  // namespace kvsim
