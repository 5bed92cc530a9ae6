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
int64_t S3FifoPolicy::GhostSize() const { return std::llround(ghost_ratio_ * capacity_); }

void S3FifoPolicy::OnInsert(BlockId block, const AccessInfo& info) {
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
  const int32_t s = lists_.Find(block);
  KVSIM_CHECK(s != kNoSlot && lists_.ListOf(s) != kGhost) << "s3fifo: access to non-resident " << block;
  lists_.Mark(s) = std::min(lists_.Mark(s) + 1, 3);
}

void S3FifoPolicy::OnRemove(BlockId block) {
  const int32_t s = lists_.Find(block);
  KVSIM_CHECK(s != kNoSlot && lists_.ListOf(s) != kGhost) << "s3fifo: removal of non-resident " << block;
  const bool to_ghost = has_victim_ && victim_ == block && lists_.ListOf(s) == kSmall;
  if (has_victim_ && victim_ == block) has_victim_ = false;
  if (!to_ghost) {
    lists_.Erase(s);
    return;
  }
  lists_.MoveToFront(s, kGhost);
  lists_.Mark(s) = 0;
  while (lists_.Size(kGhost) > GhostSize()) lists_.Erase(lists_.Back(kGhost));
}

absl::optional<BlockId> S3FifoPolicy::EvictFromSmall(const std::function<bool(BlockId)>& evictable) {
  for (int32_t s = lists_.Back(kSmall); s != kNoSlot;) {
    const int32_t prev = lists_.Prev(s);
    if (evictable(lists_.Block(s))) {
      if (lists_.Mark(s) < move_threshold_) return lists_.Block(s);
      lists_.MoveToFront(s, kMain);
      lists_.Mark(s) = 0;
    }
    s = prev;
  }
  return absl::nullopt;
}

absl::optional<BlockId> S3FifoPolicy::EvictFromMain(const std::function<bool(BlockId)>& evictable) {
  // Each pass over M decrements every evictable counter it passes; counters are <= 3, so at most four
  // passes reach a block with counter 0 if any block is evictable.
  for (int pass = 0; pass < 5; ++pass) {
    const int64_t n = lists_.Size(kMain);
    int32_t s = lists_.Back(kMain);
    for (int64_t i = 0; i < n && s != kNoSlot; ++i) {
      const int32_t prev = lists_.Prev(s);
      if (evictable(lists_.Block(s))) {
        if (lists_.Mark(s) == 0) return lists_.Block(s);
        --lists_.Mark(s);
        lists_.MoveToFront(s);
      }
      s = prev != kNoSlot ? prev : lists_.Back(kMain);
    }
  }
  return absl::nullopt;
}

absl::optional<BlockId> S3FifoPolicy::ChooseVictim(VictimFilter evictable) {
  if (capacity_ == 0) capacity_ = lists_.Size(kSmall) + lists_.Size(kMain);
  absl::optional<BlockId> victim;
  if (lists_.Size(kSmall) >= SmallTarget() || lists_.Size(kMain) == 0) victim = EvictFromSmall(evictable);
  if (!victim.has_value()) victim = EvictFromMain(evictable);
  if (!victim.has_value()) victim = EvictFromSmall(evictable);
  if (victim.has_value()) {
    victim_ = *victim;
    has_victim_ = true;
  }
  return victim;
}

bool S3FifoPolicy::IsResident(BlockId block) const {
  const int32_t s = lists_.Find(block);
  return s != kNoSlot && lists_.ListOf(s) != kGhost;
}

KVSIM_REGISTER_EVICTION_POLICY("s3fifo", S3FifoPolicy);

}  // namespace kvsim
