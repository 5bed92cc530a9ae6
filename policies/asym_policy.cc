#include "policies/asym_policy.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "util/check.h"

namespace kvsim {

absl::Status AsymPolicy::Configure(const proto::EvictionPolicyConfig& config) {
  if (config.params_case() == proto::EvictionPolicyConfig::PARAMS_NOT_SET) return absl::OkStatus();
  if (config.params_case() != proto::EvictionPolicyConfig::kAsym) return EvictionPolicy::Configure(config);
  const double h = config.asym().half_life_accesses();
  if (h != 0 && (!(h > 0) || !std::isfinite(h))) {
    return absl::InvalidArgumentError(absl::StrCat("eviction.asym.half_life_accesses must be > 0, got ", h));
  }
  half_life_ = h;
  return absl::OkStatus();
}

double AsymPolicy::HalfLife() const {
  if (half_life_ > 0) return half_life_;
  return capacity_ > 0 ? static_cast<double>(capacity_) : 1024.0;
}

void AsymPolicy::Touch(BlockId block, const AccessInfo& info, bool insert) {
  auto [it, inserted] = entries_.try_emplace(block, Entry{0, 0});
  KVSIM_CHECK(inserted == insert) << "asym: " << (insert ? "insert of resident" : "access to non-resident") << " block "
                                  << block;
  Entry& e = it->second;
  if (!insert) order_.erase({e.key, e.last_use, block});
  e.last_use = uses_++;
  const double cost_log2 = info.restore_ns > 0 ? std::log2(static_cast<double>(info.restore_ns)) : 0.0;
  e.key = static_cast<double>(e.last_use) + HalfLife() * cost_log2;
  order_.insert({e.key, e.last_use, block});
}

void AsymPolicy::OnInsert(BlockId block, const AccessInfo& info) { Touch(block, info, true); }
void AsymPolicy::OnAccess(BlockId block, const AccessInfo& info) { Touch(block, info, false); }

void AsymPolicy::OnRemove(BlockId block) {
  auto it = entries_.find(block);
  KVSIM_CHECK(it != entries_.end()) << "asym: removal of non-resident block " << block;
  order_.erase({it->second.key, it->second.last_use, block});
  entries_.erase(it);
}

absl::optional<BlockId> AsymPolicy::ChooseVictim(VictimFilter evictable) {
  for (const auto& [key, last_use, block] : order_) {
    if (evictable(block)) return block;
  }
  return absl::nullopt;
}

KVSIM_REGISTER_EVICTION_POLICY("asym", AsymPolicy);

}  // namespace kvsim
