#include "policies/ttl_pin_policy.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "util/check.h"

namespace kvsim {
namespace {

constexpr int64_t kDefaultRestoreNs = 1'000'000;       // 1 ms
constexpr int64_t kDefaultMaxTtlNs = 600'000'000'000;  // 600 s

}  // namespace

TtlPinPolicy::TtlPinPolicy(std::unique_ptr<EvictionPolicy> inner, const proto::TtlPinParams& params)
    : ForwardingPolicy(std::move(inner)), params_(params) {
  KVSIM_CHECK(ValidateTtlPinParams(params).ok());
  if (params_.default_restore_ns() == 0) params_.set_default_restore_ns(kDefaultRestoreNs);
  if (params_.max_ttl_ns() == 0) params_.set_max_ttl_ns(kDefaultMaxTtlNs);
  name_ = absl::StrCat(this->inner().Name(), "+ttl");
}

absl::Status TtlPinPolicy::ValidateTtlPinParams(const proto::TtlPinParams& params) {
  if (params.default_restore_ns() < 0) {
    return absl::InvalidArgumentError("eviction.ttl_pin.default_restore_ns must be >= 0 (ns)");
  }
  if (params.queueing_delay_ns() < 0) {
    return absl::InvalidArgumentError("eviction.ttl_pin.queueing_delay_ns must be >= 0 (ns)");
  }
  if (!(params.queueing_weight() >= 0)) {
    return absl::InvalidArgumentError("eviction.ttl_pin.queueing_weight must be >= 0");
  }
  if (params.max_ttl_ns() < 0) {
    return absl::InvalidArgumentError("eviction.ttl_pin.max_ttl_ns must be >= 0 (ns; 0 = 600 s)");
  }
  return absl::OkStatus();
}

int64_t TtlPinPolicy::ChooseTtl(const std::vector<int64_t>& sorted, double benefit_ns, int64_t max_ttl_ns) {
  const double n = static_cast<double>(sorted.size());
  int64_t best_tau = 0;
  double best_value = 0;  // tau = 0: P(D <= 0) x benefit; durations are > 0 in practice
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (i + 1 < sorted.size() && sorted[i + 1] == sorted[i]) continue;  // CDF at the last equal value
    const int64_t tau = std::min(sorted[i], max_ttl_ns);
    const double value = (i + 1) / n * benefit_ns - static_cast<double>(tau);
    if (value > best_value) {
      best_value = value;
      best_tau = tau;
    }
  }
  return best_tau;
}

void TtlPinPolicy::InsertSorted(std::vector<int64_t>* sorted, int64_t value) {
  sorted->insert(std::upper_bound(sorted->begin(), sorted->end(), value), value);
}

void TtlPinPolicy::Track(BlockId block, const AccessInfo& info) {
  now_ns_ = std::max(now_ns_, info.time_ns);
  if (info.session_id < 0) return;
  auto pin = pins_.find(block);
  if (pin != pins_.end() && pin->second.session_id == info.session_id) pins_.erase(pin);
  request_blocks_[info.request_id].push_back({block, info.restore_ns});
}

void TtlPinPolicy::OnInsert(BlockId block, const AccessInfo& info) {
  resident_.insert(block);
  Track(block, info);
  inner().OnInsert(block, info);
}

void TtlPinPolicy::OnAccess(BlockId block, const AccessInfo& info) {
  Track(block, info);
  inner().OnAccess(block, info);
}

void TtlPinPolicy::OnRemove(BlockId block) {
  resident_.erase(block);
  pins_.erase(block);
  inner().OnRemove(block);
}

void TtlPinPolicy::FoldReturnedDurations() {
  while (!pending_.empty() && pending_.top().available_ns <= now_ns_) {
    const PendingDuration& d = pending_.top();
    InsertSorted(&durations_by_tool_[d.tool], d.duration_ns);
    InsertSorted(&all_durations_, d.duration_ns);
    pending_.pop();
  }
}

void TtlPinPolicy::OnRequestEnd(const RequestEndInfo& end) {
  inner().OnRequestEnd(end);
  now_ns_ = std::max(now_ns_, end.time_ns);
  FoldReturnedDurations();
  auto blocks = request_blocks_.find(end.request_id);
  if (end.ends_in_tool_call && end.session_id >= 0 && blocks != request_blocks_.end()) {
    double reload_ns = 0;
    for (const auto& [block, restore_ns] : blocks->second) {
      reload_ns += restore_ns > 0 ? restore_ns : params_.default_restore_ns();
    }
    auto tool = durations_by_tool_.find(end.tool_name);
    const std::vector<int64_t>& history =
        tool != durations_by_tool_.end() && !tool->second.empty() ? tool->second : all_durations_;
    const double benefit_ns = params_.queueing_delay_ns() * params_.queueing_weight() + reload_ns;
    const int64_t tau = ChooseTtl(history, benefit_ns, params_.max_ttl_ns());
    if (tau > 0) {
      for (const auto& [block, restore_ns] : blocks->second) {
        if (resident_.contains(block)) pins_[block] = Pin{end.time_ns + tau, end.session_id};
      }
    }
  }
  if (end.ends_in_tool_call && end.tool_duration_ns >= 0) {
    pending_.push({end.time_ns + end.tool_duration_ns, pending_seq_++, end.tool_name, end.tool_duration_ns});
  }
  if (blocks != request_blocks_.end()) request_blocks_.erase(blocks);
}

bool TtlPinPolicy::IsPinned(BlockId block) const {
  auto it = pins_.find(block);
  return it != pins_.end() && it->second.until_ns > now_ns_;
}

absl::optional<BlockId> TtlPinPolicy::ChooseVictim(VictimFilter evictable) {
  if (!pins_.empty()) {
    absl::optional<BlockId> unpinned = inner().TrySelectVictim([&](BlockId b) { return !IsPinned(b) && evictable(b); });
    if (unpinned.has_value()) return unpinned;
  }
  return inner().TrySelectVictim(evictable);
}

}  // namespace kvsim
