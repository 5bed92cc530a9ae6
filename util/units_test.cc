#include "util/units.h"

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

}  // namespace
}  // namespace kvsim
