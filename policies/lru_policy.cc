#include "policies/lru_policy.h"

namespace kvsim {

void LruPolicy::OnInsert(BlockId block, const AccessInfo& info) { lists_.PushFront(0, block); }

void LruPolicy::OnAccess(BlockId block, const AccessInfo& info) { lists_.MoveToFront(SlotOf(block)); }

void LruPolicy::OnRemove(BlockId block) {
  lists_.Erase(SlotOf(block));
  looked_up_slot_ = kNoSlot;  // the slot is free now and may be reused for another block
}

absl::optional<BlockId> LruPolicy::ChooseVictim(VictimFilter evictable) {
  const int32_t s = lists_.LastMatching(0, evictable);
  if (s == kNoSlot) return absl::nullopt;
  return lists_.Block(s);
}

KVSIM_REGISTER_EVICTION_POLICY("lru", LruPolicy);

}  // namespace kvsim
