#include "policies/belady_policy.h"

#include <algorithm>

#include "util/check.h"

namespace kvsim {

void BeladyPolicy::SetBlockAt(int64_t index, BlockId block) {
  const size_t i = static_cast<size_t>(index);
  if (!dense_.empty()) {
    if (i >= block_at_dense_.size()) block_at_dense_.resize(std::max(i + 1, 2 * block_at_dense_.size()));
    block_at_dense_[i] = static_cast<uint32_t>(block);
  } else {
    if (i >= block_at_hash_.size()) block_at_hash_.resize(std::max(i + 1, 2 * block_at_hash_.size()));
    block_at_hash_[i] = block;
  }
}

void BeladyPolicy::EraseKey(int64_t key) {
  if (key >= 0) {
    next_uses_.Erase(key);
  } else {
    never_again_.Erase(-2 - key);
  }
}

void BeladyPolicy::SetNextUse(BlockId block, const AccessInfo& info) {
  KVSIM_CHECK(info.next_access_clock >= 0)
      << "belady: block " << block << " has no next_access_clock (needs the cache-replay pre-pass)";
  KVSIM_CHECK(info.clock >= 0) << "belady: block " << block << " accessed at negative clock " << info.clock;
  int64_t* key;
  if (!dense_.empty()) {
    key = &dense_[block];
  } else {
    key = &keys_.try_emplace(block, kAbsent).first->second;
  }
  if (*key != kAbsent) EraseKey(*key);
  // Each index is one access, so of one block: the other tree must not hold it (this block's own old
  // key, the only one that could, is out).
  if (info.next_access_clock == AccessInfo::kNever) {
    KVSIM_CHECK(!next_uses_.Contains(info.clock))
        << "belady: clock " << info.clock << " of block " << block << " is another resident block's next use";
    KVSIM_CHECK(never_again_.Insert(info.clock)) << "belady: two never-again blocks at clock " << info.clock;
    *key = NeverKey(info.clock);
    SetBlockAt(info.clock, block);
  } else {
    const int64_t next = info.next_access_clock;
    KVSIM_CHECK(!never_again_.Contains(next))
        << "belady: next use " << next << " of block " << block << " is another resident block's clock";
    KVSIM_CHECK(next_uses_.Insert(next)) << "belady: two resident blocks with next use " << next;
    *key = next;
    SetBlockAt(next, block);
  }
}

void BeladyPolicy::OnInsert(BlockId block, const AccessInfo& info) { SetNextUse(block, info); }
void BeladyPolicy::OnAccess(BlockId block, const AccessInfo& info) { SetNextUse(block, info); }

void BeladyPolicy::OnRemove(BlockId block) {
  if (!dense_.empty()) {
    int64_t& key = dense_[block];
    KVSIM_CHECK(key != kAbsent) << "belady: removal of non-resident block " << block;
    EraseKey(key);
    key = kAbsent;
    return;
  }
  auto it = keys_.find(block);
  KVSIM_CHECK(it != keys_.end()) << "belady: removal of non-resident block " << block;
  EraseKey(it->second);
  keys_.erase(it);
}

absl::optional<BlockId> BeladyPolicy::ChooseVictim(VictimFilter evictable) {
  // Never used again first, the latest clock first (the tie-break); then the furthest next use.
  for (int64_t clock = never_again_.Max(); clock >= 0; clock = never_again_.Prev(clock)) {
    if (evictable(BlockAt(clock))) return BlockAt(clock);
  }
  for (int64_t next = next_uses_.Max(); next >= 0; next = next_uses_.Prev(next)) {
    if (evictable(BlockAt(next))) return BlockAt(next);
  }
  return absl::nullopt;
}

bool BeladyPolicy::ShouldAdmit(BlockId block, const AccessInfo& info) {
  KVSIM_CHECK(info.next_access_clock >= 0) << "belady: block " << block << " has no next_access_clock";
  if (!never_again_.empty()) return info.next_access_clock != AccessInfo::kNever;
  if (next_uses_.empty()) return true;
  return info.next_access_clock < next_uses_.Max();
}

KVSIM_REGISTER_EVICTION_POLICY("belady", BeladyPolicy);

}  // namespace kvsim
