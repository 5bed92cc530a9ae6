#include "policies/token/token_policy_util.h"

#include <cmath>

#include "gtest/gtest.h"
#include "policies/token/testing/token_policy_testing.h"

namespace kvsim {
namespace {

TEST(TopKIndicesTest, OrdersByScoreThenPosition) {
  const std::vector<double> scores = {0.5, 2.0, 0.5, 3.0, 2.0};
  EXPECT_EQ(TopKIndices(scores, 3), (std::vector<int32_t>{3, 1, 4}));
  EXPECT_EQ(TopKIndices(scores, 4), (std::vector<int32_t>{3, 1, 4, 0}));
  EXPECT_EQ(TopKIndices(scores, 9).size(), 5u);
  EXPECT_TRUE(TopKIndices(scores, 0).empty());
  EXPECT_EQ(RankIndices(scores), (std::vector<int32_t>{3, 1, 4, 0, 2}));
}

TEST(PromptWindowAttentionTest, MatchesDirectSoftmax) {
  // Prompt of 4, queries stored from position 2; member 0 at position 2 has logits (ln 2, 0, ln 5):
  // softmax = (2, 1, 5) / 8 and 0 for position 3 (causal).
  TestHead head = TestHead::FromLogits(4, 2, {{{std::log(2.0), 0.0, std::log(5.0), 9.0},
                                               {0.0, 0.0, 0.0, 0.0}}});
  RowMatrixXf a = PromptWindowAttention(head.context(), 8);
  ASSERT_EQ(a.rows(), 2);
  ASSERT_EQ(a.cols(), 4);
  EXPECT_NEAR(a(0, 0), 2.0 / 8, 1e-6);
  EXPECT_NEAR(a(0, 1), 1.0 / 8, 1e-6);
  EXPECT_NEAR(a(0, 2), 5.0 / 8, 1e-6);
  EXPECT_EQ(a(0, 3), 0.0f);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(a(1, i), 0.25, 1e-6);
  EXPECT_EQ(PromptWindowAttention(head.context(), 1).rows(), 1);
}

}  // namespace
}  // namespace kvsim
