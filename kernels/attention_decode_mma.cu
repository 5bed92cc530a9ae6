// Tensor-core decode kernel (LaunchDecodeMma of kernels/decode_params.cuh): the same split-KV work items,
// outputs and states as the CUDA-core kernel in attention_decode.cu, with Q.K^T and P.V on mma.sync.
//
// Grid (num_kv_heads, num_items), 128 threads = 4 warps; a warp takes tiles of 16 tokens (tiles warp,
// warp + 4, ...; a tile lies within one page and one key group). The query heads of the KV head are the
// rows of the m16n8k16 A operand (rows >= the GQA group are zero), so each KV byte is read once per CTA.
// Lane (g = lane / 4, tq = lane % 4) follows the mma fragment layout:
//   S = Q.K^T: B = K^T, column g = token, k = channel. Each lane loads 32 channels of its tokens g and
//     g + 8 in 16-byte coalesced pieces; the channel order inside a k-step is a permutation that Q's A
//     fragment (loaded once) follows, which the dot product does not see.
//   O = P.V: A = P (the S accumulator re-packed, as in FlashAttention-2), B = V, k = token, column =
//     channel; each lane loads its columns' channels of tokens 2tq, 2tq + 1, 2tq + 8, 2tq + 9 and pairs
//     them with a byte permute.
// All B operands are exact in bf16 (bf16 values, fp8 / int8 / int4 / int2 codes); every A operand that
// is not exact in bf16 (P, P times a value scale, Q times an int4 key scale) is split into bf16 hi + lo and
// multiplied twice, so the products carry ~16 bits and accumulate in fp32: the kernel matches the
// CUDA-core one to fp32 rounding, not to bf16. Scales: fp8 / int8 keys by a per-token scale of the scores;
// their values by folding the per-token scale into P; int4 / int2 keys (per channel over a key group)
// by folding the scale into Q and adding bias = sum_c q_c z_c; int4 / int2 values (per token and channel
// group) by folding the scale into P per group (the V column order keeps each mma within one group) and
// accumulating sum_t p_t z_t per group.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "kernels/attention_kernels.h"
#include "kernels/cuda_status.h"
#include "kernels/decode_params.cuh"

namespace kvsim {
namespace {

constexpr int kHeadDim = 128;
constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kTile = 16;
constexpr uint32_t kBf16x2Of128 = 0x43004300u;  // (128, 128): OR-ing a code < 128 into it gives 128 + code

template <int kDtype>
__host__ __device__ constexpr int Bits() {
  return kDtype == 0 ? 16 : kDtype <= 2 ? 8 : kDtype == 3 ? 4 : 2;
}

// D += A.B with A's rows 8..15 zero (a1 = a3 = 0).
__device__ __forceinline__ void Mma(float (&d)[4], uint32_t a0, uint32_t a2, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(0u), "r"(a2), "r"(0u), "r"(b0), "r"(b1));
}

// 16 bytes global -> shared, asynchronously (cp.async groups, one per tile).
__device__ __forceinline__ void CpAsync16(void* smem, const void* gmem) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(gmem));
}

__device__ __forceinline__ void CpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int kPending>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

__device__ __forceinline__ uint32_t AsU32(__nv_bfloat162 x) { return *reinterpret_cast<uint32_t*>(&x); }

__device__ __forceinline__ uint32_t PackBf16(float lo, float hi) { return AsU32(__floats2bfloat162_rn(lo, hi)); }

// (x, y) = hi + lo with hi = bf16(x, y) and lo = bf16 of the remainders.
__device__ __forceinline__ void SplitBf16(float x, float y, uint32_t& hi, uint32_t& lo) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(x, y);
  const float2 hf = __bfloat1622float2(h);
  hi = AsU32(h);
  lo = PackBf16(x - hf.x, y - hf.y);
}

// (code_a, code_b) < 128 as an exact bf16 pair.
__device__ __forceinline__ uint32_t CodesToBf16(uint32_t packed_128_plus_codes) {
  __nv_bfloat162 x = *reinterpret_cast<__nv_bfloat162*>(&packed_128_plus_codes);
  const uint32_t c128 = kBf16x2Of128;
  return AsU32(__hsub2(x, *reinterpret_cast<const __nv_bfloat162*>(&c128)));
}

// Two 8-bit codes (bytes a, b) as an exact bf16 pair: fp8 e4m3 values or int8 integers.
template <int kDtype>
__device__ __forceinline__ uint32_t Byte2ToBf16(uint32_t a, uint32_t b) {
  if (kDtype == 1) {
    const __half2_raw raw = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(a | (b << 8)), __NV_E4M3);
    const float2 f = __half22float2(__half2(raw));
    return PackBf16(f.x, f.y);
  }
  // int8: 2^23 + 128 + code is exact in float.
  const float fa = __uint_as_float(0x4B000000u | (a ^ 0x80u)) - 8388736.0f;
  const float fb = __uint_as_float(0x4B000000u | (b ^ 0x80u)) - 8388736.0f;
  return PackBf16(fa, fb);
}

// Values a lane holds per 16-byte piece of a K row, capped at 32 (one 8-byte piece for int2).
template <int kDtype>
__host__ __device__ constexpr int KPieceValues() {
  return 128 / Bits<kDtype>() < 32 ? 128 / Bits<kDtype>() : 32;
}

// Channel of the lane's K value v (0..31): pieces of KPieceValues channels, lane tq taking the tq-th
// piece of each group of four (coalesced across the 4 lanes of a token).
template <int kDtype>
__device__ __forceinline__ int KChannel(int tq, int v) {
  constexpr int kPv = KPieceValues<kDtype>();
  return (v / kPv) * 4 * kPv + kPv * tq + v % kPv;
}

// The lane's K words for one token (32 values): bf16 16 words, 8-bit 8, int4 4, int2 2.
template <int kDtype>
struct KWords {
  static constexpr int kCount = 32 * Bits<kDtype>() / 32;
  uint32_t w[kCount];
};

template <int kDtype>
__device__ __forceinline__ void LoadKWords(const uint8_t* row, int tq, KWords<kDtype>& out) {
  constexpr int kPv = KPieceValues<kDtype>();
  constexpr int kPieceBytes = kPv * Bits<kDtype>() / 8;  // 16, or 8 for int2
  constexpr int kPieces = 32 / kPv;
  if (kPieceBytes == 16) {
#pragma unroll
    for (int i = 0; i < kPieces; ++i) {
      const uint4 x = __ldg(reinterpret_cast<const uint4*>(row + (i * 4 + tq) * 16));
      out.w[4 * i] = x.x, out.w[4 * i + 1] = x.y, out.w[4 * i + 2] = x.z, out.w[4 * i + 3] = x.w;
    }
  } else {
    const uint2 x = __ldg(reinterpret_cast<const uint2*>(row + tq * 8));
    out.w[0] = x.x, out.w[1] = x.y;
  }
}

// The B fragment (b0: values 4kk, 4kk + 1; b1: values 4kk + 2, 4kk + 3) of k-step kk.
template <int kDtype>
__device__ __forceinline__ void KFragment(const KWords<kDtype>& k, int kk, uint32_t& b0, uint32_t& b1) {
  if (kDtype == 0) {
    b0 = k.w[2 * kk], b1 = k.w[2 * kk + 1];
  } else if (kDtype <= 2) {
    const uint32_t w = k.w[kk];
    b0 = Byte2ToBf16<kDtype>(w & 0xffu, (w >> 8) & 0xffu);
    b1 = Byte2ToBf16<kDtype>((w >> 16) & 0xffu, w >> 24);
  } else if (kDtype == 3) {
    const uint32_t x = k.w[kk / 2] >> (16 * (kk % 2));
    b0 = CodesToBf16(kBf16x2Of128 | (x & 0xfu) | ((x & 0xf0u) << 12));
    b1 = CodesToBf16(kBf16x2Of128 | ((x >> 8) & 0xfu) | ((x & 0xf000u) << 4));
  } else {
    const uint32_t x = k.w[kk / 4] >> (8 * (kk % 4));
    b0 = CodesToBf16(kBf16x2Of128 | (x & 0x3u) | ((x & 0xcu) << 14));
    b1 = CodesToBf16(kBf16x2Of128 | ((x >> 4) & 0x3u) | ((x & 0xc0u) << 10));
  }
}

// V: channel of mma column n in the mma `j` (of 16), and what a lane loads per token.
//   bf16: channel 64 (j / 8) + 8 n + j % 8 (two 16-byte pieces per token);
//   fp8 / int8: channel 16 n + j (one 16-byte piece);
//   int4 / int2: channel 32 (j / 4) + 4 n + j % 4: mma j stays in the 32-channel group j / 4.
template <int kDtype>
__device__ __forceinline__ int VChannel(int j, int n) {
  if (kDtype == 0) return 64 * (j / 8) + 8 * n + j % 8;
  if (kDtype <= 2) return 16 * n + j;
  return 32 * (j / 4) + 4 * n + j % 4;
}

template <int kDtype>
struct VWords {
  static constexpr int kCount = kDtype == 0 ? 8 : kDtype <= 2 ? 4 : 4;
  uint32_t w[kCount];  // int4 / int2: one word per 32-channel group (16 or 8 bits used)
};

template <int kDtype>
__device__ __forceinline__ void LoadVWords(const uint8_t* row, int g, VWords<kDtype>& out) {
  if (kDtype == 0) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint4 x = __ldg(reinterpret_cast<const uint4*>(row + 128 * h + 16 * g));
      out.w[4 * h] = x.x, out.w[4 * h + 1] = x.y, out.w[4 * h + 2] = x.z, out.w[4 * h + 3] = x.w;
    }
  } else if (kDtype <= 2) {
    const uint4 x = __ldg(reinterpret_cast<const uint4*>(row + 16 * g));
    out.w[0] = x.x, out.w[1] = x.y, out.w[2] = x.z, out.w[3] = x.w;
  } else if (kDtype == 3) {
#pragma unroll
    for (int G = 0; G < 4; ++G) out.w[G] = __ldg(reinterpret_cast<const unsigned short*>(row + 16 * G + 2 * g));
  } else {
#pragma unroll
    for (int G = 0; G < 4; ++G) out.w[G] = __ldg(row + 8 * G + g);
  }
}

// bf16 pair (value of token a, value of token b) at the lane's column of mma j.
template <int kDtype>
__device__ __forceinline__ uint32_t VPair(const VWords<kDtype>& a, const VWords<kDtype>& b, int j) {
  if (kDtype == 0) {
    const int w = 4 * (j / 8) + (j % 8) / 2;
    return __byte_perm(a.w[w], b.w[w], (j % 2) ? 0x7632 : 0x5410);
  } else if (kDtype <= 2) {
    const int shift = 8 * (j % 4);
    return Byte2ToBf16<kDtype>((a.w[j / 4] >> shift) & 0xffu, (b.w[j / 4] >> shift) & 0xffu);
  } else {
    constexpr int kBitsV = Bits<kDtype>();
    constexpr uint32_t kMask = (1u << kBitsV) - 1;
    const int shift = kBitsV * (j % 4);
    return CodesToBf16(kBf16x2Of128 | ((a.w[j / 4] >> shift) & kMask) | (((b.w[j / 4] >> shift) & kMask) << 16));
  }
}

template <int kDtype, int kGroup>
__global__ void __launch_bounds__(kThreads, 3) DecodeMmaKernel(const DecodeParams p) {
  constexpr bool kTokenScale = kDtype == 1 || kDtype == 2;
  constexpr bool kAsymmetric = kDtype >= 3;
  constexpr int kRowBytes = kHeadDim * Bits<kDtype>() / 8;
  __shared__ float sm_acc[kWarps][kGroup][kHeadDim];
  __shared__ float sm_m[kWarps][kGroup];
  __shared__ float sm_l[kWarps][kGroup];

  const int kv_head = blockIdx.x;
  const int item_index = blockIdx.y;
  const DecodeWorkItem item = p.items[item_index];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, tq = lane % 4;
  const int ps = p.page_size, hkv = p.num_kv_heads;
  const bool row_valid = g < kGroup;

  // The query of the lane's head g (zero for padding rows) in K-value order: bf16 pairs in registers, or,
  // for int4 / int2 keys whose per-channel scales change per key group, floats in shared memory (channels
  // 32 tq .. 32 tq + 31, read per tile; registers would spill).
  __shared__ __align__(16) float sm_q[kAsymmetric ? 8 : 1][kHeadDim];
  const uint16_t* qrow =
      p.q + (static_cast<int64_t>(item.request) * p.num_q_heads + kv_head * kGroup + (row_valid ? g : 0)) * kHeadDim;
  uint32_t qa[8][2];
  if (kAsymmetric) {
    for (int i = threadIdx.x; i < 8 * kHeadDim; i += kThreads) {
      const int h = i / kHeadDim, c = i % kHeadDim;
      const uint16_t* hrow = p.q + (static_cast<int64_t>(item.request) * p.num_q_heads + kv_head * kGroup + h) * kHeadDim;
      sm_q[h][c] = h < kGroup ? __uint_as_float(static_cast<uint32_t>(__ldg(hrow + c)) << 16) : 0.f;
    }
    __syncthreads();
  } else {
    float q[32];
#pragma unroll
    for (int v = 0; v < 32; ++v) {
      q[v] = row_valid ? __uint_as_float(static_cast<uint32_t>(__ldg(qrow + KChannel<kDtype>(tq, v))) << 16) : 0.f;
    }
#pragma unroll
    for (int kk = 0; kk < 8; ++kk) {
      qa[kk][0] = PackBf16(q[4 * kk], q[4 * kk + 1]);
      qa[kk][1] = PackBf16(q[4 * kk + 2], q[4 * kk + 3]);
    }
  }
  constexpr int kVGroups = 4;  // 32-channel groups of the int4 / int2 V column order
  const int stored_groups = kHeadDim / p.group_size;  // value (scale, zero) pairs per token

  float m = -INFINITY, l = 0.f;
  float o[16][4];
#pragma unroll
  for (int j = 0; j < 16; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
  float z_acc[kVGroups];  // int4 / int2: sum_t p_t z_t per 32-channel group
#pragma unroll
  for (int G = 0; G < kVGroups; ++G) z_acc[G] = 0.f;

  const int num_tiles = (item.num_tokens + kTile - 1) / kTile;
  // Per-warp staging of the scale / zero parameters a tile needs, two stages (cp.async): int4 / int2 key
  // (scale, zero) of 128 channels, value (scale, zero) of 16 tokens x up to 4 groups; fp8 / int8 key and
  // value scales of 16 tokens.
  __shared__ __align__(16) float sm_kp[kAsymmetric ? kWarps : 1][2][kAsymmetric ? 256 : 4];
  __shared__ __align__(16) float sm_vp[kAsymmetric ? kWarps : 1][2][kAsymmetric ? 128 : 4];
  __shared__ __align__(16) float sm_ts[kTokenScale ? kWarps : 1][2][kTokenScale ? 32 : 4];
  // Page of the warp's tile warp + 4 (j + lane) for the 32 tiles from j (refilled every 32 tiles).
  int32_t lane_page = 0;
  auto page_of = [&](int j) {  // j: the warp's tile index (tile = warp + 4 j); warp-uniform
    if (j % 32 == 0) {
      const int t = (warp + kWarps * (j + lane)) * kTile;
      lane_page = t < item.num_tokens
                      ? __ldg(p.page_table + item.page_table_offset + (p.page_shift >= 0 ? t >> p.page_shift : t / ps))
                      : 0;
    }
    return static_cast<int64_t>(__shfl_sync(0xffffffffu, lane_page, j % 32));
  };
  const int vt[4] = {2 * tq, 2 * tq + 1, 2 * tq + 8, 2 * tq + 9};
  // Issues every load of the warp's tile j: K of tokens g and g + 8 and V of tokens vt[] into registers
  // (tokens past the item's end read token t0), parameters into stage `stage` (one cp.async group).
  auto issue = [&](int j, int stage, KWords<kDtype> (&kw)[2], VWords<kDtype> (&vw)[4]) {
    const int t0 = (warp + kWarps * j) * kTile;
    const int64_t page = page_of(j);
    const int slot0 = p.page_shift >= 0 ? (t0 & (ps - 1)) : t0 % ps;
    const int valid_tokens = min(kTile, item.num_tokens - t0);
    auto row_of = [&](int i) { return (page * ps + slot0 + (i < valid_tokens ? i : 0)) * hkv + kv_head; };
#pragma unroll
    for (int nb = 0; nb < 2; ++nb) LoadKWords<kDtype>(p.k + row_of(nb * 8 + g) * kRowBytes, tq, kw[nb]);
#pragma unroll
    for (int i = 0; i < 4; ++i) LoadVWords<kDtype>(p.v + row_of(vt[i]) * kRowBytes, g, vw[i]);
    const int64_t token0 = (page * hkv + kv_head) * ps + slot0;  // parameter index of token t0
    if (kAsymmetric) {
      const int64_t kbase = ((page * hkv + kv_head) * (ps / p.key_group_tokens) + slot0 / p.key_group_tokens) * kHeadDim;
      CpAsync16(&sm_kp[warp][stage][4 * lane], p.k_scale + kbase + 4 * lane);
      CpAsync16(&sm_kp[warp][stage][128 + 4 * lane], p.k_zero + kbase + 4 * lane);
      const int n4 = 4 * stored_groups;  // float4s of 16 tokens x stored_groups
      if (lane % 16 < n4) {
        const float* src = (lane < 16 ? p.v_scale : p.v_zero) + token0 * stored_groups + 4 * (lane % 16);
        CpAsync16(&sm_vp[warp][stage][64 * (lane / 16) + 4 * (lane % 16)], src);
      }
    }
    if (kTokenScale && lane < 8) {
      CpAsync16(&sm_ts[warp][stage][4 * lane], (lane < 4 ? p.k_scale : p.v_scale) + token0 + 4 * (lane % 4));
    }
    CpAsyncCommit();
  };

  // Quantised formats load the next tile while computing this one (their loads are small and their
  // parameters add a round trip); bf16's 64 load registers per tile leave no room for a second set.
  constexpr bool kPipelined = kDtype != 0;
  KWords<kDtype> kw[2], kw_next[2];  // kw_next, vw_next: unused (and removed) unless kPipelined
  VWords<kDtype> vw[4], vw_next[4];
  if (kPipelined && warp < num_tiles) issue(0, 0, kw_next, vw_next);
  int stage = 0;
  for (int jt = 0, tile = warp; tile < num_tiles; ++jt, tile += kWarps, stage ^= 1) {
    if (kPipelined) {
#pragma unroll
      for (int nb = 0; nb < 2; ++nb) kw[nb] = kw_next[nb];
#pragma unroll
      for (int i = 0; i < 4; ++i) vw[i] = vw_next[i];
      if (tile + kWarps < num_tiles) {  // the next tile's loads fly while this one computes
        issue(jt + 1, stage ^ 1, kw_next, vw_next);
        CpAsyncWait<1>();
      } else {
        CpAsyncWait<0>();
      }
    } else {
      issue(jt, stage, kw, vw);
      CpAsyncWait<0>();
    }
    __syncwarp();
    const int t0 = tile * kTile;
    const int valid_tokens = min(kTile, item.num_tokens - t0);
    auto clamp = [&](int i) { return i < valid_tokens ? i : 0; };

    // Scores of head g for tokens nb * 8 + 2tq + e.
    // Two accumulators per token block for int4 / int2 (hi and lo parts): two independent mma chains.
    float s[2][4], s2[2][4];
#pragma unroll
    for (int nb = 0; nb < 2; ++nb) {
      s[nb][0] = s[nb][1] = s[nb][2] = s[nb][3] = 0.f;
      s2[nb][0] = s2[nb][1] = s2[nb][2] = s2[nb][3] = 0.f;
    }
    float bias = 0.f;
    if (kAsymmetric) {
      // Per-channel (scale, zero) of the tile's key group for the lane's 32 channels (32 tq .. 32 tq + 31).
      const float4* kscale = reinterpret_cast<const float4*>(&sm_kp[warp][stage][32 * tq]);
      const float4* kzero = reinterpret_cast<const float4*>(&sm_kp[warp][stage][128 + 32 * tq]);
      // One k-step at a time: Q times the channel scales, split, against both token blocks.
#pragma unroll
      for (int kk = 0; kk < 8; ++kk) {
        const float4 q4 = reinterpret_cast<const float4*>(&sm_q[g][32 * tq])[kk];
        const float4 s4 = kscale[kk];
        const float4 z4 = kzero[kk];
        bias = fmaf(q4.x, z4.x, fmaf(q4.y, z4.y, fmaf(q4.z, z4.z, fmaf(q4.w, z4.w, bias))));
        uint32_t qh0, ql0, qh1, ql1;
        SplitBf16(q4.x * s4.x, q4.y * s4.y, qh0, ql0);
        SplitBf16(q4.z * s4.z, q4.w * s4.w, qh1, ql1);
#pragma unroll
        for (int nb = 0; nb < 2; ++nb) {
          uint32_t b0, b1;
          KFragment<kDtype>(kw[nb], kk, b0, b1);
          Mma(s[nb], qh0, qh1, b0, b1);
          Mma(s2[nb], ql0, ql1, b0, b1);
        }
      }
      bias += __shfl_xor_sync(0xffffffffu, bias, 1);
      bias += __shfl_xor_sync(0xffffffffu, bias, 2);
    } else {
#pragma unroll
      for (int nb = 0; nb < 2; ++nb) {
#pragma unroll
        for (int kk = 0; kk < 8; ++kk) {
          uint32_t b0, b1;
          KFragment<kDtype>(kw[nb], kk, b0, b1);
          Mma(s[nb], qa[kk][0], qa[kk][1], b0, b1);
        }
      }
    }
    float x[4];  // log2-unit scores of tokens 2tq, 2tq + 1, 8 + 2tq, 9 + 2tq
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int token = (i / 2) * 8 + 2 * tq + i % 2;
      float score = (s[i / 2][i % 2] + s2[i / 2][i % 2] + bias) * p.scale_log2;
      if (kTokenScale) score *= sm_ts[warp][stage][clamp(token)];
      x[i] = token < valid_tokens ? score : -INFINITY;
    }
    float tile_max = fmaxf(fmaxf(x[0], x[1]), fmaxf(x[2], x[3]));
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
    const float m_new = fmaxf(m, tile_max);  // finite: every tile has a valid token
    const float alpha = exp2f(m - m_new);    // 0 when m = -inf
    float pr[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      pr[i] = exp2f(x[i] - m_new);  // 0 past the end
      l = i == 0 ? l * alpha + pr[i] : l + pr[i];
    }
    m = m_new;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      o[j][0] *= alpha;
      o[j][1] *= alpha;
    }

    // O += P.V (A: tokens 2tq, 2tq + 1 in a0; 2tq + 8, 2tq + 9 in a2).
    if (kAsymmetric) {
#pragma unroll
      for (int G = 0; G < kVGroups; ++G) {
        const int stored = G * stored_groups / kVGroups;
        float vs[4], vz[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          vs[i] = sm_vp[warp][stage][clamp(vt[i]) * stored_groups + stored];
          vz[i] = sm_vp[warp][stage][64 + clamp(vt[i]) * stored_groups + stored];
        }
        z_acc[G] = z_acc[G] * alpha + pr[0] * vz[0] + pr[1] * vz[1] + pr[2] * vz[2] + pr[3] * vz[3];
        uint32_t ah0, al0, ah2, al2;
        SplitBf16(pr[0] * vs[0], pr[1] * vs[1], ah0, al0);
        SplitBf16(pr[2] * vs[2], pr[3] * vs[3], ah2, al2);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int j = 4 * G + i;
          const uint32_t b0 = VPair<kDtype>(vw[0], vw[1], j), b1 = VPair<kDtype>(vw[2], vw[3], j);
          Mma(o[j], ah0, ah2, b0, b1);
          Mma(o[j], al0, al2, b0, b1);
        }
      }
    } else {
      float w[4] = {pr[0], pr[1], pr[2], pr[3]};
      if (kTokenScale) {
#pragma unroll
        for (int i = 0; i < 4; ++i) w[i] *= sm_ts[warp][stage][16 + clamp(vt[i])];
      }
      uint32_t ah0, al0, ah2, al2;
      SplitBf16(w[0], w[1], ah0, al0);
      SplitBf16(w[2], w[3], ah2, al2);
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        const uint32_t b0 = VPair<kDtype>(vw[0], vw[1], j), b1 = VPair<kDtype>(vw[2], vw[3], j);
        Mma(o[j], ah0, ah2, b0, b1);
        Mma(o[j], al0, al2, b0, b1);
      }
    }
    __syncwarp();  // this stage's parameters are read before the next issue refills them
  }

  // The warp's state: l and the zero sums over the 4 lanes of a row, o by column.
  l += __shfl_xor_sync(0xffffffffu, l, 1);
  l += __shfl_xor_sync(0xffffffffu, l, 2);
#pragma unroll
  for (int G = 0; G < kVGroups; ++G) {
    z_acc[G] += __shfl_xor_sync(0xffffffffu, z_acc[G], 1);
    z_acc[G] += __shfl_xor_sync(0xffffffffu, z_acc[G], 2);
  }
  if (row_valid) {
#pragma unroll
    for (int j = 0; j < 16; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float zero_term = kAsymmetric ? z_acc[j / 4] : 0.f;
        sm_acc[warp][g][VChannel<kDtype>(j, 2 * tq + e)] = o[j][e] + zero_term;
      }
    }
    if (tq == 0) {
      sm_m[warp][g] = m;
      sm_l[warp][g] = l;
    }
  }
  __syncthreads();
  WriteDecodeState<kWarps, kGroup>(sm_acc, sm_m, sm_l, p, item_index, kv_head);
}

struct Launcher {
  const DecodeParams& params;
  dim3 grid;
  template <int kDtype, int kGroup>
  absl::Status Launch() const {
    DecodeMmaKernel<kDtype, kGroup><<<grid, kThreads>>>(params);
    KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return absl::OkStatus();
  }
};

}  // namespace

absl::Status LaunchDecodeMma(const DecodeParams& params, const DecodeArgs& args) {
  return DispatchDecode(args, Launcher{params, dim3(args.layout.num_kv_heads, args.num_items)});
}

}  // namespace kvsim
