#include "util/float_gemm.h"

#include <algorithm>
#include <limits>

#include "Eigen/Core"
#include "util/avx2_gemm.h"
#include "util/cpu_features.h"

namespace kvsim {
namespace {

using RowMatrixXf = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Stride = Eigen::OuterStride<>;
using ConstMap = Eigen::Map<const RowMatrixXf, 0, Stride>;
using Map = Eigen::Map<RowMatrixXf, 0, Stride>;

}  // namespace

void GemmABt(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t m, int64_t n, int64_t k, float* c,
             int64_t ldc) {
  if (UseAvx512()) {
    Avx512GemmABt(a, lda, b, ldb, m, n, k, c, ldc);
    return;
  }
  if (UseAvx2Fma()) {
    Avx2GemmABt(a, lda, b, ldb, m, n, k, c, ldc);
    return;
  }
  Map(c, m, n, Stride(ldc)).noalias() = ConstMap(a, m, k, Stride(lda)) * ConstMap(b, n, k, Stride(ldb)).transpose();
}

void GemmAB(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t m, int64_t n, int64_t k, float* c,
            int64_t ldc) {
  if (UseAvx512()) {
    Avx512GemmAB(a, lda, b, ldb, m, n, k, c, ldc);
    return;
  }
  if (UseAvx2Fma()) {
    Avx2GemmAB(a, lda, b, ldb, m, n, k, c, ldc);
    return;
  }
  Map(c, m, n, Stride(ldc)).noalias() = ConstMap(a, m, k, Stride(lda)) * ConstMap(b, k, n, Stride(ldb));
}

void ExpScaled(float* x, int64_t n, float scale, float offset) {
  if (UseAvx2Fma()) {
    Avx2ExpScaled(x, n, scale, offset);
    return;
  }
  Eigen::Map<Eigen::ArrayXf> a(x, n);
  a = (a * scale - offset).exp();
}

double LaneSum(const float* x, int64_t n) {
  if (UseAvx2Fma()) return Avx2LaneSum(x, n);
  double p[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int l = 0; l < 16; ++l) p[l] += x[i + l];
  }
  double c[4];
  for (int l = 0; l < 4; ++l) c[l] = (p[l] + p[8 + l]) + (p[4 + l] + p[12 + l]);
  double total = (c[0] + c[2]) + (c[1] + c[3]);
  for (; i < n; ++i) total += x[i];
  return total;
}

double ScaleLaneSum(float* x, int64_t n, float factor) {
  if (UseAvx512()) return Avx512ScaleLaneSum(x, n, factor);
  if (UseAvx2Fma()) return Avx2ScaleLaneSum(x, n, factor);
  Eigen::Map<Eigen::ArrayXf>(x, n) *= factor;
  return LaneSum(x, n);
}

double ExpScaledLaneSum(float* x, int64_t n, float scale, float offset) {
  if (UseAvx512()) return Avx512ExpScaledLaneSum(x, n, scale, offset);
  if (UseAvx2Fma()) return Avx2ExpScaledLaneSum(x, n, scale, offset);
  ExpScaled(x, n, scale, offset);
  return LaneSum(x, n);
}

void WeightedRowSums(const float* const* rows, int64_t size, const float* w, int64_t stride, int num_rows,
                     int64_t cols, float* out, int64_t ldo) {
  int64_t t0 = 0;
  if (UseAvx512()) {
    t0 = cols - cols % 16;
    for (int r = 0; r < num_rows; r += 4) {
      Avx512WeightedRowSums(rows, size, w + r * stride, stride, std::min(4, num_rows - r), t0, out + r * ldo, ldo);
    }
  }
  for (int r = 0; r < num_rows; ++r) {
    for (int64_t t = t0; t < cols; ++t) {
      float acc = 0;
      for (int64_t n = 0; n < size; ++n) {
        const float product = w[r * stride + n] * rows[n][t];
        acc = acc + product;
      }
      out[r * ldo + t] = acc;
    }
  }
}

float MaxValue(const float* x, int64_t n) {
  if (UseAvx512()) return Avx512Max(x, n);
  return n == 0 ? -std::numeric_limits<float>::infinity() : Eigen::Map<const Eigen::ArrayXf>(x, n).maxCoeff();
}

int64_t FirstAbove(const float* x, int64_t from, int64_t n, float t) {
  if (UseAvx512()) return Avx512FirstAbove(x, from, n, t);
  int64_t i = from;
  for (; i + 16 <= n; i += 16) {  // blocks of 16 whose maximum is not above t are skipped whole
    if (Eigen::Map<const Eigen::Array<float, 16, 1>>(x + i).maxCoeff() <= t) continue;
    break;
  }
  for (; i < n; ++i) {
    if (x[i] > t) return i;
  }
  return n;
}

int64_t IndicesAtLeast(const float* x, int64_t n, float t, int32_t* index) {
  if (UseAvx512()) return Avx512IndicesAtLeast(x, n, t, index);
  if (UseAvx2Fma()) return Avx2IndicesAtLeast(x, n, t, index);
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {  // branch-free: the index is written anyway, kept if x[i] >= t
    index[count] = static_cast<int32_t>(i);
    count += x[i] >= t ? 1 : 0;
  }
  return count;
}

}  // namespace kvsim
