// Runs on the path the process chose (AVX2+FMA where the CPU has it, portable under KVSIM_NO_AVX2=1):
// both must match the same double-precision references.
#include "util/float_gemm.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "util/float_test_util.h"

namespace kvsim {
namespace {

TEST(FloatGemmTest, ABtAndABMatchDoubleReference) {
  const int64_t m = 11, n = 37, k = 130, ld = k + 2, ldc = n + 3;
  const std::vector<float> a = RandomFloats(m * ld, 1), b = RandomFloats(n * ld, 2), bt = RandomFloats(k * ldc, 3);
  std::vector<float> c(m * ldc, 7.0f), c2(m * ldc, 7.0f);
  GemmABt(a.data(), ld, b.data(), ld, m, n, k, c.data(), ldc);
  GemmAB(a.data(), ld, bt.data(), ldc, m, n, k, c2.data(), ldc);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0, abs_sum = 0, ref2 = 0, abs_sum2 = 0;
      for (int64_t t = 0; t < k; ++t) {
        ref += double{a[i * ld + t]} * b[j * ld + t];
        abs_sum += std::fabs(double{a[i * ld + t]} * b[j * ld + t]);
        ref2 += double{a[i * ld + t]} * bt[t * ldc + j];
        abs_sum2 += std::fabs(double{a[i * ld + t]} * bt[t * ldc + j]);
      }
      ASSERT_NEAR(c[i * ldc + j], ref, FloatSumTolerance(abs_sum, k)) << i << "," << j;
      ASSERT_NEAR(c2[i * ldc + j], ref2, FloatSumTolerance(abs_sum2, k)) << i << "," << j;
    }
    for (int64_t j = n; j < ldc; ++j) {
      ASSERT_EQ(c[i * ldc + j], 7.0f);
      ASSERT_EQ(c2[i * ldc + j], 7.0f);
    }
  }
}

TEST(FloatGemmTest, ExpScaledMatchesDoubleExp) {
  std::vector<float> x = {-30.0f, -2.5f, 0.0f, 1.0f, 4.0f, 10.0f, 17.5f, 20.0f, -7.0f};
  const std::vector<float> in = x;
  ExpScaled(x.data(), x.size(), 0.25f, 2.0f);  // exp(x / 4 - 2)
  for (size_t i = 0; i < x.size(); ++i) {
    const double ref = std::exp(in[i] / 4.0 - 2.0);
    EXPECT_NEAR(x[i], ref, 1e-6 * ref) << in[i];
  }
}

}  // namespace
}  // namespace kvsim
