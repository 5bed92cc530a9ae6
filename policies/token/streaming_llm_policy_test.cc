#include "policies/token/streaming_llm_policy.h"

#include "gtest/gtest.h"
#include "policies/token/testing/token_policy_testing.h"

namespace kvsim {
namespace {

TestHead Head() {  // prompt of 10, 2 decode steps; attention is irrelevant to this policy
  std::vector<std::vector<double>> rows(2, std::vector<double>(12, 0.0));
  return TestHead::FromLogits(10, 10, {rows});
}

TEST(StreamingLlmPolicyTest, SinksPlusRollingWindow) {
  TestHead head = Head();
  StreamingLlmPolicy policy({});
  auto kept = RunPolicy(policy, {&head}, 6);
  // B = 6: sinks 0..3 plus the last 2 tokens.
  EXPECT_EQ(kept[0][0][0], (std::vector<int32_t>{0, 1, 2, 3, 9, 10}));
  EXPECT_EQ(kept[1][0][0], (std::vector<int32_t>{0, 1, 2, 3, 10, 11}));
}

TEST(StreamingLlmPolicyTest, SmallBudgetShrinksSinks) {
  TestHead head = Head();
  StreamingLlmPolicy policy({});
  // B = 3: S = min(4, B - 1) = 2 sinks, then the current token.
  EXPECT_EQ(RunPolicy(policy, {&head}, 3)[1][0][0], (std::vector<int32_t>{0, 1, 11}));
  // B >= the sequence: everything.
  EXPECT_EQ(RunPolicy(policy, {&head}, 50)[0][0][0].size(), 11u);
}

}  // namespace
}  // namespace kvsim
