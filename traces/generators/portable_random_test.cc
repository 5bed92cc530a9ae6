#include "traces/generators/portable_random.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

// Tolerances are 5 standard errors of the estimate: with a fixed seed the tests are deterministic, and 5
// SE leaves a true-distribution failure probability below 1e-6 should the seed ever change.
constexpr double kZ = 5;

struct Moments {
  double mean = 0;
  double variance = 0;  // unbiased
};

template <typename F>
Moments Measure(int n, F draw) {
  double sum = 0, sum2 = 0;
  std::vector<double> xs(n);
  for (double& x : xs) sum += x = draw();
  const double mean = sum / n;
  for (double x : xs) sum2 += (x - mean) * (x - mean);
  return {mean, sum2 / (n - 1)};
}

// The C++ standard fixes mt19937_64's sequence: the 10000th output of a default-constructed engine is
// 9981545732273789042 ([rand.predef]). Everything below builds on this engine only.
TEST(PortableRandomTest, EngineIsTheStandardOne) {
  Rng rng;
  uint64_t x = 0;
  for (int i = 0; i < 10000; ++i) x = rng();
  EXPECT_EQ(x, 9981545732273789042ULL);
}

TEST(PortableRandomTest, Uniform01MeanAndRange) {
  Rng rng(7);
  const int n = 400000;
  double lo = 1, hi = 0;
  Moments m = Measure(n, [&] {
    const double u = SampleUniform01(rng);
    lo = std::min(lo, u), hi = std::max(hi, u);
    return u;
  });
  EXPECT_GE(lo, 0.0);
  EXPECT_LT(hi, 1.0);
  // Uniform(0,1): mean 1/2, variance 1/12.
  EXPECT_NEAR(m.mean, 0.5, kZ * std::sqrt(1.0 / 12 / n));
  EXPECT_NEAR(m.variance, 1.0 / 12, 0.01 / 12);
}

TEST(PortableRandomTest, UniformOpenNeverHitsTheEnds) {
  Rng rng(8);
  for (int i = 0; i < 100000; ++i) {
    const double u = SampleUniformOpen01(rng);
    ASSERT_GT(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
}

TEST(PortableRandomTest, UniformIntIsUniformOverTheClosedRange) {
  Rng rng(9);
  const int n = 500000;
  std::vector<int> counts(5);
  for (int i = 0; i < n; ++i) {
    const int64_t v = SampleUniformInt(rng, 3, 7);
    ASSERT_GE(v, 3);
    ASSERT_LE(v, 7);
    ++counts[v - 3];
  }
  // Each count is Binomial(n, 1/5): sd = sqrt(n * 0.2 * 0.8).
  for (int c : counts) EXPECT_NEAR(c, n / 5.0, kZ * std::sqrt(n * 0.2 * 0.8));
  EXPECT_EQ(SampleUniformInt(rng, 42, 42), 42);
  // The full int64 range must not overflow.
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  bool negative = false, positive = false;
  for (int i = 0; i < 64; ++i) {
    const int64_t v = SampleUniformInt(rng, lo, hi);
    negative |= v<0, positive |= v> 0;
  }
  EXPECT_TRUE(negative && positive);
}

TEST(PortableRandomTest, ExponentialMeanAndVariance) {
  Rng rng(10);
  const int n = 400000;
  Moments m = Measure(n, [&] { return SampleExponential(rng, 2.5); });
  // Exponential(mean 2.5): sd 2.5; the sample variance's sd is sigma^2 sqrt((mu4/sigma^4 - 1)/n) with
  // mu4 = 9 sigma^4, i.e. sigma^2 sqrt(8/n).
  EXPECT_NEAR(m.mean, 2.5, kZ * 2.5 / std::sqrt(n));
  EXPECT_NEAR(m.variance, 6.25, kZ * 6.25 * std::sqrt(8.0 / n));
}

// Published quantiles of the standard normal (Abramowitz and Stegun 26.2, and R's qnorm to 15 digits).
TEST(PortableRandomTest, NormalQuantileMatchesPublishedValues) {
  EXPECT_NEAR(NormalQuantile(0.5), 0.0, 1e-15);
  EXPECT_NEAR(NormalQuantile(0.975), 1.959963984540054, 1e-13);
  EXPECT_NEAR(NormalQuantile(0.025), -1.959963984540054, 1e-13);
  EXPECT_NEAR(NormalQuantile(0.8413447460685429), 1.0, 1e-13);  // Phi(1)
  EXPECT_NEAR(NormalQuantile(0.001), -3.090232306167813, 1e-12);
  EXPECT_NEAR(NormalQuantile(1e-10), -6.361340902404056, 1e-10);
  EXPECT_NEAR(NormalQuantile(1 - 1e-10), 6.361340902404056, 1e-5);  // 1 - 1e-10 is itself rounded
}

TEST(PortableRandomTest, StandardNormalMoments) {
  Rng rng(11);
  const int n = 400000;
  Moments m = Measure(n, [&] { return SampleStandardNormal(rng); });
  EXPECT_NEAR(m.mean, 0.0, kZ / std::sqrt(n));
  EXPECT_NEAR(m.variance, 1.0, kZ * std::sqrt(2.0 / n));  // mu4 = 3: sd of s^2 = sqrt(2/n)
}

// Gamma(shape k, scale theta): mean k theta, variance k theta^2, mu3 = 2 k theta^3, mu4 = 3k(k+2) theta^4.
// The sample variance's sd is sqrt((mu4 - sigma^4)/n) = k theta^2 sqrt((2 + 6/k)/n). For the sample
// coefficient of variation s/m, the delta method with Var(m) = sigma^2/n, Var(s^2) = (mu4 - sigma^4)/n
// and Cov(m, s^2) = mu3/n gives Var(cv) = (k + 1)/(2 k^2 n), i.e. sd = cv sqrt((1 + cv^2)/(2n)).
class GammaTest : public ::testing::TestWithParam<double> {};

TEST_P(GammaTest, MeanVarianceAndCv) {
  const double k = GetParam(), theta = 3;
  Rng rng(12);
  const int n = 300000;
  Moments m = Measure(n, [&] { return SampleGamma(rng, k, theta); });
  const double mean = k * theta, variance = k * theta * theta, cv = 1 / std::sqrt(k);
  EXPECT_NEAR(m.mean, mean, kZ * std::sqrt(variance / n));
  EXPECT_NEAR(m.variance, variance, kZ * variance * std::sqrt((2 + 6 / k) / n));
  EXPECT_NEAR(std::sqrt(m.variance) / m.mean, cv, kZ * cv * std::sqrt((1 + cv * cv) / (2 * n)));
}

// 0.25 and 0.5 take the shape < 1 path (Gamma(k + 1) U^(1/k)); 1 is exponential; 4 and 50 are regular.
INSTANTIATE_TEST_SUITE_P(Shapes, GammaTest, ::testing::Values(0.25, 0.5, 1.0, 4.0, 50.0));

TEST(PortableRandomTest, ZipfFrequenciesMatchTheExactPmf) {
  const int kN = 10;
  const double s = 1.2;
  DiscreteTable table = DiscreteTable::Zipf(kN, s);
  ASSERT_EQ(table.size(), kN);
  // Exact pmf: p_j = (j+1)^-s / H, H = sum_{i=1..10} i^-s.
  double h = 0;
  for (int i = 1; i <= kN; ++i) h += std::pow(i, -s);
  Rng rng(13);
  const int n = 1000000;
  std::vector<int> counts(kN);
  for (int i = 0; i < n; ++i) ++counts[table.Sample(rng)];
  double chi2 = 0;
  for (int j = 0; j < kN; ++j) {
    const double p = std::pow(j + 1, -s) / h;
    EXPECT_NEAR(counts[j], n * p, kZ * std::sqrt(n * p * (1 - p))) << "rank " << j + 1;
    chi2 += (counts[j] - n * p) * (counts[j] - n * p) / (n * p);
  }
  // Chi-square with 9 degrees of freedom: P(chi2 > 33.7) = 1e-4.
  EXPECT_LT(chi2, 33.7);
}

TEST(PortableRandomTest, DiscreteTableNeverPicksZeroWeights) {
  DiscreteTable table({0, 2, 0, 1, 0});
  Rng rng(14);
  const int n = 300000;
  std::vector<int> counts(5);
  for (int i = 0; i < n; ++i) ++counts[table.Sample(rng)];
  EXPECT_EQ(counts[0] + counts[2] + counts[4], 0);
  EXPECT_NEAR(counts[1], n * 2.0 / 3, kZ * std::sqrt(n * 2.0 / 9));
}

TEST(PortableRandomTest, SeedsOfStreamsDiffer) {
  EXPECT_NE(SeedFor(1, 1), SeedFor(1, 2));
  EXPECT_NE(SeedFor(1, 1), SeedFor(2, 1));
  EXPECT_EQ(SeedFor(5, 3), SeedFor(5, 3));
}

}  // namespace
}  // namespace kvsim
