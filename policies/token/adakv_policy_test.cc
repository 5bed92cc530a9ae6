#include "policies/token/adakv_policy.h"

#include "gtest/gtest.h"
#include "policies/token/internal/adakv_budgets.h"
#include "policies/token/testing/token_policy_testing.h"

namespace kvsim {
namespace {

TEST(AdaKvBudgetsTest, SafeguardThenGlobalTopScores) {
  // B = 5, safeguard floor(0.2 * 5) = 1 per head; the other 2 x 4 = 8 slots go to the best remaining
  // scores of both heads: head 0's 8, 7, 1, 0.5, 0.2 and head 1's 0.1, 0.05, 0.01 -> budgets 1+5, 1+3.
  const std::vector<std::vector<double>> scores = {{9, 8, 7, 1, 0.5, 0.2}, {3, 0.1, 0.05, 0.01, 0, 0}};
  EXPECT_EQ(AdaKvBudgets(scores, 5, 0.2), (std::vector<int64_t>{6, 4}));
  // B = 2, safeguard 0: the 4 slots among 8 equal scores go to the lower head first.
  EXPECT_EQ(AdaKvBudgets({{1, 1, 1, 1}, {1, 1, 1, 1}}, 2, 0.2), (std::vector<int64_t>{4, 0}));
  // A budget beyond the prompt (4 tokens) keeps all of it and the rest for decode tokens: 10 each.
  EXPECT_EQ(AdaKvBudgets({{1, 2, 3, 4}, {4, 3, 2, 1}}, 10, 0.2), (std::vector<int64_t>{10, 10}));
}

TEST(AdaKvPolicyTest, WrapsScorePoliciesOnly) {
  auto policy = CreateTokenPolicy("adakv+knorm");
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ((*policy)->Name(), "adakv+knorm");
  EXPECT_EQ(CreateTokenPolicy("adakv+h2o").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateTokenPolicy("adakv").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(AdaKvPolicyTest, MovesBudgetToTheHeadWithSmallerNorms) {
  // Two heads, prompt 6, one decode step, B = 3 (safeguard floor(0.6) = 0): knorm scores -||k||. Head 0's
  // keys all have norm sqrt(7); head 1's too for token 0, the others 10 sqrt(7). The 2 x 3 slots go to the
  // six best scores: seven tie at -sqrt(7), and ties go to the lower head: budgets (6, 0).
  std::vector<std::vector<double>> rows(1, std::vector<double>(7, 0.0));
  TestHead a = TestHead::FromLogits(6, 6, {rows});
  TestHead b = TestHead::FromLogits(6, 6, {rows});
  b.kv_head = 1;
  for (int i = 1; i < 6; ++i) {
    for (int c = 0; c < b.head_dim; ++c) b.keys[i * b.head_dim + c] *= 10;
  }
  auto policy = CreateTokenPolicy("adakv+knorm");
  auto kept = RunPolicy(**policy, {&a, &b}, 3);
  // Head 0 keeps 5 prompt tokens plus the decode token; head 1 (budget 0, at least the current token)
  // reads only the new token.
  EXPECT_EQ(kept[0][0][0], (std::vector<int32_t>{0, 1, 2, 3, 4, 6}));
  EXPECT_EQ(kept[0][1][0], (std::vector<int32_t>{6}));
}

}  // namespace
}  // namespace kvsim
