#include "policies/sieve_policy.h"

namespace kvsim {

void SievePolicy::OnInsert(BlockId block, const AccessInfo& info) { lists_.PushFront(0, block); }

void SievePolicy::OnAccess(BlockId block, const AccessInfo& info) {
  int32_t s = lists_.Find(block);
  KVSIM_CHECK(s != kNoSlot) << "sieve: access to non-resident block " << block;
  lists_.Mark(s) = 1;
}

void SievePolicy::OnRemove(BlockId block) {
  int32_t s = lists_.Find(block);
  KVSIM_CHECK(s != kNoSlot) << "sieve: removal of non-resident block " << block;
  if (s == hand_) hand_ = lists_.Prev(s);
  lists_.Erase(s);
}

absl::optional<BlockId> SievePolicy::ChooseVictim(VictimFilter evictable) {
  // Two full turns clear every visited bit; a third finds an evictable block if there is one.
  const int64_t max_steps = 3 * lists_.Size(0) + 1;
  int32_t s = hand_ != kNoSlot ? hand_ : lists_.Back(0);
  for (int64_t step = 0; step < max_steps && s != kNoSlot; ++step) {
    if (evictable(lists_.Block(s))) {
      if (lists_.Mark(s) == 0) {
        hand_ = s;  // OnRemove moves it to the newer neighbour
        return lists_.Block(s);
      }
      lists_.Mark(s) = 0;
    }
    s = lists_.Prev(s);
    if (s == kNoSlot) s = lists_.Back(0);
  }
  return absl::nullopt;
}

KVSIM_REGISTER_EVICTION_POLICY("sieve", SievePolicy);

}  // namespace kvsim
