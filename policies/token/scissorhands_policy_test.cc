#include "policies/token/scissorhands_policy.h"

#include <cmath>

#include "gtest/gtest.h"
#include "policies/token/testing/token_policy_testing.h"

namespace kvsim {
namespace {

TEST(ScissorhandsPolicyTest, HandComputedBatches) {
  const double l2 = std::log(2.0), l3 = std::log(3.0), l4 = std::log(4.0), l5 = std::log(5.0), l6 = std::log(6.0);
  // Prompt 0..3 with window queries at 2 and 3; decode at 4 and 5. B = 4: recent r = 1, batch m = 1.
  TestHead head =
      TestHead::FromLogits(4, 2,
                           {{
                               {l6, 0, l3},         // t = 2: (6, 1, 3) / 10; below 1/3: tokens 1 and 2
                               {l5, 0, 0, l3},      // t = 3: (5, 1, 1, 3) / 10; below 1/4: tokens 1 and 2
                               {l4, 0, 0, l2, l2},  // t = 4 over {0, 2, 3, 4}: (4, 1, 2, 2) / 9; below 1/4: 2, 3, 4
                               {0, 0, 0, 0, 0, 0},  // t = 5
                           }});
  ScissorhandsPolicy policy({});
  auto kept = RunPolicy(policy, {&head}, 4);
  // Prefill: counts 1: 2, 2: 2; the prompt (4) exceeds B - m = 3: drop the highest count outside the
  // recent token 3: 1 (tie with 2, older first). Cache {0, 2, 3}.
  // t = 4: 4 enters, 4 <= B: no drop; read {0, 2, 3, 4}; counts 2: 3, 3: 1, 4: 1.
  EXPECT_EQ(kept[0][0][0], (std::vector<int32_t>{0, 2, 3, 4}));
  // t = 5: 5 enters, 5 > B: drop down to 3 outside the recent {5}: 2 (3), then 3 (1, older than 4).
  EXPECT_EQ(kept[1][0][0], (std::vector<int32_t>{0, 4, 5}));
}

}  // namespace
}  // namespace kvsim
