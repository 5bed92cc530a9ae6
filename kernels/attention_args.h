// File: kernels/attention_args.h
//
// Arguments of the attention launchers (kernels/attention_kernels.h) and their validation, as plain C++
// built everywhere: shapes, formats and device pointers (allocated by the caller).
//
// Example:
//   DecodeArgs args;
//   args.layout = layout;  // head_dim 128, page_size a multiple of 16
//   KVSIM_RETURN_IF_ERROR(CheckDecodeArgs(args));
//
// Thread-safety: plain values.
#ifndef KVSIM_KERNELS_ATTENTION_ARGS_H_
#define KVSIM_KERNELS_ATTENTION_ARGS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/decode_plan.h"
#include "kernels/layout/kv_layout.h"

namespace kvsim {

// One K or V pool in device memory, in the storage of kernels/layout/kv_layout.h.
struct DeviceKvPool {
  const void* data = nullptr;
  const float* scale = nullptr;  // fp8 / int8 / int4 / int2
  const float* zero = nullptr;   // int4 / int2
};

// Which decode kernel runs (kernels/attention_kernels.h): CUDA-core FMAs or tensor-core mma.sync. Both
// compute the same function to within fp32 rounding; kAuto picks the faster one for the format.
enum class DecodeKernel { kAuto, kCudaCores, kTensorCores };

struct DecodeArgs {
  PagedKvLayout layout;
  DecodeKernel kernel = DecodeKernel::kAuto;
  int num_q_heads = 32;
  KvDtype dtype = KvDtype::kBf16;
  int group_size = 0;        // int4 / int2 only
  double softmax_scale = 0;  // usually 1 / sqrt(head_dim)
  const void* q = nullptr;   // bf16 [num_requests][num_q_heads][head_dim]
  DeviceKvPool k, v;
  const int32_t* page_table = nullptr;
  const DecodeWorkItem* items = nullptr;  // device copy of plan.items
  int num_items = 0;
  const int32_t* item_begin = nullptr;  // device copy of plan.item_begin
  int num_requests = 0;
  bool direct = false;           // plan.direct: the decode kernel writes out_o / out_lse itself
  float* partial_o = nullptr;    // [num_items][num_q_heads][head_dim]; unused when direct
  float* partial_lse = nullptr;  // [num_items][num_q_heads] (log2); unused when direct
  float* out_o = nullptr;        // [num_requests][num_q_heads][head_dim]
  float* out_lse = nullptr;      // [num_requests][num_q_heads]
};

// InvalidArgument naming the field for shapes the decode kernels do not support: head_dim must be 128,
// page_size a positive multiple of 16, num_q_heads / num_kv_heads one of 1, 2, 4, 8, the int4/int2
// group valid (ValidateQuantGroup), softmax_scale > 0, and the arrays the launch reads non-null.
absl::Status CheckDecodeArgs(const DecodeArgs& args);

struct PrefillArgs {
  PagedKvLayout layout;
  int num_q_heads = 32;
  double softmax_scale = 0;
  const void* q = nullptr;  // bf16 [rows][num_q_heads][head_dim]
  const void* k = nullptr;  // bf16 pools
  const void* v = nullptr;
  const int32_t* page_table = nullptr;
  const KvSegment* segments = nullptr;     // device copy of table.segments
  const int32_t* segment_begin = nullptr;  // device copy of table.segment_begin
  const int32_t* query_begin = nullptr;    // [num_requests + 1] query rows per request (CSR)
  int num_requests = 0;
  int max_queries = 0;       // max over requests of its query count (sizes the grid)
  float* out_o = nullptr;    // [rows][num_q_heads][head_dim]
  float* out_lse = nullptr;  // [rows][num_q_heads]
};

// As CheckDecodeArgs for prefill (bf16 KV only).
absl::Status CheckPrefillArgs(const PrefillArgs& args);

}  // namespace kvsim

#endif  // KVSIM_KERNELS_ATTENTION_ARGS_H_
