// File: util/float_test_util.h
//
// Helpers for tests of float kernels against double-precision references (testonly).
//
// Example:
//   const std::vector<float> a = RandomFloats(m * k, /*seed=*/1);
//   ASSERT_NEAR(c[i], reference, FloatSumTolerance(abs_sum, k));
#ifndef KVSIM_UTIL_FLOAT_TEST_UTIL_H_
#define KVSIM_UTIL_FLOAT_TEST_UTIL_H_

#include <cstdint>
#include <random>
#include <vector>

namespace kvsim {

// `size` uniform [-1, 1) floats from an engine seeded with `seed`.
inline std::vector<float> RandomFloats(int64_t size, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(size);
  for (float& v : x) v = u(rng);
  return x;
}

// Float sums of k products of [-1, 1) values are within k * 2^-23 * sum |a_t b_t| <= k^2 * 1.2e-7 of the
// double reference in the worst case; the bound used is 4 * k * 1.2e-7 * sum |a_t b_t| + 1e-6.
inline double FloatSumTolerance(double abs_sum, int64_t k) { return 4.0 * k * 1.2e-7 * abs_sum + 1e-6; }

}  // namespace kvsim

#endif  // KVSIM_UTIL_FLOAT_TEST_UTIL_H_
