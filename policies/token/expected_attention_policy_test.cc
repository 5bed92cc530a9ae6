#include "policies/token/expected_attention_policy.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "policies/token/rope.h"
#include "policies/token/testing/token_policy_testing.h"

namespace kvsim {
namespace {

TEST(ExpectedAttentionPolicyTest, ScoresFollowTheExpectedQuery) {
  // d = 4, base 1e12: pair (0, 2) turns 1 rad per position (averages out over the future), pair (1, 3)
  // turns 1e-6 rad (stays put). Every prompt query is, before RoPE, (0, 1, 0, 0): mu = (0, 1, 0, 0),
  // covariance 0, so z_i = k_i[1] / sqrt(4). Keys: k_5[1] = 10, k_6[1] = 5, the rest 0; values (1, 0, 0, 0).
  TestHead head;
  head.group_size = 1;
  head.head_dim = 4;
  head.prompt_len = 8;
  head.seq_len = 9;
  head.query_start = 4;
  head.keys.assign(9 * 4, 0.0f);
  head.values.assign(9 * 4, 0.0f);
  for (int i = 0; i < 9; ++i) head.values[i * 4] = 1.0f;
  head.keys[5 * 4 + 1] = 10;
  head.keys[6 * 4 + 1] = 5;
  RopeConfig rope;
  rope.base = 1e12;
  for (int64_t t = 4; t < 9; ++t) {
    float q[4] = {0, 1, 0, 0};
    ApplyRope(rope, t, false, q, 4);
    head.queries.insert(head.queries.end(), q, q + 4);
  }
  HeadContext context = head.context();
  context.rope = rope;
  ExpectedAttentionPolicy policy({});
  std::vector<double> s = policy.ScorePrompt({context}, 0);
  // softmax(z) with z = (0, 0, 0, 0, 0, 5, 2.5, 0) over 8 tokens; score = (softmax + 0.01) * ||v|| (= 1).
  const double total = 6 + std::exp(5.0) + std::exp(2.5);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(s[i], std::numeric_limits<double>::infinity());  // sinks
  EXPECT_NEAR(s[4], 1 / total + 0.01, 1e-5);
  EXPECT_NEAR(s[5], std::exp(5.0) / total + 0.01, 1e-5);
  EXPECT_NEAR(s[6], std::exp(2.5) / total + 0.01, 1e-5);
  EXPECT_NEAR(s[7], 1 / total + 0.01, 1e-5);
}

}  // namespace
}  // namespace kvsim
