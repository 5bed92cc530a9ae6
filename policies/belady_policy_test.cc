#include "policies/belady_policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/policy_test_util.h"

namespace kvsim {
namespace {

using ::testing::ElementsAre;

TEST(BeladyPolicyTest, EvictsFurthestNextUse) {
  BeladyPolicy belady;
  // Capacity 2. Accesses: 1 2 3 1 2 3 (clocks 0..5). At clock 2 (miss on 3, next use 5), resident
  // 1 (next 3) and 2 (next 4): 3's next use is furthest, so it is bypassed. Clock 3, 4: hits.
  // Clock 5: 3 misses (next never); 1 and 2 are never used again either: all tie at infinity, so 3 is
  // bypassed. Hits = 2, no victims.
  std::vector<BlockId> accesses = {1, 2, 3, 1, 2, 3};
  PolicyRun run = DrivePolicy(&belady, 2, accesses, NextUses(accesses));
  EXPECT_EQ(run.hits, 2);
  EXPECT_TRUE(run.victims.empty());
}

TEST(BeladyPolicyTest, EvictsResidentWhenIncomingIsNeededSooner) {
  BeladyPolicy belady;
  // Capacity 2. 1 2 3 3 1: at clock 2, resident 1 (next 4) and 2 (never): 3 (next 3) is admitted and
  // 2 is evicted. Clocks 3 and 4 hit.
  std::vector<BlockId> accesses = {1, 2, 3, 3, 1};
  PolicyRun run = DrivePolicy(&belady, 2, accesses, NextUses(accesses));
  EXPECT_EQ(run.hits, 2);
  EXPECT_THAT(run.victims, ElementsAre(2));
}

TEST(BeladyPolicyTest, TiesGoToTheMostRecentlyAccessedBlock) {
  BeladyPolicy belady;
  // Capacity 2. 9 1 5 5: at clock 2, 5 (next 3) is admitted; 9 (clock 0) and 1 (clock 1) are never used
  // again: the tie goes to the later access, 1, whatever the ids' order.
  std::vector<BlockId> accesses = {9, 1, 5, 5};
  PolicyRun run = DrivePolicy(&belady, 2, accesses, NextUses(accesses));
  EXPECT_THAT(run.victims, ElementsAre(1));
}

TEST(BeladyPolicyTest, SkipsBlocksThatAreNotEvictable) {
  BeladyPolicy belady;
  AccessInfo info;
  info.next_access_clock = AccessInfo::kNever;
  belady.OnInsert(1, info);
  info.next_access_clock = 10;
  belady.OnInsert(2, info);
  EXPECT_EQ(belady.SelectVictim([](BlockId) { return true; }), 1u);
  EXPECT_EQ(belady.SelectVictim([](BlockId b) { return b != 1; }), 2u);
  EXPECT_FALSE(belady.TrySelectVictim([](BlockId) { return false; }).has_value());
}

}  // namespace
}  // namespace kvsim
