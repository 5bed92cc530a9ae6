// CUDA implementation of LaunchPrefill (kernels/attention_kernels.h): FlashAttention-2 style chunked
// prefill over a segment table.
//
// Grid (query tiles of 64, query heads, requests); 128 threads = 4 warps, each warp 16 query rows. The
// query tile sits in registers as mma.sync A fragments; KV tiles of 64 tokens of one segment are copied
// into shared memory with cp.async (zero-filled past the segment's end; V's copy overlaps Q.K^T), scores
// come from mma.sync.m16n8k16 (bf16 in, fp32 out), the online softmax runs in fp32 in log2 units, and
// P.V uses V fragments read with ldmatrix.trans. Tiles wholly after the tile's last query position are
// skipped (causal); inside the chunk the mask is pos(key) <= pos(query).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "kernels/attention_kernels.h"
#include "kernels/cuda_status.h"

namespace kvsim {
namespace {

constexpr int kHeadDim = 128;
constexpr int kThreads = 128;
constexpr int kBr = 64;                  // query rows per CTA
constexpr int kBc = 64;                  // KV tokens per tile
constexpr int kStride = kHeadDim + 8;    // bf16 per shared-memory row: +16 bytes against bank conflicts
constexpr int kSmemBytes = (kBr + 2 * kBc) * kStride * 2;
constexpr float kLn2 = 0.6931471805599453f;

struct PrefillParams {
  const uint16_t* q;
  const uint16_t* k;
  const uint16_t* v;
  const int32_t* page_table;
  const KvSegment* segments;
  const int32_t* segment_begin;
  const int32_t* query_begin;
  float* o;
  float* lse;
  int num_q_heads;
  int num_kv_heads;
  int page_size;
  float scale_log2;
};

__device__ __forceinline__ void Mma16816(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// 16 bytes global -> shared, asynchronously; zero-filled when !valid (src is then not read).
__device__ __forceinline__ void CpAsync16(void* smem, const void* gmem, bool valid) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int src_size = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(src_size));
}

__device__ __forceinline__ void CpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int kPending>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

__device__ __forceinline__ uint32_t PackBf16(float lo, float hi) {
  const __nv_bfloat162 x = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&x);
}

// Copies `kBc` rows (tokens t0 .. t0 + 63 of `seg`) of one KV head of `pool` into `dst`.
__device__ __forceinline__ void LoadKvTile(const PrefillParams& p, const uint16_t* pool, const KvSegment& seg,
                                           int t0, int kv_head, uint16_t* dst) {
  for (int idx = threadIdx.x; idx < kBc * 16; idx += kThreads) {
    const int row = idx / 16, chunk = idx % 16;
    const int t = t0 + row;
    const bool valid = t < seg.num_tokens;
    const int tt = valid ? t : t0;
    const int64_t page = p.page_table[seg.page_table_offset + tt / p.page_size];
    const int64_t offset = ((page * p.page_size + tt % p.page_size) * p.num_kv_heads + kv_head) * kHeadDim;
    CpAsync16(dst + row * kStride + chunk * 8, pool + offset + chunk * 8, valid);
  }
}

__global__ void __launch_bounds__(kThreads) PrefillKernel(const PrefillParams p) {
  extern __shared__ __align__(16) uint16_t smem[];
  uint16_t* sq = smem;
  uint16_t* sk = sq + kBr * kStride;
  uint16_t* sv = sk + kBc * kStride;
  const int q_tile = blockIdx.x, h = blockIdx.y, r = blockIdx.z;
  const int q_begin = p.query_begin[r], n_q = p.query_begin[r + 1] - q_begin;
  if (q_tile * kBr >= n_q) return;  // uniform over the CTA
  const int seg_begin = p.segment_begin[r], seg_end = p.segment_begin[r + 1];
  int64_t total = 0;
  for (int s = seg_begin; s < seg_end; ++s) total += p.segments[s].num_tokens;
  const int64_t prefix = total - n_q;
  const int kv_head = h / (p.num_q_heads / p.num_kv_heads);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, tq = lane % 4;  // mma fragment coordinates

  for (int idx = threadIdx.x; idx < kBr * 16; idx += kThreads) {
    const int row = idx / 16, chunk = idx % 16, qi = q_tile * kBr + row;
    uint4 value = make_uint4(0, 0, 0, 0);
    if (qi < n_q) {
      value = *reinterpret_cast<const uint4*>(
          p.q + (static_cast<int64_t>(q_begin + qi) * p.num_q_heads + h) * kHeadDim + chunk * 8);
    }
    *reinterpret_cast<uint4*>(sq + row * kStride + chunk * 8) = value;
  }
  __syncthreads();
  const int r0 = warp * 16;
  uint32_t qa[8][4];
#pragma unroll
  for (int kk = 0; kk < 8; ++kk) {
    const int col = kk * 16 + tq * 2;
    qa[kk][0] = *reinterpret_cast<const uint32_t*>(sq + (r0 + g) * kStride + col);
    qa[kk][1] = *reinterpret_cast<const uint32_t*>(sq + (r0 + g + 8) * kStride + col);
    qa[kk][2] = *reinterpret_cast<const uint32_t*>(sq + (r0 + g) * kStride + col + 8);
    qa[kk][3] = *reinterpret_cast<const uint32_t*>(sq + (r0 + g + 8) * kStride + col + 8);
  }
  const int64_t query_pos[2] = {prefix + q_tile * kBr + r0 + g, prefix + q_tile * kBr + r0 + g + 8};
  const int64_t max_pos = prefix + min(q_tile * kBr + kBr, n_q) - 1;

  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};  // l: this lane's partial sums
  float o[16][4];
#pragma unroll
  for (int n = 0; n < 16; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;

  int64_t seg_pos = 0;  // context position of the segment's first token
  for (int s = seg_begin; s < seg_end && seg_pos <= max_pos; ++s) {
    const KvSegment seg = p.segments[s];
    for (int t0 = 0; t0 < seg.num_tokens && seg_pos + t0 <= max_pos; t0 += kBc) {
      __syncthreads();  // the previous tile's reads of sk / sv are done
      LoadKvTile(p, p.k, seg, t0, kv_head, sk);
      CpAsyncCommit();
      LoadKvTile(p, p.v, seg, t0, kv_head, sv);
      CpAsyncCommit();
      CpAsyncWait<1>();  // K has landed
      __syncthreads();

      float sc[8][4];
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        sc[j][0] = sc[j][1] = sc[j][2] = sc[j][3] = 0.f;
#pragma unroll
        for (int kk = 0; kk < 8; ++kk) {
          const uint16_t* krow = sk + (j * 8 + g) * kStride + kk * 16 + tq * 2;
          const uint32_t b[2] = {*reinterpret_cast<const uint32_t*>(krow),
                                 *reinterpret_cast<const uint32_t*>(krow + 8)};
          Mma16816(sc[j], qa[kk], b);
        }
      }
      // Mask, scale, online softmax for the lane's two rows (e / 2 selects the row).
#pragma unroll
      for (int rr = 0; rr < 2; ++rr) {
        float tile_max = -INFINITY;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
#pragma unroll
          for (int e = 2 * rr; e < 2 * rr + 2; ++e) {
            const int col = j * 8 + tq * 2 + (e & 1);
            const bool visible = t0 + col < seg.num_tokens && seg_pos + t0 + col <= query_pos[rr];
            sc[j][e] = visible ? sc[j][e] * p.scale_log2 : -INFINITY;
            tile_max = fmaxf(tile_max, sc[j][e]);
          }
        }
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
        const float m_new = fmaxf(m[rr], tile_max);
        const float alpha = m[rr] == -INFINITY ? 0.f : exp2f(m[rr] - m_new);
        float sum = 0.f;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
#pragma unroll
          for (int e = 2 * rr; e < 2 * rr + 2; ++e) {
            sc[j][e] = sc[j][e] == -INFINITY ? 0.f : exp2f(sc[j][e] - m_new);
            sum += sc[j][e];
          }
        }
        l[rr] = l[rr] * alpha + sum;
#pragma unroll
        for (int n = 0; n < 16; ++n) {
          o[n][2 * rr] *= alpha;
          o[n][2 * rr + 1] *= alpha;
        }
        m[rr] = m_new;
      }
      CpAsyncWait<0>();  // V has landed
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        const uint32_t a[4] = {PackBf16(sc[2 * kk][0], sc[2 * kk][1]), PackBf16(sc[2 * kk][2], sc[2 * kk][3]),
                               PackBf16(sc[2 * kk + 1][0], sc[2 * kk + 1][1]),
                               PackBf16(sc[2 * kk + 1][2], sc[2 * kk + 1][3])};
#pragma unroll
        for (int n = 0; n < 16; ++n) {
          const unsigned addr =
              static_cast<unsigned>(__cvta_generic_to_shared(sv + (kk * 16 + lane % 16) * kStride + n * 8));
          uint32_t b[2];
          asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                       : "=r"(b[0]), "=r"(b[1])
                       : "r"(addr));
          Mma16816(o[n], a, b);
        }
      }
    }
    seg_pos += seg.num_tokens;
  }

#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    float l_row = l[rr];
    l_row += __shfl_xor_sync(0xffffffffu, l_row, 1);
    l_row += __shfl_xor_sync(0xffffffffu, l_row, 2);
    const int qi = q_tile * kBr + r0 + g + 8 * rr;
    if (qi >= n_q) continue;
    const int64_t row = static_cast<int64_t>(q_begin + qi) * p.num_q_heads + h;
    const float inv = l_row > 0.f ? 1.f / l_row : 0.f;
#pragma unroll
    for (int n = 0; n < 16; ++n) {
      *reinterpret_cast<float2*>(p.o + row * kHeadDim + n * 8 + tq * 2) =
          make_float2(o[n][2 * rr] * inv, o[n][2 * rr + 1] * inv);
    }
    if (tq == 0) p.lse[row] = l_row > 0.f ? (m[rr] + log2f(l_row)) * kLn2 : -INFINITY;
  }
}

}  // namespace

absl::Status LaunchPrefill(const PrefillArgs& args) {
  if (absl::Status status = CheckPrefillArgs(args); !status.ok()) return status;
  if (args.num_requests == 0 || args.max_queries == 0) return absl::OkStatus();
  PrefillParams params;
  params.q = static_cast<const uint16_t*>(args.q);
  params.k = static_cast<const uint16_t*>(args.k);
  params.v = static_cast<const uint16_t*>(args.v);
  params.page_table = args.page_table;
  params.segments = args.segments;
  params.segment_begin = args.segment_begin;
  params.query_begin = args.query_begin;
  params.o = args.out_o;
  params.lse = args.out_lse;
  params.num_q_heads = args.num_q_heads;
  params.num_kv_heads = args.layout.num_kv_heads;
  params.page_size = args.layout.page_size;
  params.scale_log2 = static_cast<float>(args.softmax_scale * 1.4426950408889634);
  static const cudaError_t attribute_set =  // once per process: keeps host work out of timed launches
      cudaFuncSetAttribute(PrefillKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  KVSIM_CUDA_RETURN_IF_ERROR(attribute_set);
  const dim3 grid((args.max_queries + kBr - 1) / kBr, args.num_q_heads, args.num_requests);
  PrefillKernel<<<grid, kThreads, kSmemBytes>>>(params);
  KVSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

}  // namespace kvsim
