// A least-recently-used policy for the simulator's tests, registered as "test_lru" so the tests do not
// depend on the policy suite. Recency: insert and access move a block to the front; the victim is the
// least recent evictable block.
#include <list>

#include "absl/container/flat_hash_map.h"
#include "policies/eviction_policy.h"
#include "util/check.h"

namespace kvsim {
namespace {

class FakeLru final : public EvictionPolicy {
 public:
  absl::string_view Name() const override { return "test_lru"; }
  void OnInsert(BlockId block, const AccessInfo& info) override { Touch(block); }
  void OnAccess(BlockId block, const AccessInfo& info) override { Touch(block); }
  void OnRemove(BlockId block) override {
    auto it = where_.find(block);
    KVSIM_CHECK(it != where_.end());
    order_.erase(it->second);
    where_.erase(it);
  }

 private:
  absl::optional<BlockId> ChooseVictim(VictimFilter evictable) override {
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      if (evictable(*it)) return *it;
    }
    return absl::nullopt;
  }

  void Touch(BlockId block) {
    auto it = where_.find(block);
    if (it != where_.end()) order_.erase(it->second);
    order_.push_front(block);
    where_[block] = order_.begin();
  }
  std::list<BlockId> order_;  // most recent first
  absl::flat_hash_map<BlockId, std::list<BlockId>::iterator> where_;
};

}  // namespace

KVSIM_REGISTER_EVICTION_POLICY("test_lru", FakeLru);

}  // namespace kvsim
