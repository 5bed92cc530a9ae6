#include "util/float_gemm.h"

#include <algorithm>
#include <limits>
#include <vector>

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

namespace {

// out[r * ldo + t] for r < num_rows and t in [from, cols): each a float sum in row order, a
// multiplication then an addition per term.
void ScalarWeightedSums(const float* const* rows, int64_t size, const float* w, int64_t stride, int num_rows,
                        int64_t from, int64_t cols, float* out, int64_t ldo) {
  for (int r = 0; r < num_rows; ++r) {
    for (int64_t t = from; t < cols; ++t) {
      float acc = 0;
      for (int64_t n = 0; n < size; ++n) {
        const float product = w[r * stride + n] * rows[n][t];
        acc = acc + product;
      }
      out[r * ldo + t] = acc;
    }
  }
}

// out[g * ldo + t] for G output rows and the `chunks` chunks of 4 L columns starting at t0: the same
// operations, in the same order, as ScalarWeightedSums, over chunks held in registers (Eigen's 4-float
// packets: SSE on x86-64, NEON elsewhere) for all G rows, so each chunk of a row is loaded once for the G
// rows and the partial sums are never stored. `chunk(c, n)` is the chunk c of row n.
template <int G, int L, typename ChunkFn>
void WeightedChunkSums(int64_t size, const float* w, int64_t stride, ChunkFn chunk, int64_t chunks, int64_t t0,
                       float* out, int64_t ldo) {
  using Eigen::internal::padd;
  using Eigen::internal::pmul;
  using Packet = Eigen::internal::Packet4f;
  for (int64_t c = 0; c < chunks; ++c) {
    Packet acc[G][L];  // G * L <= 8 registers: the loops over g and l are unrolled
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) {
#pragma GCC unroll 8
      for (int l = 0; l < L; ++l) acc[g][l] = Eigen::internal::pset1<Packet>(0.0f);
    }
    for (int64_t n = 0; n < size; ++n) {
      const float* v = chunk(c, n);
      Packet x[L];
#pragma GCC unroll 8
      for (int l = 0; l < L; ++l) x[l] = Eigen::internal::ploadu<Packet>(v + 4 * l);
#pragma GCC unroll 8
      for (int g = 0; g < G; ++g) {
        const Packet weight = Eigen::internal::pset1<Packet>(w[g * stride + n]);
#pragma GCC unroll 8
        for (int l = 0; l < L; ++l) acc[g][l] = padd(acc[g][l], pmul(weight, x[l]));
      }
    }
    const int64_t t = t0 + c * 4 * L;
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) {
#pragma GCC unroll 8
      for (int l = 0; l < L; ++l) Eigen::internal::pstoreu(out + g * ldo + t + 4 * l, acc[g][l]);
    }
  }
}

// The rows' first chunks * W columns gathered into `staging`, chunk-major (all rows' columns [W c,
// W (c + 1)) together), so that scattered rows are read once with many loads in flight and each pass of
// the sums streams contiguous memory.
template <int W>
const float* GatherChunkMajor(const float* const* rows, int64_t size, int64_t chunks, std::vector<float>* staging) {
  constexpr int64_t kAhead = 16;  // rows prefetched ahead of the gather
  staging->resize(static_cast<size_t>(chunks * size * W));
  float* buffer = staging->data();
  for (int64_t n = 0; n < size; ++n) {
    if (n + kAhead < size) {
      const char* ahead = reinterpret_cast<const char*>(rows[n + kAhead]);
      for (int64_t byte = 0; byte < chunks * W * static_cast<int64_t>(sizeof(float)); byte += 64) {
        __builtin_prefetch(ahead + byte);
      }
    }
    const float* v = rows[n];
    for (int64_t c = 0; c < chunks; ++c) {  // packet copies: no memmove call per chunk
#pragma GCC unroll 8
      for (int l = 0; l < W / 4; ++l) {
        Eigen::internal::pstoreu(buffer + (c * size + n) * W + 4 * l,
                                 Eigen::internal::ploadu<Eigen::internal::Packet4f>(v + c * W + 4 * l));
      }
    }
  }
  return buffer;
}

// G output rows without AVX-512: the rows gathered chunk-major, summed in chunks of 4 L columns (four
// output rows on a CPU with AVX2: Avx2WeightedSums4 over 16-column chunks, the same operations in the
// same order), then chunks of one packet and single columns.
template <int G>
void GatheredWeightedSums(const float* const* rows, int64_t size, const float* w, int64_t stride, int64_t cols,
                          float* out, int64_t ldo, std::vector<float>* staging) {
  constexpr int L = 8 / G;
  constexpr int kWidth = 4 * L;
  int64_t t0 = 0;
  if (G == 4 && UseAvx2Fma()) {
    const int64_t chunks = cols / 16;
    Avx2WeightedSums4(GatherChunkMajor<16>(rows, size, chunks, staging), size, chunks, w, stride, out, ldo);
    t0 = chunks * 16;
  } else {
    const int64_t chunks = cols / kWidth;
    const float* buffer = GatherChunkMajor<kWidth>(rows, size, chunks, staging);
    WeightedChunkSums<G, L>(
        size, w, stride, [&](int64_t c, int64_t n) { return buffer + (c * size + n) * kWidth; }, chunks, 0, out, ldo);
    t0 = chunks * kWidth;
  }
  const int64_t small_chunks = (cols - t0) / 4;
  WeightedChunkSums<G, 1>(
      size, w, stride, [&](int64_t c, int64_t n) { return rows[n] + t0 + 4 * c; }, small_chunks, t0, out, ldo);
  ScalarWeightedSums(rows, size, w, stride, G, t0 + 4 * small_chunks, cols, out, ldo);
}

}  // namespace

void WeightedRowSums(const float* const* rows, int64_t size, const float* w, int64_t stride, int num_rows, int64_t cols,
                     float* out, int64_t ldo, std::vector<float>* staging) {
  if (UseAvx512()) {  // the rows read in place
    const int64_t c16 = cols - cols % 16;
    for (int r = 0; r < num_rows; r += 4) {
      Avx512WeightedRowSums(rows, size, w + r * stride, stride, std::min(4, num_rows - r), c16, out + r * ldo, ldo);
    }
    ScalarWeightedSums(rows, size, w, stride, num_rows, c16, cols, out, ldo);
    return;
  }
  std::vector<float> local;
  if (staging == nullptr) staging = &local;
  int r = 0;
  for (; r + 4 <= num_rows; r += 4) {
    GatheredWeightedSums<4>(rows, size, w + r * stride, stride, cols, out + r * ldo, ldo, staging);
  }
  const float* const w_rest = w + r * stride;
  float* const out_rest = out + r * ldo;
  if (num_rows - r == 3) GatheredWeightedSums<3>(rows, size, w_rest, stride, cols, out_rest, ldo, staging);
  if (num_rows - r == 2) GatheredWeightedSums<2>(rows, size, w_rest, stride, cols, out_rest, ldo, staging);
  if (num_rows - r == 1) GatheredWeightedSums<1>(rows, size, w_rest, stride, cols, out_rest, ldo, staging);
}

void AddToDoubles(const float* x, int64_t n, double* sums) {
  if (UseAvx512()) {
    Avx512AddToDoubles(x, n, sums);
    return;
  }
  Eigen::Map<Eigen::ArrayXd>(sums, n) += Eigen::Map<const Eigen::ArrayXf>(x, n).cast<double>();
}

float MaxValue(const float* x, int64_t n) {
  if (UseAvx512()) return Avx512Max(x, n);
  return n == 0 ? -std::numeric_limits<float>::infinity() : Eigen::Map<const Eigen::ArrayXf>(x, n).maxCoeff();
}

int64_t FirstAbove(const float* x, int64_t from, int64_t n, float t) {
  if (UseAvx512()) return Avx512FirstAbove(x, from, n, t);
  int64_t i = from;  // blocks of 16 whose maximum is not above t are skipped whole
  while (i + 16 <= n && Eigen::Map<const Eigen::Array<float, 16, 1>>(x + i).maxCoeff() <= t) i += 16;
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
