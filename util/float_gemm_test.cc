// Runs on the path the process chose: the AVX2+FMA kernels of util/avx2_gemm.h where the CPU has them
// (float_gemm_test), the portable code under KVSIM_NO_AVX2=1 (float_gemm_portable_test). Both must match
// the same references: double precision, or bit for bit where the header promises it.
#include "util/float_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "util/float_test_util.h"

namespace kvsim {
namespace {

struct Shape {
  int64_t m, n, k;
};

// Shapes with remainders in every dimension (AVX2 tiles of 6 x 16, blocks of 256 / 512) and the
// evaluator's (GQA group x steps rows, head_dim 128).
const Shape kShapes[] = {{1, 1, 1}, {5, 17, 3}, {6, 16, 8}, {7, 300, 129}, {13, 33, 1100}, {32, 513, 128}};

// c (s.m x s.n, leading dimension ldc) against the double sums over t of a[i * lda + t] * b(t, j), and
// the columns past n untouched (they held 7).
template <typename BAt>
void ExpectProductNear(const Shape& s, const std::vector<float>& a, int64_t lda, BAt b, const std::vector<float>& c,
                       int64_t ldc) {
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      double ref = 0, abs_sum = 0;
      for (int64_t t = 0; t < s.k; ++t) {
        ref += double{a[i * lda + t]} * b(t, j);
        abs_sum += std::fabs(double{a[i * lda + t]} * b(t, j));
      }
      ASSERT_NEAR(c[i * ldc + j], ref, FloatSumTolerance(abs_sum, s.k))
          << s.m << "x" << s.n << "x" << s.k << " at " << i << "," << j;
    }
    for (int64_t j = s.n; j < ldc; ++j) ASSERT_EQ(c[i * ldc + j], 7.0f) << "wrote past column n";
  }
}

TEST(FloatGemmTest, ABtMatchesDoubleReference) {
  for (const Shape& s : kShapes) {
    const int64_t lda = s.k + 3, ldb = s.k + 1, ldc = s.n + 5;  // strides wider than the rows
    const std::vector<float> a = RandomFloats(s.m * lda, 1), b = RandomFloats(s.n * ldb, 2);
    std::vector<float> c(s.m * ldc, 7.0f);
    GemmABt(a.data(), lda, b.data(), ldb, s.m, s.n, s.k, c.data(), ldc);
    ExpectProductNear(
        s, a, lda, [&](int64_t t, int64_t j) { return b[j * ldb + t]; }, c, ldc);
  }
}

TEST(FloatGemmTest, ABMatchesDoubleReference) {
  for (const Shape& s : kShapes) {
    const int64_t lda = s.k + 2, ldb = s.n + 3, ldc = s.n + 1;
    const std::vector<float> a = RandomFloats(s.m * lda, 3), b = RandomFloats(s.k * ldb, 4);
    std::vector<float> c(s.m * ldc, 7.0f);
    GemmAB(a.data(), lda, b.data(), ldb, s.m, s.n, s.k, c.data(), ldc);
    ExpectProductNear(
        s, a, lda, [&](int64_t t, int64_t j) { return b[t * ldb + j]; }, c, ldc);
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

// LaneSum and its fused forms equal the documented order bit for bit on this process's path (both
// paths run this test: plain and under KVSIM_NO_AVX2=1), and the exact sum to double accuracy.
TEST(FloatGemmTest, LaneSumsFollowTheDocumentedOrder) {
  for (int64_t n : {0, 1, 15, 16, 17, 31, 32, 33, 100, 4099}) {
    const std::vector<float> x = WideRangeFloats(n, 10 + n);
    const double sum = LaneSum(x.data(), n);
    ASSERT_EQ(sum, ReferenceLaneSum(x.data(), n)) << n;
    long double exact = 0, magnitude = 0;
    for (float v : x) {
      exact += v;
      magnitude += std::fabs(v);
    }
    EXPECT_NEAR(sum, static_cast<double>(exact), 1e-15 * n * static_cast<double>(magnitude) + 1e-300) << n;

    std::vector<float> scaled = x;
    const double scaled_sum = ScaleLaneSum(scaled.data(), n, 0.3f);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(scaled[i], x[i] * 0.3f) << i;
    ASSERT_EQ(scaled_sum, ReferenceLaneSum(scaled.data(), n)) << n;

    std::vector<float> logits = RandomFloats(n, 20 + n), exps = logits;
    ExpScaled(exps.data(), n, 0.7f, 1.5f);
    const double exp_sum = ExpScaledLaneSum(logits.data(), n, 0.7f, 1.5f);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(logits[i], exps[i]) << i;
    ASSERT_EQ(exp_sum, ReferenceLaneSum(exps.data(), n)) << n;
  }
}

// Each sum equals a scalar float sum in row order (a multiplication then an addition per term), on rows
// of different arrays, for 1 to 6 output rows and column counts with and without a partial 16-column tail.
TEST(FloatGemmTest, WeightedRowSumsFollowRowOrder) {
  const int64_t size = 37, stride = 41, len = 150;
  const std::vector<float> a = RandomFloats(size * len, 41), b = RandomFloats(size * len, 42),
                           w = RandomFloats(6 * stride, 43);
  std::vector<const float*> rows;
  for (int64_t n = 0; n < size; ++n) rows.push_back((n % 3 == 0 ? a.data() : b.data()) + (size - 1 - n) * len);
  std::vector<float> staging;  // kept across calls, as callers keep it
  for (int64_t cols : {5, 16, 70, 150}) {
    for (int num_rows = 1; num_rows <= 6; ++num_rows) {
      const int64_t ldo = cols + 3;
      std::vector<float> out(6 * ldo, 7.0f), again(6 * ldo, 7.0f);
      WeightedRowSums(rows.data(), size, w.data(), stride, num_rows, cols, out.data(), ldo);
      WeightedRowSums(rows.data(), size, w.data(), stride, num_rows, cols, again.data(), ldo, &staging);
      ASSERT_EQ(again, out) << "a kept staging buffer changes nothing";
      ASSERT_EQ(WeightedRowSumsMismatch(rows.data(), size, w.data(), stride, num_rows, cols, out.data(), 6, ldo, 7.0f),
                "")
          << cols << " cols, " << num_rows << " rows";
    }
  }
}

// The maximum equals std::max_element's, and -infinity for no values.
TEST(FloatGemmTest, MaxValueMatchesMaxElement) {
  for (int64_t n : {1, 31, 32, 33, 1000}) {
    const std::vector<float> x = RandomFloats(n, 44);
    EXPECT_EQ(MaxValue(x.data(), n), *std::max_element(x.begin(), x.end())) << n;
  }
  EXPECT_EQ(MaxValue(nullptr, 0), -std::numeric_limits<float>::infinity());
}

// Each sum gets its float added once, as a plain double loop does, for every length around the lanes.
TEST(FloatGemmTest, AddToDoublesMatchesAPlainLoop) {
  for (int64_t n : {0, 1, 7, 8, 15, 16, 17, 33, 1000}) {
    const std::vector<float> x = RandomFloats(n, 46 + n);
    std::vector<double> sums(n), expected(n);
    for (int64_t i = 0; i < n; ++i) sums[i] = expected[i] = 1.0 / (i + 3);  // not representable in float
    for (int round = 0; round < 3; ++round) {
      AddToDoubles(x.data(), n, sums.data());
      for (int64_t i = 0; i < n; ++i) expected[i] += static_cast<double>(x[i]);
    }
    EXPECT_EQ(sums, expected) << n;
  }
}

TEST(FloatGemmTest, FirstAboveMatchesAPlainSearch) {
  const std::vector<float> x = RandomFloats(1000, 45);
  for (float t : {-2.0f, 0.0f, 0.9f, 0.999f, 2.0f}) {
    for (int64_t from : {0, 1, 15, 16, 17, 500, 999, 1000}) {
      int64_t expected = from;
      while (expected < 1000 && !(x[expected] > t)) ++expected;
      ASSERT_EQ(FirstAbove(x.data(), from, 1000, t), expected) << t << " " << from;
    }
  }
}

TEST(FloatGemmTest, IndicesAtLeastMatchesAPlainFilter) {
  for (int64_t n : {0, 5, 8, 13, 16, 17, 64, 1001}) {
    std::vector<float> x = RandomFloats(n, 50 + n);
    if (n > 3) x[3] = 0.25f;  // equal to the threshold: kept
    std::vector<int32_t> index(n + 16, -1), expected;
    for (int64_t i = 0; i < n; ++i) {
      if (x[i] >= 0.25f) expected.push_back(static_cast<int32_t>(i));
    }
    const int64_t count = IndicesAtLeast(x.data(), n, 0.25f, index.data());
    ASSERT_EQ(std::vector<int32_t>(index.begin(), index.begin() + count), expected) << n;
  }
}

}  // namespace
}  // namespace kvsim
