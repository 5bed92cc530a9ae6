#include "policies/token/rope.h"

#include <cmath>
#include <cstring>
#include <random>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

TEST(ApplyRopeTest, RotatesHalfPairsAndInverts) {
  RopeConfig rope;
  rope.base = 10000;
  // d = 2: one pair (0, 1), theta = 1 rad per position: (1, 0) at position 1 -> (cos 1, sin 1).
  float x[2] = {1, 0};
  ApplyRope(rope, 1, false, x, 2);
  EXPECT_NEAR(x[0], std::cos(1.0), 1e-6);
  EXPECT_NEAR(x[1], std::sin(1.0), 1e-6);
  ApplyRope(rope, 1, true, x, 2);
  EXPECT_NEAR(x[0], 1.0, 1e-6);
  EXPECT_NEAR(x[1], 0.0, 1e-6);
  // Linear scaling divides positions by the factor: position 2 at factor 2 = position 1 unscaled.
  rope.scaling = RopeScaling::kLinear;
  rope.scaling_factor = 2;
  float y[2] = {1, 0};
  ApplyRope(rope, 2, false, y, 2);
  EXPECT_NEAR(y[0], std::cos(1.0), 1e-6);
}

TEST(ApplyRopeTest, PairsAreChannelAndChannelPlusHalf) {
  // d = 4, base 100: pair 0 = channels (0, 2) at 1 rad per position, pair 1 = (1, 3) at 100^(-1/2) = 0.1.
  RopeConfig rope;
  rope.base = 100;
  float x[4] = {1, 1, 0, 0};
  ApplyRope(rope, 3, false, x, 4);
  EXPECT_NEAR(x[0], std::cos(3.0), 1e-6);
  EXPECT_NEAR(x[2], std::sin(3.0), 1e-6);
  EXPECT_NEAR(x[1], std::cos(0.3), 1e-6);
  EXPECT_NEAR(x[3], std::sin(0.3), 1e-6);
}

TEST(RopeConfigTest, ExactForNoneAndLinearOnly) {
  RopeConfig rope;
  EXPECT_TRUE(RopeConfigIsExact(rope));
  rope.scaling = RopeScaling::kLinear;
  rope.scaling_factor = 4;
  EXPECT_TRUE(RopeConfigIsExact(rope));
  for (RopeScaling s : {RopeScaling::kDynamic, RopeScaling::kYarn, RopeScaling::kLlama3, RopeScaling::kOther}) {
    rope.scaling = s;
    EXPECT_FALSE(RopeConfigIsExact(rope)) << static_cast<int>(s);
  }
}

bool SameBits(const float* a, const float* b, int n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

TEST(RopeTableTest, MatchesApplyRopeBitForBitBothWays) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (RopeScaling scaling : {RopeScaling::kNone, RopeScaling::kLinear}) {
    RopeConfig rope;
    rope.base = 500000;
    rope.scaling = scaling;
    rope.scaling_factor = scaling == RopeScaling::kLinear ? 8 : 1;
    const int d = 16;
    RopeTable table;
    table.Reset(rope, d, 700);
    for (int64_t p : {0, 1, 37, 511, 699}) {
      for (bool inverse : {false, true}) {
        float a[d], b[d];
        for (int c = 0; c < d; ++c) a[c] = b[c] = normal(rng);
        ApplyRope(rope, p, inverse, a, d);
        table.Apply(p, inverse, b);
        EXPECT_TRUE(SameBits(a, b, d)) << "position " << p << " inverse " << inverse;
      }
    }
  }
}

TEST(RopeTableTest, ResetFollowsANewConfig) {
  RopeConfig rope;
  rope.base = 10000;
  RopeTable table;
  table.Reset(rope, 2, 4);
  rope.scaling = RopeScaling::kLinear;
  rope.scaling_factor = 2;
  table.Reset(rope, 2, 4);  // position 2 at factor 2 turns by 1 rad
  float x[2] = {1, 0};
  table.Apply(2, false, x);
  EXPECT_NEAR(x[0], std::cos(1.0), 1e-6);
  EXPECT_NEAR(x[1], std::sin(1.0), 1e-6);
}

}  // namespace
}  // namespace kvsim
