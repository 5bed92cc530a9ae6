#include "policies/gdsf_policy.h"

#include "util/check.h"

namespace kvsim {

void GdsfPolicy::SetPriority(BlockId block, Entry* e, const AccessInfo& info) {
  const double cost = info.restore_ns > 0 ? static_cast<double>(info.restore_ns) : 1.0;
  const double size = info.size_bytes > 0 ? static_cast<double>(info.size_bytes) : 1.0;
  e->priority = inflation_ + static_cast<double>(e->frequency) * cost / size;
  e->seq = seq_++;
  order_.insert({e->priority, e->seq, block});
}

void GdsfPolicy::OnInsert(BlockId block, const AccessInfo& info) {
  auto [it, inserted] = entries_.try_emplace(block, Entry{1, 0, 0});
  KVSIM_CHECK(inserted) << "gdsf: block " << block << " inserted twice";
  SetPriority(block, &it->second, info);
}

void GdsfPolicy::OnAccess(BlockId block, const AccessInfo& info) {
  auto it = entries_.find(block);
  KVSIM_CHECK(it != entries_.end()) << "gdsf: access to non-resident block " << block;
  order_.erase({it->second.priority, it->second.seq, block});
  ++it->second.frequency;
  SetPriority(block, &it->second, info);
}

void GdsfPolicy::OnRemove(BlockId block) {
  auto it = entries_.find(block);
  KVSIM_CHECK(it != entries_.end()) << "gdsf: removal of non-resident block " << block;
  if (has_victim_ && victim_ == block) {
    inflation_ = it->second.priority;
    has_victim_ = false;
  }
  order_.erase({it->second.priority, it->second.seq, block});
  entries_.erase(it);
}

absl::optional<BlockId> GdsfPolicy::ChooseVictim(VictimFilter evictable) {
  for (const auto& [priority, seq, block] : order_) {
    if (evictable(block)) {
      victim_ = block;
      has_victim_ = true;
      return block;
    }
  }
  return absl::nullopt;
}

KVSIM_REGISTER_EVICTION_POLICY("gdsf", GdsfPolicy);

}  // namespace kvsim
