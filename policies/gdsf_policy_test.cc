#include "policies/gdsf_policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policies/policy_test_util.h"

namespace kvsim {
namespace {

using ::testing::ElementsAre;

TEST(GdsfPolicyTest, UniformCostIsLfuWithAging) {
  GdsfPolicy gdsf;
  // Capacity 2, cost = size = 1. 1: H = 1; 1 hit: H = 2; 2: H = 1. 3: evict 2 (H 1), L = 1; 3: H = 2.
  // 4: 1 and 3 both H = 2; 1's was set first: evict 1, L = 2.
  PolicyRun run = DrivePolicy(&gdsf, 2, {1, 1, 2, 3, 4});
  EXPECT_THAT(run.victims, ElementsAre(2, 1));
  EXPECT_DOUBLE_EQ(gdsf.inflation(), 2.0);
}

TEST(GdsfPolicyTest, CostOverSize) {
  GdsfPolicy gdsf;
  auto all = [](BlockId) { return true; };
  AccessInfo info;
  info.restore_ns = 400;
  info.size_bytes = 2;
  gdsf.OnInsert(1, info);  // H = 0 + 1 x 400 / 2 = 200
  info.restore_ns = 100;
  info.size_bytes = 1;
  gdsf.OnInsert(2, info);  // H = 100
  EXPECT_EQ(gdsf.SelectVictim(all), 2u);
  gdsf.OnRemove(2);  // L = 100
  EXPECT_DOUBLE_EQ(gdsf.inflation(), 100.0);
  info.restore_ns = 50;
  gdsf.OnInsert(3, info);  // H = 100 + 50 = 150 < 200
  EXPECT_EQ(gdsf.SelectVictim(all), 3u);
  info.restore_ns = 400;
  info.size_bytes = 2;
  gdsf.OnAccess(1, info);  // H = 100 + 2 x 200 = 500
  EXPECT_EQ(gdsf.SelectVictim([](BlockId b) { return b != 3; }), 1u);
  EXPECT_TRUE(CreateEvictionPolicy("gdsf").ok());
}

}  // namespace
}  // namespace kvsim
