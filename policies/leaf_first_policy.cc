#include "policies/leaf_first_policy.h"

#include "absl/strings/str_cat.h"
#include "policies/lru_policy.h"
#include "util/check.h"

namespace kvsim {

LeafFirstPolicy::LeafFirstPolicy(std::unique_ptr<EvictionPolicy> inner) : inner_(std::move(inner)) {
  KVSIM_CHECK(inner_ != nullptr);
  name_ = absl::StrCat(inner_->Name(), "+leaf_first");
}

void LeafFirstPolicy::OnInsert(BlockId block, const AccessInfo& info) {
  if (info.has_parent && info.parent != block) {
    parent_of_[block] = info.parent;
    ++child_count_[info.parent];
  }
  inner_->OnInsert(block, info);
}

void LeafFirstPolicy::OnAccess(BlockId block, const AccessInfo& info) { inner_->OnAccess(block, info); }

void LeafFirstPolicy::OnRemove(BlockId block) {
  auto it = parent_of_.find(block);
  if (it != parent_of_.end()) {
    auto count = child_count_.find(it->second);
    KVSIM_CHECK(count != child_count_.end() && count->second > 0);
    if (--count->second == 0) child_count_.erase(count);
    parent_of_.erase(it);
  }
  inner_->OnRemove(block);
}

int32_t LeafFirstPolicy::ResidentChildren(BlockId block) const {
  auto it = child_count_.find(block);
  return it == child_count_.end() ? 0 : it->second;
}

absl::optional<BlockId> LeafFirstPolicy::TrySelectVictim(const std::function<bool(BlockId)>& evictable) {
  absl::optional<BlockId> leaf = inner_->TrySelectVictim(
      [&](BlockId b) { return !child_count_.contains(b) && evictable(b); });
  if (leaf.has_value()) return leaf;
  return inner_->TrySelectVictim(evictable);
}

BlockId LeafFirstPolicy::SelectVictim(const std::function<bool(BlockId)>& evictable) {
  absl::optional<BlockId> victim = TrySelectVictim(evictable);
  KVSIM_CHECK(victim.has_value()) << name_ << ": no evictable block";
  return *victim;
}

bool LeafFirstPolicy::ShouldAdmit(BlockId block, const AccessInfo& info) {
  return inner_->ShouldAdmit(block, info);
}

LeafLruPolicy::LeafLruPolicy() : LeafFirstPolicy(std::make_unique<LruPolicy>()) { name_ = "leaf_lru"; }

KVSIM_REGISTER_EVICTION_POLICY("leaf_lru", LeafLruPolicy);

}  // namespace kvsim
