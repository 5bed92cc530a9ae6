#include "policies/lru_policy.h"

namespace kvsim {

void LruPolicy::OnInsert(BlockId block, const AccessInfo& info) { lists_.PushFront(0, block); }

void LruPolicy::OnAccess(BlockId block, const AccessInfo& info) {
  int32_t s = lists_.Find(block);
  KVSIM_CHECK(s != kNoSlot) << "lru: access to non-resident block " << block;
  lists_.MoveToFront(s);
}

void LruPolicy::OnRemove(BlockId block) {
  int32_t s = lists_.Find(block);
  KVSIM_CHECK(s != kNoSlot) << "lru: removal of non-resident block " << block;
  lists_.Erase(s);
}

absl::optional<BlockId> LruPolicy::TrySelectVictim(const std::function<bool(BlockId)>& evictable) {
  for (int32_t s = lists_.Back(0); s != kNoSlot; s = lists_.Prev(s)) {
    if (evictable(lists_.Block(s))) return lists_.Block(s);
  }
  return absl::nullopt;
}

BlockId LruPolicy::SelectVictim(const std::function<bool(BlockId)>& evictable) {
  absl::optional<BlockId> victim = TrySelectVictim(evictable);
  KVSIM_CHECK(victim.has_value()) << "lru: no evictable block";
  return *victim;
}

KVSIM_REGISTER_EVICTION_POLICY("lru", LruPolicy);

}  // namespace kvsim
