#include "policies/s3fifo_policy.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace kvsim {

absl::Status S3FifoPolicy::Configure(const proto::EvictionPolicyConfig& config) {
  if (config.params_case() == proto::EvictionPolicyConfig::PARAMS_NOT_SET) return absl::OkStatus();
  if (config.params_case() != proto::EvictionPolicyConfig::kS3Fifo) return EvictionPolicy::Configure(config);
  const proto::S3FifoParams& p = config.s3fifo();
  if (p.small_queue_ratio() != 0) {
    if (!(p.small_queue_ratio() > 0 && p.small_queue_ratio() < 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("eviction.s3fifo.small_queue_ratio must be in (0, 1), got ", p.small_queue_ratio()));
    }
    small_ratio_ = p.small_queue_ratio();
  }
  if (p.ghost_ratio() != 0) {
    if (!(p.ghost_ratio() > 0) || !std::isfinite(p.ghost_ratio())) {
      return absl::InvalidArgumentError(absl::StrCat("eviction.s3fifo.ghost_ratio must be > 0, got ", p.ghost_ratio()));
    }
    ghost_ratio_ = p.ghost_ratio();
  }
  if (p.move_to_main_threshold() != 0) {
    if (p.move_to_main_threshold() < 1 || p.move_to_main_threshold() > 3) {
      return absl::InvalidArgumentError(
          absl::StrCat("eviction.s3fifo.move_to_main_threshold must be in 1..3, got ", p.move_to_main_threshold()));
    }
    move_threshold_ = p.move_to_main_threshold();
  }
  return absl::OkStatus();
}

int64_t S3FifoPolicy::SmallTarget() const { return std::max<int64_t>(1, std::llround(small_ratio_ * capacity_)); }
int64_t S3FifoPolicy::GhostSize() const {
  return ghost_ratio_ > 0 ? std::llround(ghost_ratio_ * capacity_) : std::max<int64_t>(0, MainTarget());
}

void S3FifoPolicy::OnInsert(BlockId block, const AccessInfo& info) {
  if (!pending_.empty()) CancelPending();
  const int32_t s = lists_.Find(block);
  if (s == kNoSlot) {
    lists_.PushFront(kSmall, block);
    return;
  }
  KVSIM_CHECK(lists_.ListOf(s) == kGhost) << "s3fifo: block " << block << " inserted while resident";
  lists_.MoveToFront(s, kMain);
  lists_.Mark(s) = 0;
}

void S3FifoPolicy::OnAccess(BlockId block, const AccessInfo& info) {
  int32_t s = lists_.Find(block);
  KVSIM_CHECK(s != kNoSlot && lists_.ListOf(s) != kGhost) << "s3fifo: access to non-resident " << block;
  if (lists_.ListOf(s) >= kOutSmall) CancelPending();
  lists_.Mark(s) = std::min(lists_.Mark(s) + 1, 3);
}

void S3FifoPolicy::OnRemove(BlockId block) {
  const int32_t s = lists_.Find(block);
  KVSIM_CHECK(s != kNoSlot && lists_.ListOf(s) != kGhost) << "s3fifo: removal of non-resident " << block;
  auto it = std::find(pending_.begin(), pending_.end(), block);
  if (it != pending_.end()) pending_.erase(it);  // removed by its owner before the cache claimed it
  if (lists_.ListOf(s) != kOutSmall) {
    lists_.Erase(s);
    return;
  }
  lists_.MoveToFront(s, kGhost);
  lists_.Mark(s) = 0;
  while (lists_.Size(kGhost) > GhostSize()) lists_.Erase(lists_.Back(kGhost));
}

void S3FifoPolicy::TakeVictim(int32_t s, List out) {
  lists_.MoveToFront(s, out);
  pending_.push_back(lists_.Block(s));
}

void S3FifoPolicy::CancelPending() {
  for (auto it = pending_.rbegin(); it != pending_.rend(); ++it) {
    const int32_t s = lists_.Find(*it);
    const int list = lists_.ListOf(s) == kOutSmall ? kSmall : kMain;
    lists_.MoveToBack(s, list);
  }
  pending_.clear();
}

// Blocks failing the filter stay where they are; the walk passes over them. In the eligible view (leaf-
// first) it visits only eligible blocks and takes exactly the steps the plain walk takes with a filter that
// refuses the ineligible ones: the plain walk goes from the tail towards the head, a block reinserted at
// the head is met again on the way, and the walk wraps to the tail after the head.
bool S3FifoPolicy::EvictMain(VictimFilter evictable) {
  const bool view = lists_.eligible_view();
  auto tail = [&] { return view ? lists_.BackEligible(kMain) : lists_.Back(kMain); };
  // Each pass over M decrements every evictable frequency it passes; frequencies are <= 3, so at most
  // four passes reach a block with frequency 0 if any block is evictable.
  for (int pass = 0; pass < 5; ++pass) {
    const int64_t n = lists_.Size(kMain);
    int32_t s = tail();
    for (int64_t i = 0; i < n && s != kNoSlot; ++i) {
      const bool at_head = lists_.Prev(s) == kNoSlot;
      const int32_t prev = view ? lists_.PrevEligible(s) : lists_.Prev(s);
      bool moved = false;
      if (evictable(lists_.Block(s))) {
        if (lists_.Mark(s) == 0) {
          TakeVictim(s, kOutMain);
          return true;
        }
        --lists_.Mark(s);
        lists_.MoveToFront(s);
        moved = true;
      }
      if (at_head) {
        s = tail();
      } else if (prev != kNoSlot) {
        s = prev;
      } else {
        s = view && moved ? s : tail();  // (plain walk: prev == kNoSlot only at the head)
      }
    }
  }
  return false;
}

void S3FifoPolicy::EvictSmall(VictimFilter evictable) {
  const bool view = lists_.eligible_view();
  for (int32_t s = view ? lists_.BackEligible(kSmall) : lists_.Back(kSmall); s != kNoSlot;) {
    const int32_t prev = view ? lists_.PrevEligible(s) : lists_.Prev(s);
    if (evictable(lists_.Block(s))) {
      if (lists_.Mark(s) < move_threshold_) {
        TakeVictim(s, kOutSmall);
        return;
      }
      lists_.MoveToFront(s, kMain);
      if (lists_.Size(kMain) > MainTarget()) EvictMain(evictable);
    }
    s = prev;
  }
}

void S3FifoPolicy::Evict(VictimFilter evictable) {
  if (lists_.Size(kSmall) >= SmallTarget()) {
    EvictSmall(evictable);
    // evictS ended without evicting from S (it emptied, or holds no evictable block): evict() again,
    // which now takes M unless S still holds its share of unevictable blocks.
    if (pending_.empty()) EvictMain(evictable);
  } else if (!EvictMain(evictable)) {
    EvictSmall(evictable);  // M holds no evictable block
  }
}

absl::optional<BlockId> S3FifoPolicy::ChooseVictim(VictimFilter evictable) {
  if (capacity_ == 0) capacity_ = lists_.Size(kSmall) + lists_.Size(kMain);
  if (!pending_.empty() && !evictable(pending_.front())) CancelPending();
  if (pending_.empty()) Evict(evictable);
  if (pending_.empty()) return absl::nullopt;
  const BlockId victim = pending_.front();
  pending_.pop_front();
  return victim;
}

bool S3FifoPolicy::IsResident(BlockId block) const {
  const int32_t s = lists_.Find(block);
  return s != kNoSlot && lists_.ListOf(s) != kGhost;
}

KVSIM_REGISTER_EVICTION_POLICY("s3fifo", S3FifoPolicy);

}  // namespace kvsim
