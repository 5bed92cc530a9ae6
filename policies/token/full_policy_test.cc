#include "policies/token/full_policy.h"

#include "gtest/gtest.h"
#include "policies/token/testing/token_policy_testing.h"

namespace kvsim {
namespace {

TEST(FullPolicyTest, KeepsEverythingWhateverTheBudget) {
  TestHead head = TestHead::FromLogits(3, 3, {{{0, 0, 0, 0}, {0, 0, 0, 0, 0}}});
  FullPolicy policy({});
  auto kept = RunPolicy(policy, {&head}, 1);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0][0][0], (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(kept[1][0][0], (std::vector<int32_t>{0, 1, 2, 3, 4}));
}

}  // namespace
}  // namespace kvsim
