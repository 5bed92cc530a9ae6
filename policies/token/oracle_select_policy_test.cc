#include "policies/token/oracle_select_policy.h"

#include <cmath>

#include "gtest/gtest.h"
#include "policies/token/testing/token_policy_testing.h"

namespace kvsim {
namespace {

TEST(OracleSelectPolicyTest, TopBPerQueryHead) {
  const double l2 = std::log(2.0), l3 = std::log(3.0), l4 = std::log(4.0);
  // t = 4: member 0 logits (0, ln 3, ln 2, 0, ln 4) -> the two largest are 4 and 1;
  //        member 1 (ln 4, 0, 0, ln 3, 0) -> 0 and 3.
  TestHead head = TestHead::FromLogits(4, 4, {{{0, l3, l2, 0, l4}}, {{l4, 0, 0, l3, 0}}});
  OracleSelectPolicy policy({});
  auto kept = RunPolicy(policy, {&head}, 2);
  EXPECT_EQ(kept[0][0][0], (std::vector<int32_t>{1, 4}));
  EXPECT_EQ(kept[0][0][1], (std::vector<int32_t>{0, 3}));
}

}  // namespace
}  // namespace kvsim
