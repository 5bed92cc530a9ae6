#include "policies/sieve_policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/policy_test_util.h"

namespace kvsim {
namespace {

using ::testing::ElementsAre;

TEST(SievePolicyTest, HandPersistsBetweenEvictions) {
  SievePolicy sieve;
  // Capacity 3, queue newest first. 1 2 3 -> [3 2 1]; 1 hit (visited). 4: the hand starts at 1
  // (visited: cleared, stays), moves to 2: victim; the hand rests on 3. [4 3 1]. 2: hand at 3,
  // unvisited: victim; hand rests on 4. [2 4 1]. 5: hand at 4: victim. CLOCK evicts 1 here.
  PolicyRun run = DrivePolicy(&sieve, 3, {1, 2, 3, 1, 4, 2, 5});
  EXPECT_THAT(run.victims, ElementsAre(2, 3, 4));
}

TEST(SievePolicyTest, WrapsAroundAndSkipsPinned) {
  SievePolicy sieve;
  // Capacity 2: 1 2, both hit (visited). 3: the hand clears 1 and 2, wraps to 1: victim.
  PolicyRun run = DrivePolicy(&sieve, 2, {1, 2, 1, 2, 3});
  EXPECT_THAT(run.victims, ElementsAre(1));
  SievePolicy pinned;
  PolicyRun run2 = DrivePolicy(&pinned, 2, {1, 2, 3}, {}, [](BlockId b) { return b != 1; });
  EXPECT_THAT(run2.victims, ElementsAre(2));
  EXPECT_TRUE(CreateEvictionPolicy("sieve").ok());
}

}  // namespace
}  // namespace kvsim
