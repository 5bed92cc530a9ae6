#include "policies/leaf_first_policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/lru_policy.h"
#include "policies/policy_test_util.h"

namespace kvsim {
namespace {

AccessInfo Child(BlockId parent, int64_t clock) {
  AccessInfo info;
  info.clock = clock;
  info.has_parent = true;
  info.parent = parent;
  return info;
}

TEST(LeafFirstPolicyTest, EvictsOnlyLeavesInInnerOrder) {
  LeafFirstPolicy policy(std::make_unique<LruPolicy>());
  // Prompt A = blocks 1 -> 2 -> 3, prompt B = 1 -> 4. LRU order (oldest first): 1 2 3 4.
  policy.OnInsert(1, AccessInfo{});
  policy.OnInsert(2, Child(1, 1));
  policy.OnInsert(3, Child(2, 2));
  policy.OnInsert(4, Child(1, 3));
  EXPECT_EQ(policy.ResidentChildren(1), 2);
  auto all = [](BlockId) { return true; };
  // Plain LRU would evict 1; the leaves are 3 and 4, and 3 is the older.
  EXPECT_EQ(policy.SelectVictim(all), 3u);
  policy.OnRemove(3);
  // Now 2 is a leaf and the oldest leaf.
  EXPECT_EQ(policy.SelectVictim(all), 2u);
  policy.OnRemove(2);
  EXPECT_EQ(policy.ResidentChildren(1), 1);
  EXPECT_EQ(policy.SelectVictim(all), 4u);
  policy.OnRemove(4);
  EXPECT_EQ(policy.SelectVictim(all), 1u);
}

TEST(LeafFirstPolicyTest, DropsTheConstraintWhenNoLeafIsEvictable) {
  LeafFirstPolicy policy(std::make_unique<LruPolicy>());
  policy.OnInsert(1, AccessInfo{});
  policy.OnInsert(2, Child(1, 1));
  // The only leaf (2) is pinned by the cache: the inner policy picks among the evictable blocks.
  EXPECT_EQ(policy.SelectVictim([](BlockId b) { return b != 2; }), 1u);
}

TEST(LeafFirstPolicyTest, LeafLruIsRegistered) {
  auto policy = CreateEvictionPolicy("leaf_lru");
  ASSERT_TRUE(policy.ok());
  EXPECT_EQ((*policy)->Name(), "leaf_lru");
  (*policy)->OnInsert(1, AccessInfo{});
  (*policy)->OnInsert(2, Child(1, 1));
  EXPECT_EQ((*policy)->SelectVictim([](BlockId) { return true; }), 2u);
}

}  // namespace
}  // namespace kvsim
