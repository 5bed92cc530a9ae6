#include "policies/token/tova_policy.h"

#include <cmath>

#include "gtest/gtest.h"
#include "policies/token/testing/token_policy_testing.h"

namespace kvsim {
namespace {

TEST(TovaPolicyTest, HandComputedEvictionsAveragedOverHeads) {
  const double l2 = std::log(2.0), l3 = std::log(3.0), l4 = std::log(4.0), l5 = std::log(5.0), l6 = std::log(6.0);
  // Prompt 0..3, the last prompt query (t = 3) stored; decode at 4, 5, 6; a group of two query heads.
  TestHead head =
      TestHead::FromLogits(4, 3,
                           {
                               {{l4, 0, l2, 0}, {l3, 0, 0, 0, l2}, {0, 0, 0, 0, l5, l2}, {0, 0, 0, 0, 0, 0, 0}},
                               {{0, 0, l6, 0}, {0, 0, 0, 0, l4}, {0, 0, 0, 0, l5, l2}, {0, 0, 0, 0, 0, 0, 0}},
                           });
  TovaPolicy policy({});
  auto kept = RunPolicy(policy, {&head}, 3);
  // Prefill keeps B - 1 = 2 by the last prompt query: member 0 (4, 1, 2, 1) / 8, member 1 (1, 1, 6, 1) / 9;
  // summed: 0: 0.611, 1: 0.236, 2: 0.917, 3: 0.236 -> {0, 2}.
  // t = 4 attends {0, 2, 4}: member 0 (3, 1, 2) / 6, member 1 (1, 1, 4) / 6 -> 0: 0.67, 2: 0.33, 4: 1.0;
  //        evict 2.
  EXPECT_EQ(kept[0][0][0], (std::vector<int32_t>{0, 2, 4}));
  // t = 5 attends {0, 4, 5}: both (1, 5, 2) / 8 -> evict 0.
  EXPECT_EQ(kept[1][0][0], (std::vector<int32_t>{0, 4, 5}));
  EXPECT_EQ(kept[1][0][1], (std::vector<int32_t>{0, 4, 5}));  // one set for the whole layer
  EXPECT_EQ(kept[2][0][0], (std::vector<int32_t>{4, 5, 6}));
}

}  // namespace
}  // namespace kvsim
