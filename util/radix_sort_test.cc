#include "util/radix_sort.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

// Bitwise equality, so that a wrong sign of zero or a changed NaN would show.
void ExpectSameBits(const std::vector<double>& a, const std::vector<double>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(std::memcmp(&a[i], &b[i], sizeof(double)), 0) << "at " << i << ": " << a[i] << " vs " << b[i];
  }
}

std::vector<double> StdSorted(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(RadixSortTest, MatchesStdSortOnLatencyLikeValues) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> latency(3.0, 1.5);
  for (size_t n : {0, 1, 2, 255, 256, 257, 1000, 65537}) {
    std::vector<double> v(n);
    for (double& x : v) x = latency(rng);
    std::vector<double> sorted = v;
    SortDoubles(&sorted);
    ExpectSameBits(sorted, StdSorted(v));
  }
}

TEST(RadixSortTest, MatchesStdSortAcrossSignsExponentsAndDuplicates) {
  std::mt19937_64 rng(11);
  std::vector<double> v;
  const double specials[] = {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                             std::numeric_limits<double>::denorm_min(), -std::numeric_limits<double>::denorm_min(),
                             std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest(),
                             std::numeric_limits<double>::min(), 1.0, -1.0, 0.0};
  for (double s : specials) v.push_back(s);
  std::uniform_real_distribution<double> mantissa(-1, 1);
  std::uniform_int_distribution<int> exponent(-1070, 1020);
  while (v.size() < 5000) {  // no further zeros: std::sort may order -0.0 and +0.0 either way
    const double x = std::ldexp(mantissa(rng), exponent(rng));
    if (x != 0) v.push_back(x);
  }
  for (int i = 0; i < 2000; ++i) v.push_back(v[rng() % v.size()]);  // duplicates
  std::shuffle(v.begin(), v.end(), rng);
  std::vector<double> sorted = v;
  SortDoubles(&sorted);
  ExpectSameBits(sorted, StdSorted(v));
}

TEST(RadixSortTest, ValuesThatShareHighBytesSkipPassesAndStaySorted) {
  // Integers 0..999 as doubles and their negatives: the exponent bytes are shared by runs of values.
  std::vector<double> v;
  for (int i = 999; i >= -999; --i) v.push_back(i);
  std::vector<double> sorted = v;
  SortDoubles(&sorted);
  ExpectSameBits(sorted, StdSorted(v));
}

TEST(RadixSortTest, NegativeZeroComesBeforePositiveZero) {
  std::vector<double> v(300, 1.0);
  v[10] = 0.0;
  v[20] = -0.0;
  v[30] = -2.0;
  SortDoubles(&v);
  EXPECT_EQ(v[0], -2.0);
  EXPECT_TRUE(std::signbit(v[1]) && v[1] == 0);
  EXPECT_TRUE(!std::signbit(v[2]) && v[2] == 0);
  EXPECT_EQ(v[3], 1.0);
}

}  // namespace
}  // namespace kvsim
