// AVX2+FMA kernels. Every function here carries the target attribute and uses only <immintrin.h>
// intrinsics and plain loops: no templates or inline library code (which the linker could merge with a
// baseline-ISA copy compiled elsewhere). Scratch comes from new[]/delete[].
#include "util/avx2_gemm.h"

#include <immintrin.h>

#define KVSIM_AVX2 __attribute__((target("avx2,fma")))
#define KVSIM_AVX512 __attribute__((target("avx512f,avx2,fma")))

namespace kvsim {
namespace {

constexpr int kMr = 6;      // AVX2: rows of A per micro-tile
constexpr int kNr = 16;     // AVX2: columns of C per micro-tile (two 8-float registers)
constexpr int kMr512 = 12;  // AVX-512: rows of A per micro-tile
constexpr int kNr512 = 32;  // AVX-512: columns of C per micro-tile (two 16-float registers)
constexpr int kMaxMr = 12;
constexpr int kMaxNr = 32;
constexpr int64_t kNc = 256;  // GemmABt: rows of B packed at a time (a multiple of every kNr)
constexpr int64_t kKc = 512;  // GemmAB: rows of B (the summed dimension) per pass

// A micro-kernel computes the mr x nr tile of C (mr <= its rows, nr <= its columns):
// acc[r][j] += a[r][t] * panel[t * pstride + j] for t in [0, k), one FMA chain per element in t order
// from 0, then writes the tile to c (row stride ldc), added to what c holds when `accumulate`.
using MicroKernelFn = void (*)(const float* const* a, const float* panel, int64_t pstride, int64_t k, float* c,
                               int64_t ldc, int mr, int nr, bool accumulate);

// The tile of a micro-kernel's accumulators, stored to a row-major buffer of kMaxNr-float rows, written
// to c: rows < mr, columns < nr (an addition to c's contents when `accumulate`).
KVSIM_AVX2 void WriteTile(const float (*tile)[kMaxNr], float* c, int64_t ldc, int mr, int nr, bool accumulate) {
  for (int r = 0; r < mr; ++r) {
    float* out = c + r * ldc;
    int j = 0;
    for (; j + 8 <= nr; j += 8) {
      __m256 v = _mm256_load_ps(tile[r] + j);
      if (accumulate) v = _mm256_add_ps(_mm256_loadu_ps(out + j), v);
      _mm256_storeu_ps(out + j, v);
    }
    for (; j < nr; ++j) out[j] = accumulate ? out[j] + tile[r][j] : tile[r][j];
  }
}

// The AVX2 kernel: 6 x 16.
KVSIM_AVX2 void MicroKernel(const float* const* a, const float* panel, int64_t pstride, int64_t k, float* c,
                            int64_t ldc, int mr, int nr, bool accumulate) {
  __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps(), c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps(),
         c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps(), c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps(),
         c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps(), c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
  const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4], *a5 = a[5];
  for (int64_t t = 0; t < k; ++t) {
    const __m256 b0 = _mm256_loadu_ps(panel + t * pstride);
    const __m256 b1 = _mm256_loadu_ps(panel + t * pstride + 8);
    __m256 x = _mm256_broadcast_ss(a0 + t);
    c00 = _mm256_fmadd_ps(x, b0, c00);
    c01 = _mm256_fmadd_ps(x, b1, c01);
    x = _mm256_broadcast_ss(a1 + t);
    c10 = _mm256_fmadd_ps(x, b0, c10);
    c11 = _mm256_fmadd_ps(x, b1, c11);
    x = _mm256_broadcast_ss(a2 + t);
    c20 = _mm256_fmadd_ps(x, b0, c20);
    c21 = _mm256_fmadd_ps(x, b1, c21);
    x = _mm256_broadcast_ss(a3 + t);
    c30 = _mm256_fmadd_ps(x, b0, c30);
    c31 = _mm256_fmadd_ps(x, b1, c31);
    x = _mm256_broadcast_ss(a4 + t);
    c40 = _mm256_fmadd_ps(x, b0, c40);
    c41 = _mm256_fmadd_ps(x, b1, c41);
    x = _mm256_broadcast_ss(a5 + t);
    c50 = _mm256_fmadd_ps(x, b0, c50);
    c51 = _mm256_fmadd_ps(x, b1, c51);
  }
  if (mr == kMr && nr == kNr && !accumulate) {  // a full tile: straight to C
    _mm256_storeu_ps(c, c00);
    _mm256_storeu_ps(c + 8, c01);
    _mm256_storeu_ps(c + ldc, c10);
    _mm256_storeu_ps(c + ldc + 8, c11);
    _mm256_storeu_ps(c + 2 * ldc, c20);
    _mm256_storeu_ps(c + 2 * ldc + 8, c21);
    _mm256_storeu_ps(c + 3 * ldc, c30);
    _mm256_storeu_ps(c + 3 * ldc + 8, c31);
    _mm256_storeu_ps(c + 4 * ldc, c40);
    _mm256_storeu_ps(c + 4 * ldc + 8, c41);
    _mm256_storeu_ps(c + 5 * ldc, c50);
    _mm256_storeu_ps(c + 5 * ldc + 8, c51);
    return;
  }
  alignas(32) float tile[kMr][kMaxNr];
  _mm256_store_ps(tile[0], c00);
  _mm256_store_ps(tile[0] + 8, c01);
  _mm256_store_ps(tile[1], c10);
  _mm256_store_ps(tile[1] + 8, c11);
  _mm256_store_ps(tile[2], c20);
  _mm256_store_ps(tile[2] + 8, c21);
  _mm256_store_ps(tile[3], c30);
  _mm256_store_ps(tile[3] + 8, c31);
  _mm256_store_ps(tile[4], c40);
  _mm256_store_ps(tile[4] + 8, c41);
  _mm256_store_ps(tile[5], c50);
  _mm256_store_ps(tile[5] + 8, c51);
  WriteTile(tile, c, ldc, mr, nr, accumulate);
}

// The AVX-512 kernel: 12 x 32, the same arithmetic per element as MicroKernel (so the same bits).
KVSIM_AVX512 void MicroKernel512(const float* const* a, const float* panel, int64_t pstride, int64_t k, float* c,
                                 int64_t ldc, int mr, int nr, bool accumulate) {
  __m512 acc[kMr512][2];
#pragma GCC unroll 12
  for (int r = 0; r < kMr512; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t t = 0; t < k; ++t) {
    const __m512 b0 = _mm512_loadu_ps(panel + t * pstride);
    const __m512 b1 = _mm512_loadu_ps(panel + t * pstride + 16);
#pragma GCC unroll 12
    for (int r = 0; r < kMr512; ++r) {
      const __m512 x = _mm512_set1_ps(a[r][t]);
      acc[r][0] = _mm512_fmadd_ps(x, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(x, b1, acc[r][1]);
    }
  }
  if (mr == kMr512 && nr == kNr512 && !accumulate) {  // a full tile: straight to C
#pragma GCC unroll 12
    for (int r = 0; r < kMr512; ++r) {
      _mm512_storeu_ps(c + r * ldc, acc[r][0]);
      _mm512_storeu_ps(c + r * ldc + 16, acc[r][1]);
    }
    return;
  }
  alignas(64) float tile[kMr512][kMaxNr];
#pragma GCC unroll 12
  for (int r = 0; r < kMr512; ++r) {
    _mm512_store_ps(tile[r], acc[r][0]);
    _mm512_store_ps(tile[r] + 16, acc[r][1]);
  }
  WriteTile(tile, c, ldc, mr, nr, accumulate);
}

// Row pointers of A for rows [i0, i0 + mr_max), rows past m pointing at `zeros`.
KVSIM_AVX2 void RowPointers(const float* a, int64_t lda, int64_t i0, int64_t m, const float* zeros, int mr_max,
                            const float** rows) {
  for (int r = 0; r < mr_max; ++r) rows[r] = i0 + r < m ? a + (i0 + r) * lda : zeros;
}

// panel[t * width + jj] = src[jj][t] for t < k, jj < width (a multiple of 8): 8 x 8 transposes per 8
// values of t.
KVSIM_AVX2 void PackPanel(const float* const* src, int64_t k, int width, float* panel) {
  const int64_t k8 = k - k % 8;
  for (int64_t t = 0; t < k8; t += 8) {
    for (int eighth = 0; eighth < width / 8; ++eighth) {
      const float* const* s = src + 8 * eighth;
      const __m256 r0 = _mm256_loadu_ps(s[0] + t), r1 = _mm256_loadu_ps(s[1] + t), r2 = _mm256_loadu_ps(s[2] + t),
                   r3 = _mm256_loadu_ps(s[3] + t), r4 = _mm256_loadu_ps(s[4] + t), r5 = _mm256_loadu_ps(s[5] + t),
                   r6 = _mm256_loadu_ps(s[6] + t), r7 = _mm256_loadu_ps(s[7] + t);
      const __m256 u0 = _mm256_unpacklo_ps(r0, r1), u1 = _mm256_unpackhi_ps(r0, r1);
      const __m256 u2 = _mm256_unpacklo_ps(r2, r3), u3 = _mm256_unpackhi_ps(r2, r3);
      const __m256 u4 = _mm256_unpacklo_ps(r4, r5), u5 = _mm256_unpackhi_ps(r4, r5);
      const __m256 u6 = _mm256_unpacklo_ps(r6, r7), u7 = _mm256_unpackhi_ps(r6, r7);
      const __m256 v0 = _mm256_shuffle_ps(u0, u2, 0x44), v1 = _mm256_shuffle_ps(u0, u2, 0xEE);
      const __m256 v2 = _mm256_shuffle_ps(u1, u3, 0x44), v3 = _mm256_shuffle_ps(u1, u3, 0xEE);
      const __m256 v4 = _mm256_shuffle_ps(u4, u6, 0x44), v5 = _mm256_shuffle_ps(u4, u6, 0xEE);
      const __m256 v6 = _mm256_shuffle_ps(u5, u7, 0x44), v7 = _mm256_shuffle_ps(u5, u7, 0xEE);
      float* out = panel + t * width + 8 * eighth;
      _mm256_storeu_ps(out + 0 * width, _mm256_permute2f128_ps(v0, v4, 0x20));
      _mm256_storeu_ps(out + 1 * width, _mm256_permute2f128_ps(v1, v5, 0x20));
      _mm256_storeu_ps(out + 2 * width, _mm256_permute2f128_ps(v2, v6, 0x20));
      _mm256_storeu_ps(out + 3 * width, _mm256_permute2f128_ps(v3, v7, 0x20));
      _mm256_storeu_ps(out + 4 * width, _mm256_permute2f128_ps(v0, v4, 0x31));
      _mm256_storeu_ps(out + 5 * width, _mm256_permute2f128_ps(v1, v5, 0x31));
      _mm256_storeu_ps(out + 6 * width, _mm256_permute2f128_ps(v2, v6, 0x31));
      _mm256_storeu_ps(out + 7 * width, _mm256_permute2f128_ps(v3, v7, 0x31));
    }
  }
  for (int64_t t = k8; t < k; ++t) {
    for (int jj = 0; jj < width; ++jj) panel[t * width + jj] = src[jj][t];
  }
}

KVSIM_AVX2 float HorizontalSum(__m256 v) {
  const __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 y = _mm_add_ps(x, _mm_movehl_ps(x, x));
  return _mm_cvtss_f32(_mm_add_ss(y, _mm_shuffle_ps(y, y, 1)));
}

// C = A B^T with an mr_max x nr_max micro-kernel.
KVSIM_AVX2 void GemmABtWith(MicroKernelFn kernel, int mr_max, int nr_max, const float* a, int64_t lda, const float* b,
                            int64_t ldb, int64_t m, int64_t n, int64_t k, float* c, int64_t ldc) {
  // B's rows [j0, j0 + kNc) are packed transposed in panels of nr_max (zero-padded): panel p holds
  // packed[p * k * nr_max + t * nr_max + jj] = b[(j0 + nr_max p + jj) * ldb + t].
  float* packed = new float[kNc * k];
  float* zeros = new float[k];
  for (int64_t t = 0; t < k; ++t) zeros[t] = 0;
  const float* rows[kMaxMr];
  for (int64_t j0 = 0; j0 < n; j0 += kNc) {
    const int64_t nc = n - j0 < kNc ? n - j0 : kNc;
    const int64_t panels = (nc + nr_max - 1) / nr_max;
    for (int64_t p = 0; p < panels; ++p) {
      const float* src[kMaxNr];
      for (int jj = 0; jj < nr_max; ++jj) {
        const int64_t j = j0 + p * nr_max + jj;
        src[jj] = j < n ? b + j * ldb : zeros;
      }
      PackPanel(src, k, nr_max, packed + p * k * nr_max);
    }
    for (int64_t i0 = 0; i0 < m; i0 += mr_max) {
      RowPointers(a, lda, i0, m, zeros, mr_max, rows);
      const int mr = m - i0 < mr_max ? static_cast<int>(m - i0) : mr_max;
      for (int64_t p = 0; p < panels; ++p) {
        const int64_t jc = j0 + p * nr_max;
        const int nr = n - jc < nr_max ? static_cast<int>(n - jc) : nr_max;
        kernel(rows, packed + p * k * nr_max, nr_max, k, c + i0 * ldc + jc, ldc, mr, nr, false);
      }
    }
  }
  delete[] zeros;
  delete[] packed;
}

// C = A B with an mr_max x nr_max micro-kernel.
KVSIM_AVX2 void GemmABWith(MicroKernelFn kernel, int mr_max, int nr_max, const float* a, int64_t lda, const float* b,
                           int64_t ldb, int64_t m, int64_t n, int64_t k, float* c, int64_t ldc) {
  // Full panels are read from B in place; the last partial one is copied, zero-padded.
  const int64_t full = n / nr_max;
  const int nr_last = static_cast<int>(n - full * nr_max);
  float* last = nr_last > 0 ? new float[kKc * nr_max] : nullptr;
  float* zeros = new float[k];
  for (int64_t t = 0; t < k; ++t) zeros[t] = 0;
  const float* rows[kMaxMr];
  const float* shifted[kMaxMr];
  for (int64_t t0 = 0; t0 < k; t0 += kKc) {
    const int64_t kc = k - t0 < kKc ? k - t0 : kKc;
    if (last != nullptr) {
      for (int64_t t = 0; t < kc; ++t) {
        for (int jj = 0; jj < nr_max; ++jj) {
          last[t * nr_max + jj] = jj < nr_last ? b[(t0 + t) * ldb + full * nr_max + jj] : 0;
        }
      }
    }
    for (int64_t i0 = 0; i0 < m; i0 += mr_max) {
      RowPointers(a, lda, i0, m, zeros, mr_max, rows);
      for (int r = 0; r < mr_max; ++r) shifted[r] = rows[r] == zeros ? zeros : rows[r] + t0;
      const int mr = m - i0 < mr_max ? static_cast<int>(m - i0) : mr_max;
      for (int64_t p = 0; p < full; ++p) {
        kernel(shifted, b + t0 * ldb + p * nr_max, ldb, kc, c + i0 * ldc + p * nr_max, ldc, mr, nr_max, t0 > 0);
      }
      if (last != nullptr) {
        kernel(shifted, last, nr_max, kc, c + i0 * ldc + full * nr_max, ldc, mr, nr_last, t0 > 0);
      }
    }
  }
  delete[] zeros;
  delete[] last;
}

}  // namespace

KVSIM_AVX2 void Avx2GemmABt(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t m, int64_t n, int64_t k,
                            float* c, int64_t ldc) {
  GemmABtWith(MicroKernel, kMr, kNr, a, lda, b, ldb, m, n, k, c, ldc);
}

KVSIM_AVX2 void Avx2GemmAB(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t m, int64_t n, int64_t k,
                           float* c, int64_t ldc) {
  GemmABWith(MicroKernel, kMr, kNr, a, lda, b, ldb, m, n, k, c, ldc);
}

KVSIM_AVX512 void Avx512GemmABt(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t m, int64_t n,
                                int64_t k, float* c, int64_t ldc) {
  GemmABtWith(MicroKernel512, kMr512, kNr512, a, lda, b, ldb, m, n, k, c, ldc);
}

KVSIM_AVX512 void Avx512GemmAB(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t m, int64_t n,
                               int64_t k, float* c, int64_t ldc) {
  GemmABWith(MicroKernel512, kMr512, kNr512, a, lda, b, ldb, m, n, k, c, ldc);
}

KVSIM_AVX2 void Avx2MatVec(const float* a, int64_t lda, const float* x, int64_t m, int64_t k, float* y) {
  // Four rows at a time, two 8-float accumulators each (eight independent FMA chains), then the rest.
  const int64_t k16 = k - k % 16;
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) {
    const float *r0 = a + i * lda, *r1 = r0 + lda, *r2 = r1 + lda, *r3 = r2 + lda;
    __m256 s00 = _mm256_setzero_ps(), s01 = _mm256_setzero_ps(), s10 = _mm256_setzero_ps(), s11 = _mm256_setzero_ps(),
           s20 = _mm256_setzero_ps(), s21 = _mm256_setzero_ps(), s30 = _mm256_setzero_ps(), s31 = _mm256_setzero_ps();
    for (int64_t t = 0; t < k16; t += 16) {
      const __m256 x0 = _mm256_loadu_ps(x + t), x1 = _mm256_loadu_ps(x + t + 8);
      s00 = _mm256_fmadd_ps(_mm256_loadu_ps(r0 + t), x0, s00);
      s01 = _mm256_fmadd_ps(_mm256_loadu_ps(r0 + t + 8), x1, s01);
      s10 = _mm256_fmadd_ps(_mm256_loadu_ps(r1 + t), x0, s10);
      s11 = _mm256_fmadd_ps(_mm256_loadu_ps(r1 + t + 8), x1, s11);
      s20 = _mm256_fmadd_ps(_mm256_loadu_ps(r2 + t), x0, s20);
      s21 = _mm256_fmadd_ps(_mm256_loadu_ps(r2 + t + 8), x1, s21);
      s30 = _mm256_fmadd_ps(_mm256_loadu_ps(r3 + t), x0, s30);
      s31 = _mm256_fmadd_ps(_mm256_loadu_ps(r3 + t + 8), x1, s31);
    }
    float sum0 = HorizontalSum(_mm256_add_ps(s00, s01)), sum1 = HorizontalSum(_mm256_add_ps(s10, s11));
    float sum2 = HorizontalSum(_mm256_add_ps(s20, s21)), sum3 = HorizontalSum(_mm256_add_ps(s30, s31));
    for (int64_t t = k16; t < k; ++t) {
      sum0 += r0[t] * x[t];
      sum1 += r1[t] * x[t];
      sum2 += r2[t] * x[t];
      sum3 += r3[t] * x[t];
    }
    y[i] = sum0;
    y[i + 1] = sum1;
    y[i + 2] = sum2;
    y[i + 3] = sum3;
  }
  for (; i < m; ++i) {
    const float* row = a + i * lda;
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    for (int64_t t = 0; t < k16; t += 16) {
      s0 = _mm256_fmadd_ps(_mm256_loadu_ps(row + t), _mm256_loadu_ps(x + t), s0);
      s1 = _mm256_fmadd_ps(_mm256_loadu_ps(row + t + 8), _mm256_loadu_ps(x + t + 8), s1);
    }
    float sum = HorizontalSum(_mm256_add_ps(s0, s1));
    for (int64_t t = k16; t < k; ++t) sum += row[t] * x[t];
    y[i] = sum;
  }
}

namespace {

// The Cephes single-precision exp polynomial, shared by Exp8 and Exp16 (the same operations per lane).
constexpr float kExpBound = 88.3762626647949f;  // |x| clamp
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;  // ln 2 in two parts
constexpr float kExpP[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                            4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

KVSIM_AVX2 __m256 Exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-kExpBound)), _mm256_set1_ps(kExpBound));
  // exp(x) = 2^m exp(r), m = round(x / ln 2), r = x - m ln 2 (ln 2 in two parts).
  const __m256 m = _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(kLog2e), _mm256_set1_ps(0.5f)));
  __m256 r = _mm256_fnmadd_ps(m, _mm256_set1_ps(kLn2Hi), x);
  r = _mm256_fnmadd_ps(m, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kExpP[0]);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpP[1]));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpP[2]));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpP[3]));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpP[4]));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpP[5]));
  const __m256 r2 = _mm256_mul_ps(r, r);
  p = _mm256_fmadd_ps(p, r2, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  // 2^m for m in [-127, 128] as two powers of two (each exponent field in range, so both ends stay exact).
  const __m256i e = _mm256_cvtps_epi32(m);
  const __m256i half = _mm256_srai_epi32(e, 1);
  const __m256 two_half = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, _mm256_set1_epi32(127)), 23));
  const __m256 two_rest =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(e, half), _mm256_set1_epi32(127)), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, two_half), two_rest);
}

}  // namespace

KVSIM_AVX2 void Avx2ExpScaled(float* x, int64_t n, float scale, float offset) {
  const __m256 s = _mm256_set1_ps(scale), o = _mm256_set1_ps(offset);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(x + i, Exp8(_mm256_fmsub_ps(_mm256_loadu_ps(x + i), s, o)));
  }
  if (i < n) {
    alignas(32) float tail[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t t = i; t < n; ++t) tail[t - i] = x[t];
    _mm256_store_ps(tail, Exp8(_mm256_fmsub_ps(_mm256_load_ps(tail), s, o)));
    for (int64_t t = i; t < n; ++t) x[t] = tail[t - i];
  }
}

namespace {

// The 16 running double sums of LaneSum: lanes 0-3 in a[0], 4-7 in a[1], 8-11 in a[2], 12-15 in a[3].
struct LaneSums16 {
  __m256d a[4];

  KVSIM_AVX2 LaneSums16() {
    for (__m256d& lanes : a) lanes = _mm256_setzero_pd();
  }

  // Adds x[0..16) (eight floats from each vector) to lanes 0..15.
  KVSIM_AVX2 void Add(__m256 lo, __m256 hi) {
    a[0] = _mm256_add_pd(a[0], _mm256_cvtps_pd(_mm256_castps256_ps128(lo)));
    a[1] = _mm256_add_pd(a[1], _mm256_cvtps_pd(_mm256_extractf128_ps(lo, 1)));
    a[2] = _mm256_add_pd(a[2], _mm256_cvtps_pd(_mm256_castps256_ps128(hi)));
    a[3] = _mm256_add_pd(a[3], _mm256_cvtps_pd(_mm256_extractf128_ps(hi, 1)));
  }

  // ((p[l] + p[8 + l]) + (p[4 + l] + p[12 + l])) = c[l], then (c[0] + c[2]) + (c[1] + c[3]).
  KVSIM_AVX2 double Total() const {
    const __m256d c = _mm256_add_pd(_mm256_add_pd(a[0], a[2]), _mm256_add_pd(a[1], a[3]));
    const __m128d d = _mm_add_pd(_mm256_castpd256_pd128(c), _mm256_extractf128_pd(c, 1));
    return _mm_cvtsd_f64(_mm_add_sd(d, _mm_unpackhi_pd(d, d)));
  }
};

}  // namespace

KVSIM_AVX2 double Avx2LaneSum(const float* x, int64_t n) {
  LaneSums16 sums;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) sums.Add(_mm256_loadu_ps(x + i), _mm256_loadu_ps(x + i + 8));
  double total = sums.Total();
  for (; i < n; ++i) total += x[i];
  return total;
}

KVSIM_AVX2 double Avx2ScaleLaneSum(float* x, int64_t n, float factor) {
  const __m256 f = _mm256_set1_ps(factor);
  LaneSums16 sums;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 lo = _mm256_mul_ps(_mm256_loadu_ps(x + i), f), hi = _mm256_mul_ps(_mm256_loadu_ps(x + i + 8), f);
    _mm256_storeu_ps(x + i, lo);
    _mm256_storeu_ps(x + i + 8, hi);
    sums.Add(lo, hi);
  }
  double total = sums.Total();
  for (; i < n; ++i) total += (x[i] *= factor);
  return total;
}

KVSIM_AVX2 double Avx2ExpScaledLaneSum(float* x, int64_t n, float scale, float offset) {
  const __m256 s = _mm256_set1_ps(scale), o = _mm256_set1_ps(offset);
  LaneSums16 sums;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 lo = Exp8(_mm256_fmsub_ps(_mm256_loadu_ps(x + i), s, o));
    const __m256 hi = Exp8(_mm256_fmsub_ps(_mm256_loadu_ps(x + i + 8), s, o));
    _mm256_storeu_ps(x + i, lo);
    _mm256_storeu_ps(x + i + 8, hi);
    sums.Add(lo, hi);
  }
  double total = sums.Total();
  Avx2ExpScaled(x + i, n - i, scale, offset);
  for (; i < n; ++i) total += x[i];
  return total;
}

namespace {

// Exp8 with sixteen lanes: the same operations on each lane (the same bits).
KVSIM_AVX512 __m512 Exp16(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-kExpBound)), _mm512_set1_ps(kExpBound));
  const __m512 m = _mm512_roundscale_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(kLog2e), _mm512_set1_ps(0.5f)),
                                        _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(m, _mm512_set1_ps(kLn2Hi), x);
  r = _mm512_fnmadd_ps(m, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kExpP[0]);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpP[1]));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpP[2]));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpP[3]));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpP[4]));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpP[5]));
  const __m512 r2 = _mm512_mul_ps(r, r);
  p = _mm512_fmadd_ps(p, r2, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  const __m512i e = _mm512_cvtps_epi32(m);
  const __m512i half = _mm512_srai_epi32(e, 1);
  const __m512 two_half = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(half, _mm512_set1_epi32(127)), 23));
  const __m512 two_rest =
      _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_sub_epi32(e, half), _mm512_set1_epi32(127)), 23));
  return _mm512_mul_ps(_mm512_mul_ps(p, two_half), two_rest);
}

// LaneSums16 in two 8-double registers: lanes 0-7 in a[0], 8-15 in a[1]; the same sums and combination.
struct LaneSums16x512 {
  __m512d a[2];

  KVSIM_AVX512 LaneSums16x512() { a[0] = a[1] = _mm512_setzero_pd(); }

  KVSIM_AVX512 void Add(__m512 v) {
    a[0] = _mm512_add_pd(a[0], _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
    a[1] = _mm512_add_pd(a[1], _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
  }

  // s[l] = p[l] + p[8 + l]; c[l] = s[l] + s[4 + l] = (p[l] + p[8 + l]) + (p[4 + l] + p[12 + l]); then
  // (c[0] + c[2]) + (c[1] + c[3]).
  KVSIM_AVX512 double Total() const {
    const __m512d s = _mm512_add_pd(a[0], a[1]);
    const __m256d c = _mm256_add_pd(_mm512_castpd512_pd256(s), _mm512_extractf64x4_pd(s, 1));
    const __m128d d = _mm_add_pd(_mm256_castpd256_pd128(c), _mm256_extractf128_pd(c, 1));
    return _mm_cvtsd_f64(_mm_add_sd(d, _mm_unpackhi_pd(d, d)));
  }
};

}  // namespace

KVSIM_AVX512 double Avx512ExpScaledLaneSum(float* x, int64_t n, float scale, float offset) {
  const __m512 s = _mm512_set1_ps(scale), o = _mm512_set1_ps(offset);
  LaneSums16x512 sums;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = Exp16(_mm512_fmsub_ps(_mm512_loadu_ps(x + i), s, o));
    _mm512_storeu_ps(x + i, v);
    sums.Add(v);
  }
  double total = sums.Total();
  Avx2ExpScaled(x + i, n - i, scale, offset);
  for (; i < n; ++i) total += x[i];
  return total;
}

KVSIM_AVX512 double Avx512ScaleLaneSum(float* x, int64_t n, float factor) {
  const __m512 f = _mm512_set1_ps(factor);
  LaneSums16x512 sums;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + i), f);
    _mm512_storeu_ps(x + i, v);
    sums.Add(v);
  }
  double total = sums.Total();
  for (; i < n; ++i) total += (x[i] *= factor);
  return total;
}

KVSIM_AVX512 float Avx512Max(const float* x, int64_t n) {
  __m512 m0 = _mm512_set1_ps(-__builtin_inff()), m1 = m0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    m0 = _mm512_max_ps(m0, _mm512_loadu_ps(x + i));
    m1 = _mm512_max_ps(m1, _mm512_loadu_ps(x + i + 16));
  }
  float best = _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
  for (; i < n; ++i) best = x[i] > best ? x[i] : best;
  return best;
}

KVSIM_AVX512 void Avx512AddToDoubles(const float* x, int64_t n, double* sums) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    const __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    _mm512_storeu_pd(sums + i, _mm512_add_pd(_mm512_loadu_pd(sums + i), lo));
    _mm512_storeu_pd(sums + i + 8, _mm512_add_pd(_mm512_loadu_pd(sums + i + 8), hi));
  }
  for (; i < n; ++i) sums[i] += x[i];
}

KVSIM_AVX512 int64_t Avx512IndicesAtLeast(const float* x, int64_t n, float t, int32_t* index) {
  const __m512 threshold = _mm512_set1_ps(t);
  const __m512i step = _mm512_set1_epi32(16);
  __m512i indices = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  int64_t count = 0, i = 0;
  for (; i + 16 <= n; i += 16) {
    const __mmask16 mask = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + i), threshold, _CMP_GE_OQ);
    if (mask != 0) {  // the found indices packed to the front, stored whole (room for 16 past the end)
      _mm512_storeu_si512(index + count, _mm512_maskz_compress_epi32(mask, indices));
      count += __builtin_popcount(mask);
    }
    indices = _mm512_add_epi32(indices, step);
  }
  for (; i < n; ++i) {
    if (x[i] >= t) index[count++] = static_cast<int32_t>(i);
  }
  return count;
}

KVSIM_AVX512 int64_t Avx512FirstAbove(const float* x, int64_t from, int64_t n, float t) {
  const __m512 threshold = _mm512_set1_ps(t);
  int64_t i = from;
  for (; i + 16 <= n; i += 16) {
    const __mmask16 mask = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + i), threshold, _CMP_GT_OQ);
    if (mask != 0) return i + __builtin_ctz(mask);
  }
  for (; i < n; ++i) {
    if (x[i] > t) return i;
  }
  return n;
}

KVSIM_AVX2 int64_t Avx2IndicesAtLeast(const float* x, int64_t n, float t, int32_t* index) {
  const __m256 threshold = _mm256_set1_ps(t);
  int64_t count = 0, i = 0;
  for (; i + 8 <= n; i += 8) {
    unsigned mask =
        static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), threshold, _CMP_GE_OQ)));
    while (mask != 0) {
      index[count++] = static_cast<int32_t>(i + __builtin_ctz(mask));
      mask &= mask - 1;
    }
  }
  for (; i < n; ++i) {
    if (x[i] >= t) index[count++] = static_cast<int32_t>(i);
  }
  return count;
}

// AVX2 without FMA: the compiler may not contract the multiplications and additions.
__attribute__((target("avx2"))) void Avx2WeightedSums4(const float* x, int64_t size, int64_t chunks, const float* w,
                                                       int64_t stride, float* out, int64_t ldo) {
  const float *w0 = w, *w1 = w + stride, *w2 = w + 2 * stride, *w3 = w + 3 * stride;
  for (int64_t c = 0; c < chunks; ++c) {
    const float* base = x + c * size * kNr;
    __m256 s00 = _mm256_setzero_ps(), s01 = _mm256_setzero_ps(), s10 = _mm256_setzero_ps(), s11 = _mm256_setzero_ps(),
           s20 = _mm256_setzero_ps(), s21 = _mm256_setzero_ps(), s30 = _mm256_setzero_ps(), s31 = _mm256_setzero_ps();
    for (int64_t n = 0; n < size; ++n) {
      const __m256 x0 = _mm256_loadu_ps(base + n * kNr), x1 = _mm256_loadu_ps(base + n * kNr + 8);
      __m256 v = _mm256_broadcast_ss(w0 + n);
      s00 = _mm256_add_ps(s00, _mm256_mul_ps(v, x0));
      s01 = _mm256_add_ps(s01, _mm256_mul_ps(v, x1));
      v = _mm256_broadcast_ss(w1 + n);
      s10 = _mm256_add_ps(s10, _mm256_mul_ps(v, x0));
      s11 = _mm256_add_ps(s11, _mm256_mul_ps(v, x1));
      v = _mm256_broadcast_ss(w2 + n);
      s20 = _mm256_add_ps(s20, _mm256_mul_ps(v, x0));
      s21 = _mm256_add_ps(s21, _mm256_mul_ps(v, x1));
      v = _mm256_broadcast_ss(w3 + n);
      s30 = _mm256_add_ps(s30, _mm256_mul_ps(v, x0));
      s31 = _mm256_add_ps(s31, _mm256_mul_ps(v, x1));
    }
    float* o = out + c * kNr;
    _mm256_storeu_ps(o, s00);
    _mm256_storeu_ps(o + 8, s01);
    _mm256_storeu_ps(o + ldo, s10);
    _mm256_storeu_ps(o + ldo + 8, s11);
    _mm256_storeu_ps(o + 2 * ldo, s20);
    _mm256_storeu_ps(o + 2 * ldo + 8, s21);
    _mm256_storeu_ps(o + 3 * ldo, s30);
    _mm256_storeu_ps(o + 3 * ldo + 8, s31);
  }
}

namespace {

// acc += w * x as a multiplication and an addition (explicitly rounded intrinsics: never contracted into
// an FMA).
#define KVSIM_MUL_ADD(acc, w, x) \
  acc = _mm512_add_round_ps(acc, _mm512_mul_round_ps(w, x, _MM_FROUND_CUR_DIRECTION), _MM_FROUND_CUR_DIRECTION)

// The sums of Avx512WeightedRowSums for columns [c0, c0 + 16 * chunks), chunks 4 or 1, prefetching
// `prefetch_lines` cache lines of the row kAhead rows ahead.
KVSIM_AVX512 void WeightedRowChunks(const float* const* rows, int64_t size, const float* const* w, int num_rows,
                                    int64_t c0, int chunks, int prefetch_lines, float* out, int64_t ldo) {
  constexpr int64_t kAhead = 16;
  __m512 acc[4][4];
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) {
#pragma GCC unroll 4
    for (int l = 0; l < 4; ++l) acc[r][l] = _mm512_setzero_ps();
  }
  for (int64_t n = 0; n < size; ++n) {
    if (n + kAhead < size) {
      const char* p = reinterpret_cast<const char*>(rows[n + kAhead] + c0);
      for (int l = 0; l < prefetch_lines; ++l) _mm_prefetch(p + 64 * l, _MM_HINT_T0);
    }
    const float* x = rows[n] + c0;
    if (chunks == 4) {
      const __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16), x2 = _mm512_loadu_ps(x + 32),
                   x3 = _mm512_loadu_ps(x + 48);
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r) {
        const __m512 wv = _mm512_set1_ps(w[r][n]);
        KVSIM_MUL_ADD(acc[r][0], wv, x0);
        KVSIM_MUL_ADD(acc[r][1], wv, x1);
        KVSIM_MUL_ADD(acc[r][2], wv, x2);
        KVSIM_MUL_ADD(acc[r][3], wv, x3);
      }
    } else {
      const __m512 x0 = _mm512_loadu_ps(x);
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r) KVSIM_MUL_ADD(acc[r][0], _mm512_set1_ps(w[r][n]), x0);
    }
  }
  for (int r = 0; r < num_rows; ++r) {
    for (int l = 0; l < chunks; ++l) _mm512_storeu_ps(out + r * ldo + c0 + 16 * l, acc[r][l]);
  }
}

#undef KVSIM_MUL_ADD

}  // namespace

KVSIM_AVX512 void Avx512WeightedRowSums(const float* const* rows, int64_t size, const float* w, int64_t stride,
                                        int num_rows, int64_t cols, float* out, int64_t ldo) {
  const float* weights[4];  // output rows past num_rows repeat the last (computed, never stored)
  for (int r = 0; r < 4; ++r) weights[r] = w + (r < num_rows ? r : num_rows - 1) * stride;
  // Short rows (scattered value rows) are prefetched whole on the first pass, so the later passes find
  // them in cache; long rows are left to the hardware prefetcher.
  const int first_lines = cols <= 256 ? static_cast<int>(cols / 16) : 4;
  int64_t c0 = 0;
  for (; c0 + 64 <= cols; c0 += 64) {
    WeightedRowChunks(rows, size, weights, num_rows, c0, 4, c0 == 0 ? first_lines : 0, out, ldo);
  }
  for (; c0 + 16 <= cols; c0 += 16) {
    WeightedRowChunks(rows, size, weights, num_rows, c0, 1, c0 == 0 ? first_lines : 0, out, ldo);
  }
}

}  // namespace kvsim
