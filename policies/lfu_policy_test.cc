#include "policies/lfu_policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/policy_test_util.h"

namespace kvsim {
namespace {

using ::testing::ElementsAre;

TEST(LfuPolicyTest, EvictsLeastFrequent) {
  LfuPolicy lfu;
  // Capacity 2: 1 is used twice, 2 once: 3 evicts 2; then 3 (count 1) is evicted by 2 again.
  PolicyRun run = DrivePolicy(&lfu, 2, {1, 1, 2, 3, 2});
  EXPECT_THAT(run.victims, ElementsAre(2, 3));
}

TEST(LfuPolicyTest, TiesGoToTheLeastRecentlyUsed) {
  LfuPolicy lfu;
  // 1 and 2 both used once; 1 is older: 3 evicts 1. Then 2 (count 1, older than 3) goes for 4.
  PolicyRun run = DrivePolicy(&lfu, 2, {1, 2, 3, 4});
  EXPECT_THAT(run.victims, ElementsAre(1, 2));
}

TEST(LfuPolicyTest, SkipsBlocksThatAreNotEvictable) {
  LfuPolicy lfu;
  PolicyRun run = DrivePolicy(&lfu, 2, {1, 2, 3}, {}, [](BlockId b) { return b != 1; });
  EXPECT_THAT(run.victims, ElementsAre(2));
  EXPECT_TRUE(CreateEvictionPolicy("lfu").ok());
}

}  // namespace
}  // namespace kvsim
