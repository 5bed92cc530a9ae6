#include "policies/token/knorm_policy.h"

#include "gtest/gtest.h"
#include "policies/token/testing/token_policy_testing.h"

namespace kvsim {
namespace {

TEST(KnormPolicyTest, KeepsTheSmallestKeyNorms) {
  std::vector<std::vector<double>> rows(2, std::vector<double>(8, 0.0));
  TestHead head = TestHead::FromLogits(6, 6, {rows});
  // Key i is sqrt(d) e_i scaled by f_i: norms proportional to 5, 1, 4, 2, 3, 6 for the prompt.
  const float factors[6] = {5, 1, 4, 2, 3, 6};
  for (int i = 0; i < 6; ++i) {
    for (int c = 0; c < head.head_dim; ++c) head.keys[i * head.head_dim + c] *= factors[i];
  }
  KnormPolicy policy({});
  auto kept = RunPolicy(policy, {&head}, 3);
  // p = 6: one decode token, so the 2 prompt tokens with the smallest norms (1 and 3) plus 6.
  EXPECT_EQ(kept[0][0][0], (std::vector<int32_t>{1, 3, 6}));
  // p = 7: two decode tokens, one prompt token left: 1.
  EXPECT_EQ(kept[1][0][0], (std::vector<int32_t>{1, 6, 7}));
}

}  // namespace
}  // namespace kvsim
