#include "util/avx2_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "util/cpu_features.h"
#include "util/float_test_util.h"

namespace kvsim {
namespace {

// The products themselves are tested in float_gemm_test, which runs on this path on CPUs with AVX2+FMA
// (and on the portable path in float_gemm_portable_test).

// Rows x lengths with remainders (four rows at a time, 16 columns at a time) and the evaluator's 128.
struct MatVecShape {
  int64_t m, k;
};
const MatVecShape kMatVecShapes[] = {{1, 1}, {17, 3}, {16, 8}, {300, 129}, {33, 1100}, {513, 128}};

TEST(Avx2GemmTest, MatVecMatchesDoubleReference) {
  if (!CpuHasAvx2Fma()) GTEST_SKIP() << "CPU lacks AVX2/FMA";
  for (const MatVecShape& s : kMatVecShapes) {
    const int64_t lda = s.k + 1;
    const std::vector<float> a = RandomFloats(s.m * lda, 5), x = RandomFloats(s.k, 6);
    std::vector<float> y(s.m + 1, 7.0f);
    Avx2MatVec(a.data(), lda, x.data(), s.m, s.k, y.data());
    for (int64_t i = 0; i < s.m; ++i) {
      double ref = 0, abs_sum = 0;
      for (int64_t t = 0; t < s.k; ++t) {
        ref += double{a[i * lda + t]} * x[t];
        abs_sum += std::fabs(double{a[i * lda + t]} * x[t]);
      }
      ASSERT_NEAR(y[i], ref, FloatSumTolerance(abs_sum, s.k)) << s.m << "x" << s.k << " at " << i;
    }
    EXPECT_EQ(y[s.m], 7.0f);
  }
}

// The AVX-512 products equal the AVX2 ones bit for bit (the same FMA chain per element), on shapes with
// partial tiles of both kernels (rows not a multiple of 6 or 12, columns not of 16 or 32), lengths not a
// multiple of 8, and more than one 512-long pass of the summed dimension (GemmAB); and both are near the
// double reference.
TEST(Avx2GemmTest, Avx512ProductsEqualAvx2Bits) {
  if (!CpuHasAvx2Fma() || !CpuHasAvx512()) GTEST_SKIP() << "CPU lacks AVX2/FMA or AVX-512F";
  struct Shape {
    int64_t m, n, k;
  };
  for (const Shape& s : {Shape{1, 1, 1}, Shape{13, 33, 7}, Shape{12, 32, 128}, Shape{25, 300, 129},
                         Shape{256, 70, 1100}, Shape{7, 128, 513}}) {
    const int64_t lda = s.k + 3, ldb_t = s.k + 1, ldb = s.n + 2, ldc = s.n + 5;
    const std::vector<float> a = RandomFloats(s.m * lda, 11), bt = RandomFloats(s.n * ldb_t, 12),
                             b = RandomFloats(s.k * ldb, 13);
    // Both kernels of one product from a 7.0-filled C: equal bits everywhere (nothing written past n
    // columns either), and near the double reference; b_at(t, j) is B's entry of the summed index t.
    auto check = [&](const char* name, auto avx2, auto avx512, auto b_at) {
      std::vector<float> c2(s.m * ldc, 7.0f), c512(s.m * ldc, 7.0f);
      avx2(c2.data());
      avx512(c512.data());
      for (int64_t i = 0; i < s.m; ++i) {
        for (int64_t j = 0; j < ldc; ++j) {
          ASSERT_EQ(c512[i * ldc + j], c2[i * ldc + j])
              << name << " " << s.m << "x" << s.n << "x" << s.k << " at " << i << "," << j;
          if (j >= s.n) continue;
          double ref = 0, abs_sum = 0;
          for (int64_t t = 0; t < s.k; ++t) {
            ref += double{a[i * lda + t]} * b_at(t, j);
            abs_sum += std::fabs(double{a[i * lda + t]} * b_at(t, j));
          }
          ASSERT_NEAR(c512[i * ldc + j], ref, FloatSumTolerance(abs_sum, s.k));
        }
      }
    };
    check(
        "ABt", [&](float* c) { Avx2GemmABt(a.data(), lda, bt.data(), ldb_t, s.m, s.n, s.k, c, ldc); },
        [&](float* c) { Avx512GemmABt(a.data(), lda, bt.data(), ldb_t, s.m, s.n, s.k, c, ldc); },
        [&](int64_t t, int64_t j) { return bt[j * ldb_t + t]; });
    check(
        "AB", [&](float* c) { Avx2GemmAB(a.data(), lda, b.data(), ldb, s.m, s.n, s.k, c, ldc); },
        [&](float* c) { Avx512GemmAB(a.data(), lda, b.data(), ldb, s.m, s.n, s.k, c, ldc); },
        [&](int64_t t, int64_t j) { return b[t * ldb + j]; });
  }
}

// Each sum equals a scalar float sum in n order (a multiplication then an addition per term: exactly
// the kernel's arithmetic, so equal bits), and is near the double sum.
TEST(Avx2GemmTest, WeightedSums4MatchScalarOrderAndDoubleReference) {
  if (!CpuHasAvx2Fma()) GTEST_SKIP() << "CPU lacks AVX2/FMA";
  for (int64_t size : {1, 7, 300}) {
    const int64_t chunks = 3, stride = size + 2, ldo = chunks * 16 + 5;
    const std::vector<float> x = RandomFloats(chunks * size * 16, 9), w = RandomFloats(4 * stride, 10);
    std::vector<float> out(4 * ldo, 7.0f);
    Avx2WeightedSums4(x.data(), size, chunks, w.data(), stride, out.data(), ldo);
    for (int r = 0; r < 4; ++r) {
      for (int64_t c = 0; c < chunks; ++c) {
        for (int t = 0; t < 16; ++t) {
          float in_order = 0;
          double ref = 0, abs_sum = 0;
          for (int64_t n = 0; n < size; ++n) {
            const float product = w[r * stride + n] * x[(c * size + n) * 16 + t];
            in_order = in_order + product;
            ref += double{w[r * stride + n]} * x[(c * size + n) * 16 + t];
            abs_sum += std::fabs(double{w[r * stride + n]} * x[(c * size + n) * 16 + t]);
          }
          ASSERT_EQ(out[r * ldo + c * 16 + t], in_order) << size << " " << r << " " << c << " " << t;
          ASSERT_NEAR(out[r * ldo + c * 16 + t], ref, FloatSumTolerance(abs_sum, size));
        }
      }
      for (int64_t j = chunks * 16; j < ldo; ++j) ASSERT_EQ(out[r * ldo + j], 7.0f) << "wrote past the chunks";
    }
  }
}

// Each sum equals a scalar float sum in row order (a multiplication then an addition per term), for 1 to
// 4 output rows, columns in 64- and 16-wide passes, rows scattered over two arrays.
TEST(Avx2GemmTest, Avx512WeightedRowSumsMatchScalarOrder) {
  if (!CpuHasAvx512()) GTEST_SKIP() << "CPU lacks AVX-512F";
  const int64_t num_rows = 500, ld = 130, stride = 401, ldo = 133;
  const std::vector<float> base = RandomFloats(num_rows * ld, 21), alt = RandomFloats(num_rows * ld, 22),
                           w = RandomFloats(4 * stride, 23);
  std::vector<int32_t> set;
  for (int32_t i = 0; i < num_rows; i += 1 + i % 3) set.push_back(i % 2 == 0 ? num_rows - 1 - i : i);
  ASSERT_LE(static_cast<int64_t>(set.size()), stride);
  const int64_t split = 200;
  std::vector<const float*> pointers;
  for (int32_t i : set) pointers.push_back((i < split ? alt.data() : base.data()) + i * ld);
  for (int64_t cols : {16, 48, 128}) {
    for (int rows = 1; rows <= 4; ++rows) {
      std::vector<float> out(4 * ldo, 7.0f);
      Avx512WeightedRowSums(pointers.data(), pointers.size(), w.data(), stride, rows, cols, out.data(), ldo);
      ASSERT_EQ(WeightedRowSumsMismatch(pointers.data(), pointers.size(), w.data(), stride, rows, cols, out.data(), 4,
                                        ldo, 7.0f),
                "")
          << cols << " cols, " << rows << " rows";
    }
  }
}

// The AVX-512 exponentials, scalings and lane sums equal the AVX2 ones bit for bit (values and sums), at
// lengths with and without a partial last vector; the maximum equals std::max_element's.
TEST(Avx2GemmTest, Avx512RowPassesEqualAvx2Bits) {
  if (!CpuHasAvx2Fma() || !CpuHasAvx512()) GTEST_SKIP() << "CPU lacks AVX2/FMA or AVX-512F";
  for (int64_t n : {1, 15, 16, 17, 100, 1203}) {
    std::vector<float> x = RandomFloats(n, 31);
    for (float& v : x) v *= 40.0f;  // arguments over [-40, 40] after the scale
    std::vector<float> a = x, b = x;
    EXPECT_EQ(Avx512ExpScaledLaneSum(a.data(), n, 0.7f, 1.5f), Avx2ExpScaledLaneSum(b.data(), n, 0.7f, 1.5f)) << n;
    EXPECT_EQ(a, b) << n;
    EXPECT_EQ(Avx512ScaleLaneSum(a.data(), n, 0.37f), Avx2ScaleLaneSum(b.data(), n, 0.37f)) << n;
    EXPECT_EQ(a, b) << n;
    EXPECT_EQ(Avx512Max(x.data(), n), *std::max_element(x.begin(), x.end())) << n;
  }
}

// exp(x * scale - offset) within 1e-6 relative of the double exp where the result is a normal float; n
// with a partial last vector; arguments from -100 (underflow: 0 or below FLT_MIN) to +20.
TEST(Avx2GemmTest, ExpScaledMatchesDoubleExp) {
  if (!CpuHasAvx2Fma()) GTEST_SKIP() << "CPU lacks AVX2/FMA";
  const int64_t n = 1203;
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = -100.0f + 120.0f * i / (n - 1);  // scale 0.5, offset -3: [-47, 13]
  std::vector<float> y = x;
  Avx2ExpScaled(y.data(), n, 0.5f, -3.0f);
  for (int64_t i = 0; i < n; ++i) {
    const double ref = std::exp(double{x[i] * 0.5f} + 3.0);
    ASSERT_NEAR(y[i], ref, 1e-6 * ref) << "x = " << x[i];
  }
  std::vector<float> tiny = {-87.0f, -88.0f, -90.0f, -200.0f, 0.0f};
  Avx2ExpScaled(tiny.data(), tiny.size(), 1.0f, 0.0f);
  EXPECT_NEAR(tiny[0], std::exp(-87.0), 1e-6 * std::exp(-87.0));  // still a normal float (FLT_MIN ~ e^-87.3)
  EXPECT_LE(tiny[2], 1.2e-38f);                                   // below FLT_MIN: denormal-sized or 0, never garbage
  EXPECT_LE(tiny[3], 1.2e-38f);
  EXPECT_GE(tiny[3], 0.0f);
  EXPECT_EQ(tiny[4], 1.0f);
}

// The same inputs give the same bits (fixed summation order).
TEST(Avx2GemmTest, Deterministic) {
  if (!CpuHasAvx2Fma()) GTEST_SKIP() << "CPU lacks AVX2/FMA";
  const std::vector<float> a = RandomFloats(40 * 128, 7), b = RandomFloats(700 * 128, 8);
  std::vector<float> c1(40 * 700), c2(40 * 700, 1.0f);
  Avx2GemmABt(a.data(), 128, b.data(), 128, 40, 700, 128, c1.data(), 700);
  Avx2GemmABt(a.data(), 128, b.data(), 128, 40, 700, 128, c2.data(), 700);
  EXPECT_EQ(c1, c2);
}

}  // namespace
}  // namespace kvsim
