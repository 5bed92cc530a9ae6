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

// IsResident() remembers its lookup for the next OnAccess/OnRemove; a removal frees the slot, which the
// next insert reuses, so the remembered lookup must not survive it.
TEST(LruPolicyTest, RememberedLookupDoesNotOutliveItsSlot) {
  LruPolicy lru;
  AccessInfo info;
  lru.OnInsert(1, info);
  lru.OnInsert(2, info);
  ASSERT_TRUE(lru.IsResident(1));
  lru.OnRemove(1);        // frees 1's slot
  lru.OnInsert(3, info);  // takes that slot
  EXPECT_FALSE(lru.IsResident(1));
  ASSERT_TRUE(lru.IsResident(2));
  lru.OnAccess(3, info);  // not the remembered block: its own lookup; order (most recent first) 3 2
  EXPECT_EQ(lru.SelectVictim([](BlockId) { return true; }), 2u);
  ASSERT_TRUE(lru.IsResident(2));
  lru.OnAccess(2, info);  // the remembered block: order 2 3
  EXPECT_EQ(lru.SelectVictim([](BlockId) { return true; }), 3u);
}

// LikelyVictim names the least recently used block (none while empty), as SelectVictim then chooses.
TEST(LruPolicyTest, LikelyVictimIsTheLeastRecentlyUsed) {
  LruPolicy lru;
  EXPECT_FALSE(lru.LikelyVictim().has_value());
  AccessInfo info;
  lru.OnInsert(1, info);
  lru.OnInsert(2, info);
  lru.OnInsert(3, info);
  lru.OnAccess(1, info);  // recency 1 3 2
  ASSERT_TRUE(lru.LikelyVictim().has_value());
  EXPECT_EQ(*lru.LikelyVictim(), 2u);
  EXPECT_EQ(lru.SelectVictim([](BlockId) { return true; }), 2u);
  lru.OnRemove(2);
  EXPECT_EQ(*lru.LikelyVictim(), 3u);
}

TEST(LruPolicyTest, IsRegistered) {
  auto policy = CreateEvictionPolicy("lru");
  ASSERT_TRUE(policy.ok());
  EXPECT_EQ((*policy)->Name(), "lru");
}

}  // namespace
}  // namespace kvsim
