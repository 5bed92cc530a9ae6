#include "policies/token/h2o_policy.h"

#include <cmath>

#include "gtest/gtest.h"
#include "policies/token/testing/token_policy_testing.h"

namespace kvsim {
namespace {

TEST(H2oPolicyTest, HandComputedEvictions) {
  // Prompt 0..3 with prefill column sums hh = (0.5, 0.1, 0.3, 0.2); decode steps at 4, 5, 6; B = 3, so the
  // recent window is B_r = 1 and two heavy hitters.
  const double l2 = std::log(2.0), l8 = std::log(8.0);
  TestHead head = TestHead::FromLogits(4, 4,
                                       {{
                                           {0, 0, 0, 0, l8},       // t = 4: over the cache {0, 2, 4}: (1, 1, 8) / 10
                                           {0, 0, 0, 0, 0, l2},    // t = 5: over {0, 4, 5}: (1, 1, 2) / 4
                                           {0, 0, 0, 0, 0, 0, 0},  // t = 6
                                       }});
  head.column_sums = {0.5, 0.1, 0.3, 0.2};
  H2oPolicy policy({});
  auto kept = RunPolicy(policy, {&head}, 3);
  // Prefill: recent {3}; heaviest two of {0, 1, 2}: 0 (0.5) and 2 (0.3). Cache {0, 2, 3}.
  // t = 4: 4 enters; evict the lightest of positions <= 3: 3 (0.2). Attend {0, 2, 4}:
  //        hh = 0: 0.5 + 0.1 = 0.6, 2: 0.3 + 0.1 = 0.4, 4: 0.8.
  EXPECT_EQ(kept[0][0][0], (std::vector<int32_t>{0, 2, 4}));
  // t = 5: 5 enters; lightest of positions <= 4 is 2 (0.4). Attend {0, 4, 5}:
  //        hh = 0: 0.85, 4: 1.05, 5: 0.5.
  EXPECT_EQ(kept[1][0][0], (std::vector<int32_t>{0, 4, 5}));
  // t = 6: 6 enters; lightest of positions <= 5 is 5 (0.5).
  EXPECT_EQ(kept[2][0][0], (std::vector<int32_t>{0, 4, 6}));
}

}  // namespace
}  // namespace kvsim
