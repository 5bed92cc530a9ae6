#include "policies/token/pyramidkv_policy.h"

#include "gtest/gtest.h"
#include "policies/token/testing/token_policy_testing.h"

namespace kvsim {
namespace {

TEST(PyramidLayerBudgetTest, HandComputedPyramids) {
  // T = 2000, n = 8000, W = 64, beta = 20: min = 100, max = 3900, L = 3 -> steps of 1900.
  EXPECT_EQ(PyramidLayerBudget(2000, 8000, 64, 0, 3, 20), 3900);
  EXPECT_EQ(PyramidLayerBudget(2000, 8000, 64, 1, 3, 20), 2000);
  EXPECT_EQ(PyramidLayerBudget(2000, 8000, 64, 2, 3, 20), 100);
  // max = 5850 >= n - W = 3936: max = 3936, min = 6000 - 3936 = 2064.
  EXPECT_EQ(PyramidLayerBudget(3000, 4000, 64, 0, 2, 20), 3936);
  EXPECT_EQ(PyramidLayerBudget(3000, 4000, 64, 1, 2, 20), 2064);
  // min = 100 / 20 = 5 < W: falls back to SnapKV's uniform budget.
  EXPECT_EQ(PyramidLayerBudget(100, 1000, 64, 0, 3, 20), 100);
  // beta = 1.5: min = 66.7, max = 133.3, steps 33.3: 133, 100, 67 (rounded), summing to 3T.
  EXPECT_EQ(PyramidLayerBudget(100, 1000, 64, 0, 3, 1.5), 133);
  EXPECT_EQ(PyramidLayerBudget(100, 1000, 64, 1, 3, 1.5), 100);
  EXPECT_EQ(PyramidLayerBudget(100, 1000, 64, 2, 3, 1.5), 67);
}

TEST(PyramidKvPolicyTest, UsesTheLayerBudget) {
  // 3000 prompt tokens, no stored window (W = 0), 1 decode step; L = 4, layer 1. T = 1200: min = 60,
  // max = 2340, steps = 760: layer 1 keeps 1580.
  std::vector<std::vector<double>> rows(1, std::vector<double>(3001, 0.0));
  TestHead head = TestHead::FromLogits(3000, 3000, {rows});
  head.layer = 1;
  head.num_model_layers = 4;
  PyramidKvPolicy policy({});
  auto kept = RunPolicy(policy, {&head}, 1200);
  EXPECT_EQ(kept[0][0][0].size(), 1580u);
}

}  // namespace
}  // namespace kvsim
