#include "policies/arc_policy.h"

#include <algorithm>

namespace kvsim {

void ArcPolicy::AdaptTowardsT1() {
  const double b1 = static_cast<double>(lists_.Size(kB1)), b2 = static_cast<double>(lists_.Size(kB2));
  p_ = std::min(p_ + std::max(1.0, b2 / b1), static_cast<double>(std::max<int64_t>(capacity_, Resident())));
}

void ArcPolicy::AdaptTowardsT2() {
  const double b1 = static_cast<double>(lists_.Size(kB1)), b2 = static_cast<double>(lists_.Size(kB2));
  p_ = std::max(p_ - std::max(1.0, b1 / b2), 0.0);
}

// A safety net for caches that do not announce misses (the serving simulator): keeps |T1| + |B1| <= c and
// the four lists within 2c. With OnMiss the canonical cases keep both bounds and this deletes nothing.
void ArcPolicy::TrimGhosts() {
  const int64_t c = std::max<int64_t>(capacity_, Resident());
  while (lists_.Size(kB1) > 0 && lists_.Size(kT1) + lists_.Size(kB1) > c) lists_.Erase(lists_.Back(kB1));
  while (lists_.Size(kB1) + lists_.Size(kB2) > 0 && Resident() + lists_.Size(kB1) + lists_.Size(kB2) > 2 * c) {
    lists_.Erase(lists_.Size(kB2) > 0 ? lists_.Back(kB2) : lists_.Back(kB1));
  }
}

void ArcPolicy::OnMiss(BlockId block, const AccessInfo& info) {
  incoming_block_ = block;
  const int32_t s = lists_.Find(block);
  if (s == kNoSlot) {
    incoming_ = Incoming::kNew;
    return;
  }
  KVSIM_CHECK(lists_.ListOf(s) >= kB1) << "arc: miss on resident block " << block;
  // Cases II and III: p adapts before REPLACE, and the ghost leaves its list now.
  if (lists_.ListOf(s) == kB1) {
    AdaptTowardsT1();
    incoming_ = Incoming::kFromB1;
  } else {
    AdaptTowardsT2();
    incoming_ = Incoming::kFromB2;
  }
  lists_.Erase(s);
}

void ArcPolicy::OnInsert(BlockId block, const AccessInfo& info) {
  const bool announced = incoming_ != Incoming::kNone && incoming_block_ == block;
  const Incoming incoming = announced ? incoming_ : Incoming::kNone;
  incoming_ = Incoming::kNone;
  if (incoming == Incoming::kFromB1 || incoming == Incoming::kFromB2) {
    lists_.PushFront(kT2, block);
    return;
  }
  const int32_t s = lists_.Find(block);
  if (s == kNoSlot) {
    lists_.PushFront(kT1, block);
    TrimGhosts();
    return;
  }
  // An unannounced ghost hit: p adapts now, after the eviction that made room.
  if (lists_.ListOf(s) == kB1) {
    AdaptTowardsT1();
  } else {
    KVSIM_CHECK(lists_.ListOf(s) == kB2) << "arc: block " << block << " inserted while resident";
    AdaptTowardsT2();
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
  if (has_victim_ && victim_ == block && victim_leaves_ghost_) {
    lists_.MoveToFront(s, lists_.ListOf(s) == kT1 ? kB1 : kB2);
  } else {
    lists_.Erase(s);
  }
  if (has_victim_ && victim_ == block) has_victim_ = false;
}

absl::optional<BlockId> ArcPolicy::ChooseVictim(VictimFilter evictable) {
  if (capacity_ == 0) capacity_ = Resident();
  const int64_t c = capacity_;
  const Incoming incoming = incoming_ == Incoming::kNone ? Incoming::kNew : incoming_;
  const int64_t t1 = lists_.Size(kT1);
  // Case IV's ghost deletions are made only once a victim is found, so a failed search (a wrapper
  // trying a stricter filter first) changes nothing.
  bool delete_b1 = false, delete_b2 = false, leaves_ghost = true;
  int first = kT1;
  if (incoming == Incoming::kNew && t1 + lists_.Size(kB1) >= c) {
    if (t1 < c && lists_.Size(kB1) > 0) {
      delete_b1 = true;
    } else {
      leaves_ghost = false;  // T1 holds the whole cache: its LRU block goes, leaving no ghost
    }
  } else if (incoming == Incoming::kNew && Resident() + lists_.Size(kB1) + lists_.Size(kB2) >= 2 * c &&
             lists_.Size(kB2) > 0) {
    delete_b2 = true;
  }
  if (leaves_ghost) {
    const double t1d = static_cast<double>(t1);
    const bool from_t1 = t1 >= 1 && (t1d > p_ || (incoming == Incoming::kFromB2 && t1d == p_));
    first = from_t1 ? kT1 : kT2;
  }
  int32_t s = lists_.LastMatching(first, evictable);
  if (s == kNoSlot) s = lists_.LastMatching(first == kT1 ? kT2 : kT1, evictable);
  if (s == kNoSlot) return absl::nullopt;
  if (delete_b1) lists_.Erase(lists_.Back(kB1));
  if (delete_b2) lists_.Erase(lists_.Back(kB2));
  victim_ = lists_.Block(s);
  has_victim_ = true;
  victim_leaves_ghost_ = leaves_ghost;
  return victim_;
}

bool ArcPolicy::IsResident(BlockId block) const {
  const int32_t s = lists_.Find(block);
  return s != kNoSlot && lists_.ListOf(s) <= kT2;
}

KVSIM_REGISTER_EVICTION_POLICY("arc", ArcPolicy);

}  // namespace kvsim
