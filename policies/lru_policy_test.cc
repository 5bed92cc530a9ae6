#include "policies/lru_policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/policy_test_util.h"

namespace kvsim {
namespace {

using ::testing::ElementsAre;

TEST(LruPolicyTest, EvictsLeastRecentlyUsed) {
  LruPolicy lru;
  // Capacity 3. After 1 2 3 1 the recency order (most recent first) is 1 3 2, so 4 evicts 2;
  // then the order is 4 1 3 and 2 evicts 3; then the order is 2 4 1 and 3 evicts 1.
  PolicyRun run = DrivePolicy(&lru, 3, {1, 2, 3, 1, 4, 2, 3});
  EXPECT_EQ(run.hits, 1);  // only the second access of 1
  EXPECT_THAT(run.victims, ElementsAre(2, 3, 1));
}

TEST(LruPolicyTest, SkipsBlocksThatAreNotEvictable) {
  LruPolicy lru;
  // Capacity 2, block 1 pinned: 3 evicts 2 although 1 is older; 4 then evicts 3.
  PolicyRun run = DrivePolicy(&lru, 2, {1, 2, 3, 4}, {}, [](BlockId b) { return b != 1; });
  EXPECT_THAT(run.victims, ElementsAre(2, 3));
}

TEST(LruPolicyTest, TrySelectVictimReportsNoCandidate) {
  LruPolicy lru;
  AccessInfo info;
  lru.OnInsert(5, info);
  EXPECT_FALSE(lru.TrySelectVictim([](BlockId) { return false; }).has_value());
  EXPECT_EQ(lru.TrySelectVictim([](BlockId) { return true; }), absl::optional<BlockId>(5));
}

TEST(LruPolicyTest, IsRegistered) {
  auto policy = CreateEvictionPolicy("lru");
  ASSERT_TRUE(policy.ok());
  EXPECT_EQ((*policy)->Name(), "lru");
}

}  // namespace
}  // namespace kvsim
