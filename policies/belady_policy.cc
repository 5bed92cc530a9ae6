#include "policies/belady_policy.h"

#include "util/check.h"

namespace kvsim {

void BeladyPolicy::SetNextUse(BlockId block, const AccessInfo& info) {
  KVSIM_CHECK(info.next_access_clock >= 0)
      << "belady: block " << block << " has no next_access_clock (needs the cache-replay pre-pass)";
  if (!dense_next_use_.empty()) {
    int64_t& next = dense_next_use_[block];
    if (next != kAbsent) by_next_use_.erase({next, block});
    next = info.next_access_clock;
  } else {
    auto [it, inserted] = next_use_.try_emplace(block, info.next_access_clock);
    if (!inserted) {
      by_next_use_.erase({it->second, block});
      it->second = info.next_access_clock;
    }
  }
  by_next_use_.insert({info.next_access_clock, block});
}

void BeladyPolicy::OnInsert(BlockId block, const AccessInfo& info) { SetNextUse(block, info); }
void BeladyPolicy::OnAccess(BlockId block, const AccessInfo& info) { SetNextUse(block, info); }

void BeladyPolicy::OnRemove(BlockId block) {
  if (!dense_next_use_.empty()) {
    int64_t& next = dense_next_use_[block];
    KVSIM_CHECK(next != kAbsent) << "belady: removal of non-resident block " << block;
    by_next_use_.erase({next, block});
    next = kAbsent;
    return;
  }
  auto it = next_use_.find(block);
  KVSIM_CHECK(it != next_use_.end()) << "belady: removal of non-resident block " << block;
  by_next_use_.erase({it->second, block});
  next_use_.erase(it);
}

absl::optional<BlockId> BeladyPolicy::ChooseVictim(VictimFilter evictable) {
  for (auto it = by_next_use_.rbegin(); it != by_next_use_.rend(); ++it) {
    if (evictable(it->second)) return it->second;
  }
  return absl::nullopt;
}

bool BeladyPolicy::ShouldAdmit(BlockId block, const AccessInfo& info) {
  KVSIM_CHECK(info.next_access_clock >= 0) << "belady: block " << block << " has no next_access_clock";
  if (by_next_use_.empty()) return true;
  return info.next_access_clock < by_next_use_.rbegin()->first;
}

KVSIM_REGISTER_EVICTION_POLICY("belady", BeladyPolicy);

}  // namespace kvsim
