// File: util/float_test_util.h
//
// Helpers for tests of float kernels against double-precision references (testonly).
//
// Example:
//   const std::vector<float> a = RandomFloats(m * k, /*seed=*/1);
//   ASSERT_NEAR(c[i], reference, FloatSumTolerance(abs_sum, k));
#ifndef KVSIM_UTIL_FLOAT_TEST_UTIL_H_
#define KVSIM_UTIL_FLOAT_TEST_UTIL_H_

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
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

// The double sum of x[0..n) in the order LaneSum (util/float_gemm.h) documents, written from that
// description one term at a time: the reference both of its paths must equal bit for bit.
inline double ReferenceLaneSum(const float* x, int64_t n) {
  const int64_t full = n - n % 16;
  double p[16] = {};
  for (int64_t i = 0; i < full; ++i) p[i % 16] = p[i % 16] + static_cast<double>(x[i]);
  double c[4];
  for (int l = 0; l < 4; ++l) c[l] = (p[l] + p[8 + l]) + (p[4 + l] + p[12 + l]);
  double total = (c[0] + c[2]) + (c[1] + c[3]);
  for (int64_t i = full; i < n; ++i) total = total + static_cast<double>(x[i]);
  return total;
}

// Values spread over 12 orders of magnitude, both signs (where a sum's order shows in its last bits).
inline std::vector<float> WideRangeFloats(int64_t size, uint64_t seed) {
  std::vector<float> x = RandomFloats(size, seed);
  std::mt19937_64 rng(seed + 1);
  std::uniform_int_distribution<int> exponent(-6, 6);
  for (float& v : x) v = static_cast<float>(v * std::pow(10.0, exponent(rng)));
  return x;
}

// Checks `out` (out_rows rows of `ldo` floats, every entry `untouched` before the call) against the
// weighted row sums of util/float_gemm.h written one term at a time: for r < num_rows and t < cols,
// out[r * ldo + t] must equal, bit for bit, the float sum in n order of w[r * stride + n] * rows[n][t]
// (a multiplication then an addition per term, from 0); every other entry must still be `untouched`.
// Returns "" or a description of the first entry that differs.
inline std::string WeightedRowSumsMismatch(const float* const* rows, int64_t size, const float* w, int64_t stride,
                                           int num_rows, int64_t cols, const float* out, int out_rows, int64_t ldo,
                                           float untouched) {
  for (int r = 0; r < out_rows; ++r) {
    for (int64_t t = 0; t < ldo; ++t) {
      const float got = out[r * ldo + t];
      const std::string where = "row " + std::to_string(r) + " column " + std::to_string(t);
      if (r >= num_rows || t >= cols) {
        if (got != untouched) return "wrote outside the rows and columns asked for, at " + where;
        continue;
      }
      float in_order = 0;
      for (int64_t n = 0; n < size; ++n) {
        const float product = w[r * stride + n] * rows[n][t];
        in_order = in_order + product;
      }
      if (got != in_order) return "not the in-order sum at " + where;
    }
  }
  return "";
}

}  // namespace kvsim

#endif  // KVSIM_UTIL_FLOAT_TEST_UTIL_H_
