// File: util/avx2_gemm.h
//
// Float matrix products with AVX2+FMA micro-kernels (and AVX-512 ones of identical results), for the
// compute-bound products of the quality path (attention logits Q K^T, outputs P V), and the row passes
// around them. The functions are compiled for AVX2+FMA (AVX-512F) by a per-function target attribute
// (the rest of the build stays baseline x86-64): call them only when UseAvx2Fma() (UseAvx512()) of
// util/cpu_features.h is true. The file holds intrinsics only (no templates, no inline library code), so
// no AVX2 or AVX-512 instruction can leak into code shared with the portable path.
//
// Each output element is one float sum in a fixed order (k ascending within each of 8 lanes' FMA chains
// for Avx2GemmABt, k ascending in blocks for Avx2GemmAB): deterministic for given inputs, but not bit-equal
// to Eigen's portable GEMM.
//
// Thread-safe (no shared state; scratch is on the stack or allocated per call).
//
// Example:
//   if (UseAvx2Fma()) Avx2GemmABt(q, d, k, d, rows, n, d, logits, n);  // logits = Q K^T
#ifndef KVSIM_UTIL_AVX2_GEMM_H_
#define KVSIM_UTIL_AVX2_GEMM_H_

#include <cstdint>

namespace kvsim {

// c[i * ldc + j] = sum over t < k of a[i * lda + t] * b[j * ldb + t], for i < m, j < n (C = A B^T, all
// row-major). REQUIRES: AVX2+FMA; k >= 1; c does not overlap a or b.
void Avx2GemmABt(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t m, int64_t n, int64_t k, float* c,
                 int64_t ldc);

// c[i * ldc + j] = sum over t < k of a[i * lda + t] * b[t * ldb + j], for i < m, j < n (C = A B, all
// row-major). REQUIRES: AVX2+FMA; k >= 1; c does not overlap a or b.
void Avx2GemmAB(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t m, int64_t n, int64_t k, float* c,
                int64_t ldc);

// The same two products with AVX-512 micro-kernels (12 x 32 tiles instead of 6 x 16): every element is
// computed by the same operations in the same order as by Avx2GemmABt / Avx2GemmAB, so the results are
// bit-identical to theirs. REQUIRES: AVX-512F (CpuHasAvx512()); as above otherwise.
void Avx512GemmABt(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t m, int64_t n, int64_t k, float* c,
                   int64_t ldc);
void Avx512GemmAB(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t m, int64_t n, int64_t k, float* c,
                  int64_t ldc);

// y[i] = sum over t < k of a[i * lda + t] * x[t], for i < m (matrix-vector, row-major).
// REQUIRES: AVX2+FMA; k >= 1.
void Avx2MatVec(const float* a, int64_t lda, const float* x, int64_t m, int64_t k, float* y);

// out[r * ldo + 16 c + t] = sum over n < size, in n order, of w[r * stride + n] * x[(c * size + n) * 16 + t]
// for r < 4, c < chunks, t < 16: four weighted sums of `size` rows held chunk-major (16 columns of every
// row, then the next 16). Each sum is a multiplication then an addition per term, no FMA, starting from
// 0: bit-identical to the same sums in any SIMD width without FMA. REQUIRES: AVX2.
void Avx2WeightedSums4(const float* x, int64_t size, int64_t chunks, const float* w, int64_t stride, float* out,
                       int64_t ldo);

// out[r * ldo + t] = sum over n < size, in n order, of w[r * stride + n] * rows[n][t] for r < num_rows
// (1 to 4) and t < cols (a multiple of 16): weighted sums of scattered rows read in place (the next rows
// prefetched), 64 columns of all output rows per pass. Each sum is a multiplication then an addition per
// term, no FMA, starting from 0: the bits of Avx2WeightedSums4 over the same rows gathered.
// REQUIRES: AVX-512F; num_rows in 1..4.
void Avx512WeightedRowSums(const float* const* rows, int64_t size, const float* w, int64_t stride, int num_rows,
                           int64_t cols, float* out, int64_t ldo);

// x[i] = exp(x[i] * scale - offset) for i < n, by the Cephes single-precision polynomial (relative error
// about 2e-7 for results above FLT_MIN; arguments below -88.37 give 0 or a denormal-sized value, above
// 88.37 are clamped). REQUIRES: AVX2+FMA.
void Avx2ExpScaled(float* x, int64_t n, float scale, float offset);

// LaneSum(x, n) of util/float_gemm.h (the double sum of x[0..n) in its 16-lane order), bit-identical to
// its portable code. REQUIRES: AVX2.
double Avx2LaneSum(const float* x, int64_t n);

// x[i] *= factor (float), then Avx2LaneSum(x, n), in one pass. REQUIRES: AVX2.
double Avx2ScaleLaneSum(float* x, int64_t n, float factor);

// Avx2ExpScaled(x, n, scale, offset), then Avx2LaneSum(x, n), in one pass. REQUIRES: AVX2+FMA.
double Avx2ExpScaledLaneSum(float* x, int64_t n, float scale, float offset);

// Avx2ExpScaledLaneSum and Avx2ScaleLaneSum sixteen lanes at a time: the same bits. REQUIRES: AVX-512F.
double Avx512ExpScaledLaneSum(float* x, int64_t n, float scale, float offset);
double Avx512ScaleLaneSum(float* x, int64_t n, float factor);

// The largest of x[0..n) (-infinity for n = 0; NaN is not expected). REQUIRES: AVX-512F.
float Avx512Max(const float* x, int64_t n);

// sums[i] += x[i] (the float converted exactly to double, one double addition) for i < n, eight at a time.
// REQUIRES: AVX-512F.
void Avx512AddToDoubles(const float* x, int64_t n, double* sums);

// Writes the indices i < n with x[i] >= t to index[0..count), ascending, and returns count: eight
// comparisons per instruction, one store per index found. REQUIRES: AVX2; index has room for n + 8.
int64_t Avx2IndicesAtLeast(const float* x, int64_t n, float t, int32_t* index);

// The same, sixteen comparisons per instruction, the indices of each sixteen packed by one compress.
// REQUIRES: AVX-512F; index has room for n + 16.
int64_t Avx512IndicesAtLeast(const float* x, int64_t n, float t, int32_t* index);

// The first i in [from, n) with x[i] > t, or n. REQUIRES: AVX-512F.
int64_t Avx512FirstAbove(const float* x, int64_t from, int64_t n, float t);

}  // namespace kvsim

#endif  // KVSIM_UTIL_AVX2_GEMM_H_
