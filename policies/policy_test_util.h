// File: policies/policy_test_util.h
//
// Test helper: drives an EvictionPolicy the way cache replay does (hit if resident, else OnMiss, evict
// while full or EvictionPending, then insert), over a plain list of block ids, and reports hits and victims.
//
// Example:
//   LruPolicy lru;
//   PolicyRun run = DrivePolicy(&lru, /*capacity_blocks=*/2, {1, 2, 1, 3});  // run.victims == {2}
#ifndef KVSIM_POLICIES_POLICY_TEST_UTIL_H_
#define KVSIM_POLICIES_POLICY_TEST_UTIL_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "policies/eviction_policy.h"

namespace kvsim {

struct PolicyRun {
  int64_t hits = 0;
  std::vector<BlockId> victims;
  std::vector<bool> hit;  // per access
};

// Each access has clock = its index; `next_use` (optional) gives next_access_clock per access.
inline PolicyRun DrivePolicy(EvictionPolicy* policy, int64_t capacity_blocks, const std::vector<BlockId>& accesses,
                             const std::vector<int64_t>& next_use = {},
                             const std::function<bool(BlockId)>& evictable = nullptr) {
  policy->SetCapacity(capacity_blocks);
  absl::flat_hash_set<BlockId> resident;
  PolicyRun run;
  std::function<bool(BlockId)> all = evictable ? evictable : [](BlockId) { return true; };
  for (size_t i = 0; i < accesses.size(); ++i) {
    AccessInfo info;
    info.clock = static_cast<int64_t>(i);
    info.next_access_clock = next_use.empty() ? -1 : next_use[i];
    const BlockId b = accesses[i];
    if (resident.contains(b)) {
      ++run.hits;
      run.hit.push_back(true);
      policy->OnAccess(b, info);
      continue;
    }
    run.hit.push_back(false);
    if (static_cast<int64_t>(resident.size()) >= capacity_blocks && !policy->ShouldAdmit(b, info)) continue;
    policy->OnMiss(b, info);
    while (static_cast<int64_t>(resident.size()) >= capacity_blocks || policy->EvictionPending()) {
      BlockId victim = policy->SelectVictim(all);
      resident.erase(victim);
      policy->OnRemove(victim);
      run.victims.push_back(victim);
    }
    resident.insert(b);
    policy->OnInsert(b, info);
  }
  return run;
}

// Next-use clocks of `accesses` by a plain backward scan (kNever if none).
inline std::vector<int64_t> NextUses(const std::vector<BlockId>& accesses) {
  std::vector<int64_t> next(accesses.size(), AccessInfo::kNever);
  for (size_t i = 0; i < accesses.size(); ++i) {
    for (size_t j = i + 1; j < accesses.size(); ++j) {
      if (accesses[j] == accesses[i]) {
        next[i] = static_cast<int64_t>(j);
        break;
      }
    }
  }
  return next;
}

}  // namespace kvsim

#endif  // KVSIM_POLICIES_POLICY_TEST_UTIL_H_
