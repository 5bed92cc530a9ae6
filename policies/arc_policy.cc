#include "policies/arc_policy.h"

#include <algorithm>

namespace kvsim {

void ArcPolicy::TrimGhosts() {
  const int64_t c = std::max<int64_t>(capacity_, Resident());
  while (lists_.Size(kB1) > 0 && lists_.Size(kT1) + lists_.Size(kB1) > c) lists_.Erase(lists_.Back(kB1));
  while (Resident() + lists_.Size(kB1) + lists_.Size(kB2) > 2 * c) {
    lists_.Erase(lists_.Size(kB2) > 0 ? lists_.Back(kB2) : lists_.Back(kB1));
  }
}

void ArcPolicy::OnInsert(BlockId block, const AccessInfo& info) {
  const int32_t s = lists_.Find(block);
  if (s == kNoSlot) {
    lists_.PushFront(kT1, block);
    TrimGhosts();
    return;
  }
  const int64_t b1 = lists_.Size(kB1), b2 = lists_.Size(kB2);
  if (lists_.ListOf(s) == kB1) {
    p_ = std::min(std::max<int64_t>(capacity_, Resident() + 1), p_ + std::max<int64_t>(1, b2 / b1));
  } else {
    KVSIM_CHECK(lists_.ListOf(s) == kB2) << "arc: block " << block << " inserted while resident";
    p_ = std::max<int64_t>(0, p_ - std::max<int64_t>(1, b1 / b2));
  }
  lists_.MoveToFront(s, kT2);
  TrimGhosts();
}

void ArcPolicy::OnAccess(BlockId block, const AccessInfo& info) {
  const int32_t s = lists_.Find(block);
  KVSIM_CHECK(s != kNoSlot && lists_.ListOf(s) <= kT2) << "arc: access to non-resident block " << block;
  lists_.MoveToFront(s, kT2);
}

void ArcPolicy::OnRemove(BlockId block) {
  const int32_t s = lists_.Find(block);
  KVSIM_CHECK(s != kNoSlot && lists_.ListOf(s) <= kT2) << "arc: removal of non-resident block " << block;
  if (has_victim_ && victim_ == block) {
    lists_.MoveToFront(s, lists_.ListOf(s) == kT1 ? kB1 : kB2);
    has_victim_ = false;
    TrimGhosts();
  } else {
    lists_.Erase(s);
  }
}

absl::optional<BlockId> ArcPolicy::ChooseVictim(VictimFilter evictable) {
  if (capacity_ == 0) capacity_ = Resident();
  const bool from_t1 = lists_.Size(kT1) > 0 && lists_.Size(kT1) > p_;
  int32_t s = lists_.LastMatching(from_t1 ? kT1 : kT2, evictable);
  if (s == kNoSlot) s = lists_.LastMatching(from_t1 ? kT2 : kT1, evictable);
  if (s == kNoSlot) return absl::nullopt;
  victim_ = lists_.Block(s);
  has_victim_ = true;
  return victim_;
}

bool ArcPolicy::IsResident(BlockId block) const {
  const int32_t s = lists_.Find(block);
  return s != kNoSlot && lists_.ListOf(s) <= kT2;
}

KVSIM_REGISTER_EVICTION_POLICY("arc", ArcPolicy);

}  // namespace kvsim
