// File: util/float_gemm.h
//
// Float matrix products (and the softmax exponentials) that take the AVX2+FMA kernels of util/avx2_gemm.h when UseAvx2Fma() (decided
// once per process; KVSIM_NO_AVX2=1 forces the portable path) and Eigen's portable GEMM otherwise. All
// matrices are row-major with explicit leading dimensions. Each path is deterministic; the two paths may
// differ in the last bits of a result (FMA, summation order).
//
// Thread-safe (no shared state).
//
// Example:
//   GemmABt(queries, d, keys, d, rows, n, d, logits, n);  // logits = queries keys^T
#ifndef KVSIM_UTIL_FLOAT_GEMM_H_
#define KVSIM_UTIL_FLOAT_GEMM_H_

#include <cstdint>

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

}  // namespace kvsim

#endif  // KVSIM_UTIL_FLOAT_GEMM_H_
