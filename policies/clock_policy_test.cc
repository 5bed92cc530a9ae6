#include "policies/clock_policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/policy_test_util.h"

namespace kvsim {
namespace {

using ::testing::ElementsAre;

TEST(ClockPolicyTest, ReferencedBlocksGetASecondChance) {
  ClockPolicy clock;
  // Capacity 3: 1 2 3 inserted, 1 hit (bit set). 4: 1 has its bit: cleared and moved to the newest end;
  // 2 has none: victim. FIFO would evict 1.
  PolicyRun run = DrivePolicy(&clock, 3, {1, 2, 3, 1, 4});
  EXPECT_THAT(run.victims, ElementsAre(2));
}

TEST(ClockPolicyTest, DiffersFromSieveOnReinsertedBlocks) {
  ClockPolicy clock;
  // Capacity 3: 1 2 3 1 4 -> victim 2, queue (newest first) 4 1 3, all bits clear. 2 evicts 3;
  // queue 2 4 1. 5 evicts 1 (oldest, bit clear). SIEVE evicts 4 here (its hand stays put).
  PolicyRun run = DrivePolicy(&clock, 3, {1, 2, 3, 1, 4, 2, 5});
  EXPECT_THAT(run.victims, ElementsAre(2, 3, 1));
}

TEST(ClockPolicyTest, SingleReferencedBlockIsStillFound) {
  ClockPolicy clock;
  PolicyRun run = DrivePolicy(&clock, 1, {1, 1, 2});
  EXPECT_THAT(run.victims, ElementsAre(1));
}

TEST(ClockPolicyTest, NoEvictableBlock) {
  ClockPolicy clock;
  clock.OnInsert(1, AccessInfo{});
  EXPECT_FALSE(clock.TrySelectVictim([](BlockId) { return false; }).has_value());
  EXPECT_TRUE(CreateEvictionPolicy("clock").ok());
}

}  // namespace
}  // namespace kvsim
