#include "policies/token/oracle_evict_policy.h"

#include <cmath>

#include "gtest/gtest.h"
#include "policies/token/testing/token_policy_testing.h"

namespace kvsim {
namespace {

TEST(OracleEvictPolicyTest, ScoresByFutureAttentionMass) {
  const double l2 = std::log(2.0), l3 = std::log(3.0);
  // Prompt 0..2, decode at 3 and 4. t = 3: (ln 2, 0, 0, 0) -> (2, 1, 1, 1) / 5;
  // t = 4: (0, ln 3, 0, 0, 0) -> (1, 3, 1, 1, 1) / 7. Future mass: 0: 0.543, 1: 0.629, 2: 0.343.
  TestHead head = TestHead::FromLogits(3, 3, {{{l2, 0, 0, 0}, {0, l3, 0, 0, 0}}});
  OracleEvictPolicy policy({});
  std::vector<double> s = policy.ScorePrompt({head.context()}, 0);
  EXPECT_NEAR(s[0], 2.0 / 5 + 1.0 / 7, 1e-6);
  EXPECT_NEAR(s[1], 1.0 / 5 + 3.0 / 7, 1e-6);
  EXPECT_NEAR(s[2], 1.0 / 5 + 1.0 / 7, 1e-6);
  auto kept = RunPolicy(policy, {&head}, 3);
  EXPECT_EQ(kept[0][0][0], (std::vector<int32_t>{0, 1, 3}));
  EXPECT_EQ(kept[1][0][0], (std::vector<int32_t>{1, 3, 4}));
  kept = RunPolicy(policy, {&head}, 2);
  EXPECT_EQ(kept[0][0][0], (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(kept[1][0][0], (std::vector<int32_t>{3, 4}));
}

}  // namespace
}  // namespace kvsim
