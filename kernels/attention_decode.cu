// CUDA implementation of the decode and merge launchers of kernels/attention_kernels.h.
//
// Decode: grid (num_kv_heads, num_items), 128 threads = 4 warps. A warp takes tiles of kTileTokens tokens
// (tiles warp, warp + 4, ...); within a tile, lanes 0-15 take the even tokens and lanes 16-31 the odd ones,
// each lane 8 of the 128 channels. A lane issues the loads of its whole tile (K and V, kPasses of each,
// 16 bytes per load in bf16) before using any of them. Scores are reduced over the 16 lanes of a token
// with shuffles; each half-warp keeps its own online-softmax state (max, sum, acc) per query head, in log2
// units (log2(e) is folded into the query). Halves, then warps (through shared memory) are merged at the
// end and the CTA writes one state per query head of its KV head.
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
constexpr float kLn2 = 0.6931471805599453f;

// What one lane loads per token: its 8 channels of one (token, head) row.
template <int kDtype>
struct Chunk;
template <>
struct Chunk<0> { using T = uint4; };  // bf16
template <>
struct Chunk<1> { using T = uint2; };  // fp8 e4m3
template <>
struct Chunk<2> { using T = uint2; };  // int8
template <>
struct Chunk<3> { using T = uint32_t; };  // int4
template <>
struct Chunk<4> { using T = unsigned short; };  // int2

__device__ __forceinline__ float SmallCodeToFloat(uint32_t code) {
  return __uint_as_float(0x4B000000u | code) - 8388608.0f;  // exact for code < 2^23
}

__device__ __forceinline__ void Bf16x8ToFloat(uint4 c, float* f) {
  const uint32_t w[4] = {c.x, c.y, c.z, c.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(w[i] << 16);
    f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}

// The 8 stored values of a chunk as float: bf16 values, fp8 values (before the scale), int8 codes, or
// int4 / int2 codes.
template <int kDtype>
__device__ __forceinline__ void Decode8(typename Chunk<kDtype>::T c, float* f);

template <>
__device__ __forceinline__ void Decode8<0>(uint4 c, float* f) { Bf16x8ToFloat(c, f); }

template <>
__device__ __forceinline__ void Decode8<1>(uint2 c, float* f) {
  const uint32_t w[2] = {c.x, c.y};
#pragma unroll
  for (int i = 0; i < 2; ++i) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const __half2_raw raw = __nv_cvt_fp8x2_to_halfraw2(
          static_cast<__nv_fp8x2_storage_t>((w[i] >> (16 * j)) & 0xffffu), __NV_E4M3);
      const float2 x = __half22float2(__half2(raw));
      f[4 * i + 2 * j] = x.x;
      f[4 * i + 2 * j + 1] = x.y;
    }
  }
}

template <>
__device__ __forceinline__ void Decode8<2>(uint2 c, float* f) {
  const uint32_t w[2] = {c.x, c.y};
#pragma unroll
  for (int i = 0; i < 8; ++i) f[i] = static_cast<float>(static_cast<int8_t>((w[i / 4] >> (8 * (i % 4))) & 0xffu));
}

template <>
__device__ __forceinline__ void Decode8<3>(uint32_t c, float* f) {
#pragma unroll
  for (int i = 0; i < 8; ++i) f[i] = SmallCodeToFloat((c >> (4 * i)) & 0xfu);
}

template <>
__device__ __forceinline__ void Decode8<4>(unsigned short c, float* f) {
#pragma unroll
  for (int i = 0; i < 8; ++i) f[i] = SmallCodeToFloat((static_cast<uint32_t>(c) >> (2 * i)) & 0x3u);
}

template <int kDtype>
__host__ __device__ constexpr int DtypeBits() {
  return kDtype == 0 ? 16 : kDtype <= 2 ? 8 : kDtype == 3 ? 4 : 2;
}

__device__ __forceinline__ int PageIndexOf(int t, const DecodeParams& p) {
  return p.page_shift >= 0 ? t >> p.page_shift : t / p.page_size;
}

__device__ __forceinline__ int SlotOf(int t, const DecodeParams& p) {
  return p.page_shift >= 0 ? t & (p.page_size - 1) : t % p.page_size;
}

// Pages of this lane's tokens in tile `tile` (token t0 stands in for tokens past the item's end).
template <int kPasses>
__device__ __forceinline__ void LookUpPages(const DecodeParams& p, const DecodeWorkItem& item, int tile, int half,
                                            int32_t (&pages)[kPasses]) {
  const int t0 = tile * (2 * kPasses);
#pragma unroll
  for (int i = 0; i < kPasses; ++i) {
    const int t = t0 + 2 * i + half;
    const int tt = t < item.num_tokens ? t : t0;
    pages[i] = __ldg(p.page_table + item.page_table_offset + PageIndexOf(tt, p));
  }
}

// Merges the online-softmax state of this lane with that of lane ^ 16 (the other token of the pair).
template <int kGroup>
__device__ __forceinline__ void MergeHalves(float (&m)[kGroup], float (&l)[kGroup], float (&acc)[kGroup][8]) {
#pragma unroll
  for (int g = 0; g < kGroup; ++g) {
    const float m_other = __shfl_xor_sync(0xffffffffu, m[g], 16);
    const float l_other = __shfl_xor_sync(0xffffffffu, l[g], 16);
    const float m_new = fmaxf(m[g], m_other);
    const float a = m[g] == -INFINITY ? 0.f : exp2f(m[g] - m_new);
    const float b = m_other == -INFINITY ? 0.f : exp2f(m_other - m_new);
    l[g] = l[g] * a + l_other * b;
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      const float other = __shfl_xor_sync(0xffffffffu, acc[g][c], 16);
      acc[g][c] = acc[g][c] * a + other * b;
    }
    m[g] = m_new;
  }
}

template <int kDtype, int kGroup>
__global__ void __launch_bounds__(kThreads) DecodeKernel(const DecodeParams p) {
  constexpr int kPasses = kGroup >= 8 ? 4 : 8;  // token pairs per tile (registers bound it at GQA 8)
  constexpr int kTileTokens = 2 * kPasses;      // <= 16: a tile never crosses a page or a key group
  constexpr int kRowBytes = kHeadDim * DtypeBits<kDtype>() / 8;
  constexpr bool kTokenScale = kDtype == 1 || kDtype == 2;
  constexpr bool kAsymmetric = kDtype >= 3;
  using ChunkT = typename Chunk<kDtype>::T;

  __shared__ float sm_acc[kWarps][kGroup][kHeadDim];
  __shared__ float sm_m[kWarps][kGroup];
  __shared__ float sm_l[kWarps][kGroup];

  const int kv_head = blockIdx.x;
  const int item_index = blockIdx.y;
  const DecodeWorkItem item = p.items[item_index];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int sub = lane % 16;   // channels sub * 8 .. sub * 8 + 7
  const int half = lane / 16;  // token 2i + half of each pair
  const int ps = p.page_size, hkv = p.num_kv_heads;

  float q[kGroup][8];
#pragma unroll
  for (int g = 0; g < kGroup; ++g) {
    const int64_t offset =
        (static_cast<int64_t>(item.request) * p.num_q_heads + kv_head * kGroup + g) * kHeadDim + sub * 8;
    Bf16x8ToFloat(*reinterpret_cast<const uint4*>(p.q + offset), q[g]);
#pragma unroll
    for (int c = 0; c < 8; ++c) q[g][c] *= p.scale_log2;
  }
  float m[kGroup], l[kGroup], acc[kGroup][8];
#pragma unroll
  for (int g = 0; g < kGroup; ++g) {
    m[g] = -INFINITY;
    l[g] = 0.f;
#pragma unroll
    for (int c = 0; c < 8; ++c) acc[g][c] = 0.f;
  }

  const int num_tiles = (item.num_tokens + kTileTokens - 1) / kTileTokens;
  // Page-table entries of the next tile are fetched while the current one computes.
  int32_t next_pages[kPasses];
  if (warp < num_tiles) LookUpPages<kPasses>(p, item, warp, half, next_pages);
  for (int tile = warp; tile < num_tiles; tile += kWarps) {
    const int t0 = tile * kTileTokens;
    int32_t pages[kPasses];
#pragma unroll
    for (int i = 0; i < kPasses; ++i) pages[i] = next_pages[i];
    ChunkT kc[kPasses], vc[kPasses];
    float k_scale[kPasses], v_scale[kPasses], v_zero[kPasses];
    bool valid[kPasses];
    // Issue every load of the tile first.
#pragma unroll
    for (int i = 0; i < kPasses; ++i) {
      const int t = t0 + 2 * i + half;
      valid[i] = t < item.num_tokens;
      const int tt = valid[i] ? t : t0;  // t0 is always a valid token
      const int64_t page = pages[i];
      const int slot = SlotOf(tt, p);
      const int64_t row = (page * ps + slot) * hkv + kv_head;
      kc[i] = __ldg(reinterpret_cast<const ChunkT*>(p.k + row * kRowBytes) + sub);
      vc[i] = __ldg(reinterpret_cast<const ChunkT*>(p.v + row * kRowBytes) + sub);
      const int64_t token_param = (page * hkv + kv_head) * ps + slot;
      if (kTokenScale) {
        k_scale[i] = __ldg(p.k_scale + token_param);
        v_scale[i] = __ldg(p.v_scale + token_param);
      }
      if (kAsymmetric) {
        const int groups = kHeadDim / p.group_size;
        const int64_t param = token_param * groups + (sub * 8) / p.group_size;
        v_scale[i] = __ldg(p.v_scale + param);
        v_zero[i] = __ldg(p.v_zero + param);
      }
    }
    if (tile + kWarps < num_tiles) LookUpPages<kPasses>(p, item, tile + kWarps, half, next_pages);
    // Keys of int4 / int2: per-channel (scale, zero) of the tile's group (the tile lies within one group):
    // sum_c q_c (code_c s_c + z_c) = sum_c q_c (code_c s_c) + bias with bias = sum_c q_c z_c.
    float k_channel_scale[8], bias[kGroup];
#pragma unroll
    for (int g = 0; g < kGroup; ++g) bias[g] = 0.f;
    if (kAsymmetric) {
      const int64_t page0 = pages[0];  // the tile lies within one page (16-token aligned)
      const int groups_per_page = ps / p.key_group_tokens;
      const int64_t base =
          ((page0 * hkv + kv_head) * groups_per_page + (t0 % ps) / p.key_group_tokens) * kHeadDim + sub * 8;
      float z[8];
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const float4 s4 = __ldg(reinterpret_cast<const float4*>(p.k_scale + base) + j);
        const float4 z4 = __ldg(reinterpret_cast<const float4*>(p.k_zero + base) + j);
        k_channel_scale[4 * j] = s4.x, k_channel_scale[4 * j + 1] = s4.y;
        k_channel_scale[4 * j + 2] = s4.z, k_channel_scale[4 * j + 3] = s4.w;
        z[4 * j] = z4.x, z[4 * j + 1] = z4.y, z[4 * j + 2] = z4.z, z[4 * j + 3] = z4.w;
      }
#pragma unroll
      for (int g = 0; g < kGroup; ++g) {
#pragma unroll
        for (int c = 0; c < 8; ++c) bias[g] = fmaf(q[g][c], z[c], bias[g]);
      }
    }
    // Scores (log2 units), then probabilities.
    float score[kPasses][kGroup];
#pragma unroll
    for (int i = 0; i < kPasses; ++i) {
      float kf[8];
      Decode8<kDtype>(kc[i], kf);
      if (kAsymmetric) {
#pragma unroll
        for (int c = 0; c < 8; ++c) kf[c] *= k_channel_scale[c];
      }
#pragma unroll
      for (int g = 0; g < kGroup; ++g) {
        float dot = bias[g];
#pragma unroll
        for (int c = 0; c < 8; ++c) dot = fmaf(q[g][c], kf[c], dot);
#pragma unroll
        for (int offset = 1; offset < 16; offset *= 2) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
        if (kTokenScale) dot *= k_scale[i];
        score[i][g] = valid[i] ? dot : -INFINITY;
      }
    }
#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
      float tile_max = -INFINITY;
#pragma unroll
      for (int i = 0; i < kPasses; ++i) tile_max = fmaxf(tile_max, score[i][g]);
      const float m_new = fmaxf(m[g], tile_max);
      const float alpha = m[g] == -INFINITY ? 0.f : exp2f(m[g] - m_new);
      l[g] *= alpha;
#pragma unroll
      for (int c = 0; c < 8; ++c) acc[g][c] *= alpha;
#pragma unroll
      for (int i = 0; i < kPasses; ++i) {
        score[i][g] = score[i][g] == -INFINITY ? 0.f : exp2f(score[i][g] - m_new);
        l[g] += score[i][g];
      }
      m[g] = m_new;
    }
    // acc += p * v.
#pragma unroll
    for (int i = 0; i < kPasses; ++i) {
      float vf[8];
      Decode8<kDtype>(vc[i], vf);
#pragma unroll
      for (int g = 0; g < kGroup; ++g) {
        const float pr = score[i][g];
        const float pv = kTokenScale || kAsymmetric ? pr * v_scale[i] : pr;
        const float pz = kAsymmetric ? pr * v_zero[i] : 0.f;
#pragma unroll
        for (int c = 0; c < 8; ++c) acc[g][c] = fmaf(pv, vf[c], kAsymmetric ? acc[g][c] + pz : acc[g][c]);
      }
    }
  }

  MergeHalves<kGroup>(m, l, acc);
  if (half == 0) {
#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
#pragma unroll
      for (int c = 0; c < 8; ++c) sm_acc[warp][g][sub * 8 + c] = acc[g][c];
      if (sub == 0) {
        sm_m[warp][g] = m[g];
        sm_l[warp][g] = l[g];
      }
    }
  }
  __syncthreads();
  WriteDecodeState<kWarps, kGroup>(sm_acc, sm_m, sm_l, p, item_index, kv_head);
}

// One CTA per (request, query head); warp w merges the request's items w, w + 4, ... (4 channels per
// lane, loads of several items in flight), then warp 0 merges the 4 warp states. A request split into
// many items (one long request) is thus merged by many threads, not one warp per head.
__global__ void __launch_bounds__(kThreads)
    MergeKernel(const float* __restrict__ partial_o, const float* __restrict__ partial_lse,
                const int32_t* __restrict__ item_begin, float* __restrict__ o, float* __restrict__ lse,
                int num_q_heads) {
  __shared__ float sm_m[kWarps], sm_l[kWarps];
  __shared__ float4 sm_acc[kWarps][32];
  const int r = blockIdx.x, h = blockIdx.y;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int begin = item_begin[r], end = item_begin[r + 1];
  float m = -INFINITY;
  for (int i = begin + warp; i < end; i += kWarps) m = fmaxf(m, partial_lse[static_cast<int64_t>(i) * num_q_heads + h]);
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  float l = 0.f;
  if (m != -INFINITY) {  // all-empty guard: never exp(-inf - -inf)
#pragma unroll 4
    for (int i = begin + warp; i < end; i += kWarps) {
      const int64_t row = static_cast<int64_t>(i) * num_q_heads + h;
      const float x = partial_lse[row];
      const float w = x == -INFINITY ? 0.f : exp2f(x - m);
      const float4 v = reinterpret_cast<const float4*>(partial_o + row * kHeadDim)[lane];
      l += w;
      if (w > 0.f) acc.x += w * v.x, acc.y += w * v.y, acc.z += w * v.z, acc.w += w * v.w;
    }
  }
  sm_acc[warp][lane] = acc;
  if (lane == 0) {
    sm_m[warp] = m;
    sm_l[warp] = l;
  }
  __syncthreads();
  if (warp != 0) return;
  float m_all = -INFINITY;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) m_all = fmaxf(m_all, sm_m[w]);
  float l_all = 0.f;
  float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    const float weight = sm_m[w] == -INFINITY ? 0.f : exp2f(sm_m[w] - m_all);
    const float4 a = sm_acc[w][lane];
    l_all += weight * sm_l[w];
    sum.x += weight * a.x, sum.y += weight * a.y, sum.z += weight * a.z, sum.w += weight * a.w;
  }
  const float inv = l_all > 0.f ? 1.f / l_all : 0.f;
  const int64_t out_row = static_cast<int64_t>(r) * num_q_heads + h;
  reinterpret_cast<float4*>(o + out_row * kHeadDim)[lane] = make_float4(sum.x * inv, sum.y * inv, sum.z * inv, sum.w * inv);
  if (lane == 0) lse[out_row] = l_all > 0.f ? (m_all + log2f(l_all)) * kLn2 : -INFINITY;
}

struct Launcher {
  const DecodeParams& params;
  dim3 grid;
  template <int kDtype, int kGroup>
  absl::Status Launch() const {
    DecodeKernel<kDtype, kGroup><<<grid, kThreads>>>(params);
    KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return absl::OkStatus();
  }
};

}  // namespace

absl::Status LaunchDecodePartial(const DecodeArgs& args) {
  if (absl::Status status = CheckDecodeArgs(args); !status.ok()) return status;
  if (args.num_items == 0) return absl::OkStatus();
  DecodeParams params;
  params.q = static_cast<const uint16_t*>(args.q);
  params.k = static_cast<const uint8_t*>(args.k.data);
  params.v = static_cast<const uint8_t*>(args.v.data);
  params.k_scale = args.k.scale;
  params.k_zero = args.k.zero;
  params.v_scale = args.v.scale;
  params.v_zero = args.v.zero;
  params.page_table = args.page_table;
  params.items = args.items;
  params.o = args.direct ? args.out_o : args.partial_o;
  params.lse = args.direct ? args.out_lse : args.partial_lse;
  params.lse_natural = args.direct;
  params.num_q_heads = args.num_q_heads;
  params.num_kv_heads = args.layout.num_kv_heads;
  params.page_size = args.layout.page_size;
  params.page_shift = -1;
  for (int shift = 0; shift < 31; ++shift) {
    if ((1 << shift) == args.layout.page_size) params.page_shift = shift;
  }
  params.group_size = args.group_size > 0 ? args.group_size : kHeadDim;
  params.key_group_tokens = KeyGroupTokens(params.group_size, args.layout.page_size);
  params.scale_log2 = static_cast<float>(args.softmax_scale * 1.4426950408889634);
  if (UseTensorCoreDecode(args)) return LaunchDecodeMma(params, args);
  return DispatchDecode(args, Launcher{params, dim3(args.layout.num_kv_heads, args.num_items)});
}

absl::Status LaunchMergeStates(const DecodeArgs& args) {
  if (absl::Status status = CheckDecodeArgs(args); !status.ok()) return status;
  if (args.direct) return absl::InvalidArgumentError("merge: nothing to merge when the plan is direct");
  if (args.num_requests == 0) return absl::OkStatus();
  MergeKernel<<<dim3(args.num_requests, args.num_q_heads), kThreads>>>(
      args.partial_o, args.partial_lse, args.item_begin, args.out_o, args.out_lse, args.num_q_heads);
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

absl::Status LaunchDecode(const DecodeArgs& args) {
  if (absl::Status status = LaunchDecodePartial(args); !status.ok()) return status;
  if (args.direct) return absl::OkStatus();
  return LaunchMergeStates(args);
}

}  // namespace kvsim
