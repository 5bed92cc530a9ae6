#include "policies/belady_policy.h"

#include "util/check.h"

namespace kvsim {

void BeladyPolicy::SetNextUse(BlockId block, const AccessInfo& info) {
  KVSIM_CHECK(info.next_access_clock >= 0)
      << "belady: block " << block << " has no next_access_clock (needs the cache-replay pre-pass)";
  Key* key;
  if (!dense_.empty()) {
    key = &dense_[block];
  } else {
    auto [it, inserted] = keys_.try_emplace(block, Key{kAbsent, 0});
    key = &it->second;
  }
  if (key->next_use != kAbsent) order_.erase({key->next_use, key->clock, block});
  *key = Key{info.next_access_clock, info.clock};
  order_.insert({key->next_use, key->clock, block});
}

void BeladyPolicy::OnInsert(BlockId block, const AccessInfo& info) { SetNextUse(block, info); }
void BeladyPolicy::OnAccess(BlockId block, const AccessInfo& info) { SetNextUse(block, info); }

void BeladyPolicy::OnRemove(BlockId block) {
  if (!dense_.empty()) {
    Key& key = dense_[block];
    KVSIM_CHECK(key.next_use != kAbsent) << "belady: removal of non-resident block " << block;
    order_.erase({key.next_use, key.clock, block});
    key.next_use = kAbsent;
    return;
  }
  auto it = keys_.find(block);
  KVSIM_CHECK(it != keys_.end()) << "belady: removal of non-resident block " << block;
  order_.erase({it->second.next_use, it->second.clock, block});
  keys_.erase(it);
}

absl::optional<BlockId> BeladyPolicy::ChooseVictim(VictimFilter evictable) {
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
    if (evictable(std::get<2>(*it))) return std::get<2>(*it);
  }
  return absl::nullopt;
}

bool BeladyPolicy::ShouldAdmit(BlockId block, const AccessInfo& info) {
  KVSIM_CHECK(info.next_access_clock >= 0) << "belady: block " << block << " has no next_access_clock";
  if (order_.empty()) return true;
  return info.next_access_clock < std::get<0>(*order_.rbegin());
}

KVSIM_REGISTER_EVICTION_POLICY("belady", BeladyPolicy);

}  // namespace kvsim
