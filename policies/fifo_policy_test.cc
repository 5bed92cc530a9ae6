#include "policies/fifo_policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/policy_test_util.h"

namespace kvsim {
namespace {

using ::testing::ElementsAre;

TEST(FifoPolicyTest, EvictsInInsertionOrderIgnoringHits) {
  FifoPolicy fifo;
  // Capacity 3: 1 2 3 inserted, 1 hits (no effect), 4 evicts 1 (oldest insert), 1 evicts 2, 2 evicts 3.
  PolicyRun run = DrivePolicy(&fifo, 3, {1, 2, 3, 1, 4, 1, 2});
  EXPECT_EQ(run.hits, 1);
  EXPECT_THAT(run.victims, ElementsAre(1, 2, 3));
}

TEST(FifoPolicyTest, SkipsBlocksThatAreNotEvictable) {
  FifoPolicy fifo;
  PolicyRun run = DrivePolicy(&fifo, 2, {1, 2, 3, 4}, {}, [](BlockId b) { return b != 1; });
  EXPECT_THAT(run.victims, ElementsAre(2, 3));
}

TEST(FifoPolicyTest, IsRegistered) {
  auto policy = CreateEvictionPolicy("fifo");
  ASSERT_TRUE(policy.ok());
  EXPECT_EQ((*policy)->Name(), "fifo");
}

}  // namespace
}  // namespace kvsim
