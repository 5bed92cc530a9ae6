#include "policies/fifo_policy.h"

namespace kvsim {

void FifoPolicy::OnInsert(BlockId block, const AccessInfo& info) { lists_.PushFront(0, block); }

void FifoPolicy::OnAccess(BlockId block, const AccessInfo& info) {}  // insertion order only

void FifoPolicy::OnRemove(BlockId block) {
  int32_t s = lists_.Find(block);
  KVSIM_CHECK(s != kNoSlot) << "fifo: removal of non-resident block " << block;
  lists_.Erase(s);
}

absl::optional<BlockId> FifoPolicy::ChooseVictim(VictimFilter evictable) {
  const int32_t s = lists_.LastMatching(0, evictable);
  if (s == kNoSlot) return absl::nullopt;
  return lists_.Block(s);
}

KVSIM_REGISTER_EVICTION_POLICY("fifo", FifoPolicy);

}  // namespace kvsim
