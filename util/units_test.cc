#include "util/units.h"

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

TEST(UnitsTest, SecondsToNsRoundsToTheNearestNanosecond) {
  EXPECT_EQ(SecondsToNs(0.0), 0);
  EXPECT_EQ(SecondsToNs(1.5), 1'500'000'000);
  EXPECT_EQ(SecondsToNs(2.4e-9), 2);   // 2.4 ns
  EXPECT_EQ(SecondsToNs(2.6e-9), 3);   // 2.6 ns
  EXPECT_EQ(SecondsToNs(-2.6e-9), -3);  // away from zero, as llround
  EXPECT_EQ(SecondsToNs(86400.0 * 365), int64_t{31'536'000} * 1'000'000'000);
}

TEST(UnitsTest, RoundToInt64IsLlround) {
  std::vector<double> values = {0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999999999999994,
                                -0.49999999999999994, 4503599627370495.5, -4503599627370495.5,
                                4503599627370497.0, 9007199254740993.0, 4.611686018427388e18, -4.611686018427388e18,
                                9.2233720368547748e18, -9.2233720368547758e18};
  for (int64_t k = -1000; k <= 1000; ++k) {
    const double half = static_cast<double>(k) + 0.5;
    values.push_back(half);
    values.push_back(std::nextafter(half, 0.0));
    values.push_back(std::nextafter(half, 1e300));
    values.push_back(std::nextafter(half, -1e300));
  }
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    // Magnitudes from 1e-12 to 1e18, both signs: what seconds x 1e9 spans.
    const double magnitude = std::pow(10.0, std::uniform_real_distribution<double>(-12, 18)(rng));
    values.push_back(rng() % 2 == 0 ? magnitude : -magnitude);
  }
  for (double x : values) {
    ASSERT_EQ(RoundToInt64(x), static_cast<int64_t>(std::llround(x))) << std::hexfloat << x;
  }
}

}  // namespace
}  // namespace kvsim
