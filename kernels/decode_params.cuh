// File: kernels/decode_params.cuh (CUDA only)
//
// The decode kernels' launch parameters, shared by the CUDA-core kernel (attention_decode.cu) and the
// tensor-core kernel (attention_decode_mma.cu), and the choice between them.
#ifndef KVSIM_KERNELS_DECODE_PARAMS_CUH_
#define KVSIM_KERNELS_DECODE_PARAMS_CUH_

#include <cmath>
#include <cstdint>

#include "absl/status/status.h"
#include "kernels/attention_args.h"

namespace kvsim {

constexpr int kDecodeHeadDim = 128;

struct DecodeParams {
  const uint16_t* q;
  const uint8_t* k;
  const uint8_t* v;
  const float* k_scale;
  const float* k_zero;
  const float* v_scale;
  const float* v_zero;
  const int32_t* page_table;
  const DecodeWorkItem* items;
  float* o;
  float* lse;
  bool lse_natural;  // final output (natural log) rather than a partial state (log2)
  int num_q_heads;
  int num_kv_heads;
  int page_size;
  int page_shift;  // log2(page_size) when a power of two, else -1 (then division)
  int group_size;
  int key_group_tokens;
  float scale_log2;  // softmax scale * log2(e)
};

// Calls launcher.template Launch<kDtype, kGroup>() with the KV format of `args` (0 bf16, 1 fp8 e4m3,
// 2 int8, 3 int4, 4 int2) and its query heads per KV head (1, 2, 4, 8) as template arguments.
template <int kDtype, typename Launcher>
absl::Status DispatchDecodeGroup(const DecodeArgs& args, const Launcher& launcher) {
  switch (args.num_q_heads / args.layout.num_kv_heads) {
    case 1: return launcher.template Launch<kDtype, 1>();
    case 2: return launcher.template Launch<kDtype, 2>();
    case 4: return launcher.template Launch<kDtype, 4>();
    case 8: return launcher.template Launch<kDtype, 8>();
  }
  return absl::InvalidArgumentError("unsupported GQA group");
}

template <typename Launcher>
absl::Status DispatchDecode(const DecodeArgs& args, const Launcher& launcher) {
  switch (args.dtype) {
    case KvDtype::kBf16: return DispatchDecodeGroup<0>(args, launcher);
    case KvDtype::kFp8E4m3: return DispatchDecodeGroup<1>(args, launcher);
    case KvDtype::kInt8: return DispatchDecodeGroup<2>(args, launcher);
    case KvDtype::kInt4: return DispatchDecodeGroup<3>(args, launcher);
    case KvDtype::kInt2: return DispatchDecodeGroup<4>(args, launcher);
  }
  return absl::InvalidArgumentError("unknown KV dtype");
}

// The end of both decode kernels: the warps' states (running max m and sum l in log2 units, unnormalised
// output per query head and channel) merged into the CTA's, one output channel per thread (128 threads),
// written as the item's partial state (log2 lse) or, when p.lse_natural, the final output.
// REQUIRES: the states are in shared memory and a barrier has passed since they were written.
template <int kWarps, int kGroup>
__device__ __forceinline__ void WriteDecodeState(const float (&sm_acc)[kWarps][kGroup][kDecodeHeadDim],
                                                 const float (&sm_m)[kWarps][kGroup],
                                                 const float (&sm_l)[kWarps][kGroup], const DecodeParams& p,
                                                 int item_index, int kv_head) {
  const int c = threadIdx.x;
#pragma unroll
  for (int h = 0; h < kGroup; ++h) {
    float m_all = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) m_all = fmaxf(m_all, sm_m[w][h]);
    float l_all = 0.f, out = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float weight = sm_m[w][h] == -INFINITY ? 0.f : exp2f(sm_m[w][h] - m_all);
      l_all += weight * sm_l[w][h];
      out += weight * sm_acc[w][h][c];
    }
    const int64_t row = static_cast<int64_t>(item_index) * p.num_q_heads + kv_head * kGroup + h;
    p.o[row * kDecodeHeadDim + c] = l_all > 0.f ? out / l_all : 0.f;
    if (c == 0) {
      const float lse2 = l_all > 0.f ? m_all + log2f(l_all) : -INFINITY;
      p.lse[row] = p.lse_natural ? lse2 * 0.6931471805599453f : lse2;
    }
  }
}

// True when `args` asks for the tensor-core kernel, or for kAuto (the tensor-core kernel is the faster
// one for every format on Hopper: see kernels/NOTES.md).
inline bool UseTensorCoreDecode(const DecodeArgs& args) { return args.kernel != DecodeKernel::kCudaCores; }

// The tensor-core decode kernel (attention_decode_mma.cu). REQUIRES: CheckDecodeArgs(args) is ok and
// `params` was filled from `args`.
absl::Status LaunchDecodeMma(const DecodeParams& params, const DecodeArgs& args);

}  // namespace kvsim

#endif  // KVSIM_KERNELS_DECODE_PARAMS_CUH_
