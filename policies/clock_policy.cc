#include "policies/clock_policy.h"

namespace kvsim {

void ClockPolicy::OnInsert(BlockId block, const AccessInfo& info) { lists_.PushFront(0, block); }

void ClockPolicy::OnAccess(BlockId block, const AccessInfo& info) {
  int32_t s = lists_.Find(block);
  KVSIM_CHECK(s != kNoSlot) << "clock: access to non-resident block " << block;
  lists_.Mark(s) = 1;
}

void ClockPolicy::OnRemove(BlockId block) {
  int32_t s = lists_.Find(block);
  KVSIM_CHECK(s != kNoSlot) << "clock: removal of non-resident block " << block;
  lists_.Erase(s);
}

absl::optional<BlockId> ClockPolicy::ChooseVictim(VictimFilter evictable) {
  // Walking from the oldest towards the newest also reaches the blocks moved to the newest end, in the
  // order they were moved, now with their bit clear: one walk visits each block at most twice.
  for (int32_t s = lists_.Back(0); s != kNoSlot;) {
    const int32_t prev = lists_.Prev(s);
    if (!evictable(lists_.Block(s))) {
      s = prev;
      continue;
    }
    if (lists_.Mark(s) == 0) return lists_.Block(s);
    lists_.Mark(s) = 0;
    lists_.MoveToFront(s);
    if (prev != kNoSlot) s = prev;  // else s was the newest already: look at it again, bit now clear
  }
  return absl::nullopt;
}

KVSIM_REGISTER_EVICTION_POLICY("clock", ClockPolicy);

}  // namespace kvsim
