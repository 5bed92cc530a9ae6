#include "policies/token/snapkv_policy.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "policies/token/testing/token_policy_testing.h"
#include "policies/token/token_policy_util.h"

namespace kvsim {
namespace {

// Prompt of 8 with a window of 2 stored queries (positions 6, 7). Both window queries put logit 30 on
// tokens 1 and 4, with 30 + ln 3 on token 4: a_1 = 0.25, a_4 = 0.75 (the rest is ~e^-30).
TestHead Head() {
  const double big = 30.0, big3 = 30.0 + std::log(3.0);
  std::vector<double> row = {0, big, 0, 0, big3, 0, 0, 0, 0};
  return TestHead::FromLogits(8, 6, {{row, row, std::vector<double>(9, 0.0)}});
}

TEST(SnapKvPolicyTest, ScoresArePooledWindowAttention) {
  TestHead head = Head();
  std::vector<double> s = SnapKvScores(head.context(), 2, 5);
  ASSERT_EQ(s.size(), 8u);
  // Mean over the window: m = (0, .25, 0, 0, .75, 0) over the 6 non-window tokens; avg_pool1d(5, pad 2):
  // s_0 = (m0+m1+m2)/5 = .05, s_1 = .05, s_2 = (m0..m4)/5 = .2, s_3 = (m1..m5)/5 = .2, s_4 = .15, s_5 = .15.
  const double want[6] = {0.05, 0.05, 0.2, 0.2, 0.15, 0.15};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(s[i], want[i], 1e-6) << i;
  EXPECT_EQ(s[6], std::numeric_limits<double>::infinity());  // the window is never pruned
  EXPECT_EQ(s[7], std::numeric_limits<double>::infinity());
}

TEST(SnapKvPolicyTest, KeepsWindowThenBestPooledTokens) {
  TestHead head = Head();
  // Use the policy's own 64-token window: it is clamped to the 2 stored queries.
  SnapKvPolicy policy({});
  auto kept = RunPolicy(policy, {&head}, 5);
  // p = 8: 4 prompt tokens: the window 6, 7 and the two 0.2-scored tokens 2, 3; plus 8.
  EXPECT_EQ(kept[0][0][0], (std::vector<int32_t>{2, 3, 6, 7, 8}));
}

TEST(SnapKvPolicyTest, AveragesOverTheGroup) {
  // Member 1 puts everything on token 0 instead: its pooled scores are (.2, .2, .2, 0, 0, 0); the group
  // mean is (.125, .125, .2, .1, .075, .075).
  const double big = 30.0, big3 = 30.0 + std::log(3.0);
  std::vector<double> row0 = {0, big, 0, 0, big3, 0, 0, 0, 0};
  std::vector<double> row1 = {big, 0, 0, 0, 0, 0, 0, 0, 0};
  std::vector<double> zero(9, 0.0);
  TestHead head = TestHead::FromLogits(8, 6, {{row0, row0, zero}, {row1, row1, zero}});
  std::vector<double> s = SnapKvScores(head.context(), 2, 5);
  const double want[6] = {0.125, 0.125, 0.2, 0.1, 0.075, 0.075};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(s[i], want[i], 1e-6) << i;
}

// With the shared cache, the scores are computed once per rule and parameters: a second call returns them
// even after the cached window attention is overwritten; other parameters and a reset cache recompute.
TEST(SnapKvPolicyTest, SharedCacheComputesEachRuleOnce) {
  TestHead head = Head();
  const std::vector<double> direct = SnapKvScores(head.context(), 2, 5);
  PromptAttentionCache cache;
  HeadContext context = head.context();
  context.prompt_cache = &cache;
  EXPECT_EQ(SnapKvScores(context, 2, 5), direct);
  ASSERT_EQ(cache.window, 2);
  cache.probs.setZero();  // a recomputation would now see no attention at all
  EXPECT_EQ(SnapKvScores(context, 2, 5), direct) << "the memo was not used";
  EXPECT_NE(SnapKvScores(context, 2, 3), SnapKvScores(head.context(), 2, 3)) << "another kernel recomputes";
  cache.Reset();
  EXPECT_EQ(SnapKvScores(context, 2, 5), direct);
}

}  // namespace
}  // namespace kvsim
