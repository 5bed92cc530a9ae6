#include "policies/token/random_policy.h"

#include <algorithm>

#include "gtest/gtest.h"
#include "policies/token/testing/token_policy_testing.h"

namespace kvsim {
namespace {

TestHead Head() {
  std::vector<std::vector<double>> rows(3, std::vector<double>(43, 0.0));
  return TestHead::FromLogits(40, 40, {rows});
}

TEST(RandomPolicyTest, SeededBudgetedAndPermanent) {
  TestHead head = Head();
  RandomPolicy a({.seed = 7}), b({.seed = 7}), c({.seed = 8});
  auto ka = RunPolicy(a, {&head}, 10);
  auto kb = RunPolicy(b, {&head}, 10);
  auto kc = RunPolicy(c, {&head}, 10);
  EXPECT_EQ(ka, kb);
  EXPECT_NE(ka, kc);
  for (size_t s = 0; s < ka.size(); ++s) {
    const auto& set = ka[s][0][0];
    EXPECT_EQ(set.size(), 10u);
    // Every decode token so far is kept: 40..40+s.
    for (int32_t p = 40; p <= 40 + static_cast<int32_t>(s); ++p) {
      EXPECT_TRUE(std::binary_search(set.begin(), set.end(), p));
    }
    // Permanent: every prompt token kept now was kept at the previous step.
    if (s > 0) {
      for (int32_t i : set) {
        if (i < 40) {
          EXPECT_TRUE(std::binary_search(ka[s - 1][0][0].begin(), ka[s - 1][0][0].end(), i));
        }
      }
    }
  }
}

}  // namespace
}  // namespace kvsim
