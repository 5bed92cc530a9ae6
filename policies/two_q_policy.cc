#include "policies/two_q_policy.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace kvsim {

absl::Status TwoQPolicy::Configure(const proto::EvictionPolicyConfig& config) {
  if (config.params_case() == proto::EvictionPolicyConfig::PARAMS_NOT_SET) return absl::OkStatus();
  if (config.params_case() != proto::EvictionPolicyConfig::kTwoQ) return EvictionPolicy::Configure(config);
  const proto::TwoQParams& p = config.two_q();
  if (p.kin_ratio() != 0) {
    if (!(p.kin_ratio() > 0 && p.kin_ratio() < 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("eviction.two_q.kin_ratio must be in (0, 1), got ", p.kin_ratio()));
    }
    kin_ratio_ = p.kin_ratio();
  }
  if (p.kout_ratio() != 0) {
    if (!(p.kout_ratio() > 0) || !std::isfinite(p.kout_ratio())) {
      return absl::InvalidArgumentError(absl::StrCat("eviction.two_q.kout_ratio must be > 0, got ", p.kout_ratio()));
    }
    kout_ratio_ = p.kout_ratio();
  }
  return absl::OkStatus();
}

void TwoQPolicy::OnInsert(BlockId block, const AccessInfo& info) {
  const int32_t s = lists_.Find(block);
  if (s == kNoSlot) {
    lists_.PushFront(kA1in, block);
    return;
  }
  KVSIM_CHECK(lists_.ListOf(s) == kA1out) << "2q: block " << block << " inserted while resident";
  lists_.MoveToFront(s, kAm);
}

void TwoQPolicy::OnAccess(BlockId block, const AccessInfo& info) {
  const int32_t s = lists_.Find(block);
  KVSIM_CHECK(s != kNoSlot && lists_.ListOf(s) != kA1out) << "2q: access to non-resident " << block;
  if (lists_.ListOf(s) == kAm) lists_.MoveToFront(s);
}

void TwoQPolicy::OnRemove(BlockId block) {
  const int32_t s = lists_.Find(block);
  KVSIM_CHECK(s != kNoSlot && lists_.ListOf(s) != kA1out) << "2q: removal of non-resident " << block;
  const bool remember = has_victim_ && victim_ == block && lists_.ListOf(s) == kA1in;
  if (has_victim_ && victim_ == block) has_victim_ = false;
  if (!remember) {
    lists_.Erase(s);
    return;
  }
  lists_.MoveToFront(s, kA1out);
  const int64_t kout = std::max<int64_t>(1, std::llround(kout_ratio_ * capacity_));
  while (lists_.Size(kA1out) > kout) lists_.Erase(lists_.Back(kA1out));
}

absl::optional<BlockId> TwoQPolicy::ChooseVictim(VictimFilter evictable) {
  if (capacity_ == 0) capacity_ = lists_.Size(kAm) + lists_.Size(kA1in);
  const int64_t kin = std::max<int64_t>(1, std::llround(kin_ratio_ * capacity_));
  const bool from_a1in = lists_.Size(kA1in) > kin || lists_.Size(kAm) == 0;
  int32_t s = lists_.LastMatching(from_a1in ? kA1in : kAm, evictable);
  if (s == kNoSlot) s = lists_.LastMatching(from_a1in ? kAm : kA1in, evictable);
  if (s == kNoSlot) return absl::nullopt;
  victim_ = lists_.Block(s);
  has_victim_ = true;
  return victim_;
}

bool TwoQPolicy::IsResident(BlockId block) const {
  const int32_t s = lists_.Find(block);
  return s != kNoSlot && lists_.ListOf(s) != kA1out;
}

KVSIM_REGISTER_EVICTION_POLICY("2q", TwoQPolicy);

}  // namespace kvsim
