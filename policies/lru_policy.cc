#include "policies/lru_policy.h"

namespace kvsim {

void LruPolicy::OnInsert(BlockId block, const AccessInfo& info) { lists_.PushFront(0, block); }

void LruPolicy::OnAccess(BlockId block, const AccessInfo& info) { lists_.MoveToFront(SlotOf(block)); }

void LruPolicy::OnRemove(BlockId block) {
  lists_.Erase(SlotOf(block));
  looked_up_slot_ = kNoSlot;  // the slot is free now and may be reused for another block
}

absl::optional<BlockId> LruPolicy::ChooseVictim(VictimFilter evictable) {
  for (int32_t s = lists_.Back(0); s != kNoSlot; s = lists_.Prev(s)) {
    if (evictable(lists_.Block(s))) return lists_.Block(s);
  }
  return absl::nullopt;
}

KVSIM_REGISTER_EVICTION_POLICY("lru", LruPolicy);

}  // namespace kvsim
