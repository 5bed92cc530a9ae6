#include "policies/token/rocketkv_policy.h"

#include <limits>

#include "gtest/gtest.h"
#include "policies/token/testing/token_policy_testing.h"

namespace kvsim {
namespace {

TEST(RocketKvPolicyTest, SnapKvPlusPlusSumsThenMaxPools) {
  // Prompt 8, window queries at 6 and 7 put (almost) all their mass on token 2: summed ~2.0 there.
  std::vector<double> row = {0, 0, 30, 0, 0, 0, 0, 0, 0};
  TestHead head = TestHead::FromLogits(8, 6, {{row, row, std::vector<double>(9, 0.0)}});
  std::vector<double> s = SnapKvPlusPlusScores(head.context(), 2, 3);
  // max_pool1d(kernel 3) spreads the peak to 1, 2, 3; 0, 4, 5 stay ~0; the window 6, 7 is kept.
  EXPECT_NEAR(s[1], 2.0, 1e-6);
  EXPECT_NEAR(s[2], 2.0, 1e-6);
  EXPECT_NEAR(s[3], 2.0, 1e-6);
  EXPECT_LT(s[0], 1e-6);
  EXPECT_LT(s[4], 1e-6);
  EXPECT_EQ(s[6], std::numeric_limits<double>::infinity());
}

TEST(RocketKvPolicyTest, SecondStageReadsTheBestChunks) {
  // Prompt 8, no stored prompt queries, one decode step at 8; B = 4 keeps the whole prompt in stage 1
  // (4 B >= 8). At p = 8: |C| = 9, c = 2.25, s = 2, r = round(9 * 2 / 2.25) = 8 channels. Keys are
  // 3 e_i (sqrt(9)), the query's logits are 4 on token 5 and 1 on token 2: chunk {4, 5} scores 4,
  // chunk {2, 3} scores 1; (B - 1) / s = 1 chunk plus the current token.
  std::vector<double> row(9, 0.0);
  row[5] = 4.0;
  row[2] = 1.0;
  TestHead head = TestHead::FromLogits(8, 8, {{row}});
  RocketKvPolicy policy({});
  auto kept = RunPolicy(policy, {&head}, 4);
  EXPECT_EQ(kept[0][0][0], (std::vector<int32_t>{4, 5, 8}));
  // A budget covering the cache reads everything.
  EXPECT_EQ(RunPolicy(policy, {&head}, 9)[0][0][0].size(), 9u);
}

}  // namespace
}  // namespace kvsim
