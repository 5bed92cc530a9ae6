#include "util/float_gemm.h"

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
  if (UseAvx2Fma()) {
    Avx2GemmABt(a, lda, b, ldb, m, n, k, c, ldc);
    return;
  }
  Map(c, m, n, Stride(ldc)).noalias() = ConstMap(a, m, k, Stride(lda)) * ConstMap(b, n, k, Stride(ldb)).transpose();
}

void GemmAB(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t m, int64_t n, int64_t k, float* c,
            int64_t ldc) {
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

}  // namespace kvsim
