#include "policies/lfu_policy.h"

#include "util/check.h"

namespace kvsim {

void LfuPolicy::OnInsert(BlockId block, const AccessInfo& info) {
  Entry entry{1, uses_++};
  bool inserted = entries_.emplace(block, entry).second;
  KVSIM_CHECK(inserted) << "lfu: block " << block << " inserted twice";
  order_.insert({entry.count, entry.last_use, block});
}

void LfuPolicy::OnAccess(BlockId block, const AccessInfo& info) {
  auto it = entries_.find(block);
  KVSIM_CHECK(it != entries_.end()) << "lfu: access to non-resident block " << block;
  Entry& e = it->second;
  order_.erase({e.count, e.last_use, block});
  ++e.count;
  e.last_use = uses_++;
  order_.insert({e.count, e.last_use, block});
}

void LfuPolicy::OnRemove(BlockId block) {
  auto it = entries_.find(block);
  KVSIM_CHECK(it != entries_.end()) << "lfu: removal of non-resident block " << block;
  order_.erase({it->second.count, it->second.last_use, block});
  entries_.erase(it);
}

absl::optional<BlockId> LfuPolicy::ChooseVictim(VictimFilter evictable) {
  for (const auto& [count, last_use, block] : order_) {
    if (evictable(block)) return block;
  }
  return absl::nullopt;
}

KVSIM_REGISTER_EVICTION_POLICY("lfu", LfuPolicy);

}  // namespace kvsim
