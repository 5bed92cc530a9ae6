#include "sim/train/adam.h"

#include <cmath>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

TEST(AdamTest, CosineScheduleRunsFromPeakToFinal) {
  float w = 0;
  AdamW adam({{&w, 1}}, {.learning_rate = 1e-2, .final_learning_rate = 1e-4});
  EXPECT_DOUBLE_EQ(adam.LearningRate(0, 101), 1e-2);
  EXPECT_NEAR(adam.LearningRate(50, 101), (1e-2 + 1e-4) / 2, 1e-12);
  EXPECT_NEAR(adam.LearningRate(100, 101), 1e-4, 1e-15);
}

TEST(AdamTest, FirstStepMovesEachWeightByTheLearningRateAlongItsGradient) {
  // Adam's bias-corrected first step is lr * g / (|g| + eps) = lr * sign(g), whatever |g|.
  float w[2] = {1.0f, -2.0f};
  AdamW adam({{w, 2}}, {.learning_rate = 0.1, .final_learning_rate = 0.1, .weight_decay = 0});
  const float g[2] = {3.0f, -0.001f};
  adam.Step({g}, 0, 10);
  EXPECT_NEAR(w[0], 1.1f, 1e-6);
  EXPECT_NEAR(w[1], -2.1f, 1e-5);
}

TEST(AdamTest, AscendsToTheMaximumOfAConcaveFunction) {
  // Maximise -(w - 3)^2 - (v + 1)^2: gradient (-2 (w - 3), -2 (v + 1)).
  float w = 0, v = 0;
  AdamW adam({{&w, 1}, {&v, 1}}, {.learning_rate = 0.1, .final_learning_rate = 1e-3, .weight_decay = 0});
  for (int t = 0; t < 2000; ++t) {
    const float gw = -2 * (w - 3), gv = -2 * (v + 1);
    adam.Step({&gw, &gv}, t, 2000);
  }
  EXPECT_NEAR(w, 3.0f, 1e-2);
  EXPECT_NEAR(v, -1.0f, 1e-2);
}

}  // namespace
}  // namespace kvsim
