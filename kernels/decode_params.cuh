// File: kernels/decode_params.cuh (CUDA only)
//
// The decode kernels' launch parameters, shared by the CUDA-core kernel (attention_decode.cu) and the
// tensor-core kernel (attention_decode_mma.cu), and the choice between them.
#ifndef KVSIM_KERNELS_DECODE_PARAMS_CUH_
#define KVSIM_KERNELS_DECODE_PARAMS_CUH_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/attention_args.h"

namespace kvsim {

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

// True when `args` asks for the tensor-core kernel, or for kAuto (the tensor-core kernel is the faster
// one for every format on Hopper: see kernels/NOTES.md).
inline bool UseTensorCoreDecode(const DecodeArgs& args) { return args.kernel != DecodeKernel::kCudaCores; }

// The tensor-core decode kernel (attention_decode_mma.cu). REQUIRES: CheckDecodeArgs(args) is ok and
// `params` was filled from `args`.
absl::Status LaunchDecodeMma(const DecodeParams& params, const DecodeArgs& args);

}  // namespace kvsim

#endif  // KVSIM_KERNELS_DECODE_PARAMS_CUH_
