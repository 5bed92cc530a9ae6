// File: util/float_gemm.h
//
// Float matrix products, and the row passes around them (softmax exponentials, row sums, maxima,
// threshold filters, weighted row sums), on the AVX2+FMA kernels of util/avx2_gemm.h when UseAvx2Fma()
// (decided once per process; KVSIM_NO_AVX2=1 forces the portable path), on their AVX-512 variants, of the
// same bits, where UseAvx512(), and on Eigen or plain loops otherwise. All matrices are row-major with
// explicit leading dimensions. Each path is deterministic; the SIMD and portable paths may differ in the
// last bits of a result (FMA, summation order) where a function does not say otherwise.
//
// Thread-safe (no shared state).
//
// Example:
//   GemmABt(queries, d, keys, d, rows, n, d, logits, n);  // logits = queries keys^T
#ifndef KVSIM_UTIL_FLOAT_GEMM_H_
#define KVSIM_UTIL_FLOAT_GEMM_H_

#include <cstdint>
#include <vector>

namespace kvsim {

// c[i * ldc + j] = sum over t < k of a[i * lda + t] * b[j * ldb + t] for i < m, j < n (C = A B^T).
// REQUIRES: k >= 1; c does not overlap a or b.
void GemmABt(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t m, int64_t n, int64_t k, float* c,
             int64_t ldc);

// c[i * ldc + j] = sum over t < k of a[i * lda + t] * b[t * ldb + j] for i < m, j < n (C = A B).
// REQUIRES: k >= 1; c does not overlap a or b.
void GemmAB(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t m, int64_t n, int64_t k, float* c,
            int64_t ldc);

// x[i] = exp(x[i] * scale - offset) for i < n (softmax numerators). The AVX2 path uses its own
// polynomial (util/avx2_gemm.h), the portable one Eigen's exp: results may differ in the last bits.
void ExpScaled(float* x, int64_t n, float scale, float offset);

// The sum of x[0..n) in double, in one fixed order on both paths (bit-identical results): 16 running
// sums p[l] += x[i] for i = 16 m + l over the n - n % 16 leading values, combined as
// c[l] = (p[l] + p[8 + l]) + (p[4 + l] + p[12 + l]) for l < 4, then (c[0] + c[2]) + (c[1] + c[3]), then the
// remaining values added one at a time in index order. Sixteen independent additions per step instead of
// one dependency chain: about ten times the speed of a plain loop, with the same double accuracy.
double LaneSum(const float* x, int64_t n);

// x[i] *= factor (a float multiplication), then LaneSum(x, n); one pass over x.
double ScaleLaneSum(float* x, int64_t n, float factor);

// ExpScaled(x, n, scale, offset), then LaneSum(x, n); one pass over x on the AVX2 path.
double ExpScaledLaneSum(float* x, int64_t n, float scale, float offset);

// out[r * ldo + t] = sum over n < size, in n order, of w[r * stride + n] * rows[n][t] for r < num_rows and
// t < cols, each term a float multiplication then an addition, from 0: the same bits on every path.
// AVX-512 reads the rows in place (Avx512WeightedRowSums); the other paths gather them chunk-major into
// *staging first (grown as needed and kept by the caller between calls; null: a buffer per call).
void WeightedRowSums(const float* const* rows, int64_t size, const float* w, int64_t stride, int num_rows, int64_t cols,
                     float* out, int64_t ldo, std::vector<float>* staging = nullptr);

// sums[i] += x[i] for i < n: each float converted exactly to double and added once, so every path gives
// the same bits (AVX-512: eight additions per instruction).
void AddToDoubles(const float* x, int64_t n, double* sums);

// The largest of x[0..n) (-infinity for n = 0), the same on both paths. NaN is not expected.
float MaxValue(const float* x, int64_t n);

// The first i in [from, n) with x[i] > t, or n (the same on both paths; AVX-512: sixteen comparisons per
// instruction). NaN never qualifies.
int64_t FirstAbove(const float* x, int64_t from, int64_t n, float t);

// Writes the indices i < n with x[i] >= t to index[0..count), ascending, and returns count (the same on
// both paths). REQUIRES: index has room for n + 16 entries.
int64_t IndicesAtLeast(const float* x, int64_t n, float t, int32_t* index);

}  // namespace kvsim

#endif  // KVSIM_UTIL_FLOAT_GEMM_H_
