// File: config/kv_format.h
//
// KvFormat: how one KV element is stored (payload bits, scale groups) and what reading it costs on top of
// its bytes (dequantisation ALU work), and the bytes per KV token that follow. Shared by the GPU capacity
// rule (config/experiment_config.h), the serving simulator's transfers, the roofline and table cost models
// and the peak-memory model, so all of them agree on compressed KV.
//
// Storage: bytes per element = bits / 8 + scale_bytes_per_group / group_size. bf16/fp16 carry no scales;
// fp8 uses per-tensor scales (no per-element bytes) unless a group size is configured; integer formats
// (int8, int4, 3-bit, 2-bit) default to one scale group per token and head (group = head_dim) with an
// fp16 scale and zero point (4 bytes).
//
// Dequantisation (CUDA-core ops per element read), following KERNELS.md section 2: bf16/fp16 0; fp8 1
// (convert); int8 2 (convert, scale FMA); 4 bits and below 3 (unpack, convert, scale-and-zero FMA).
//
// Pure value type; thread-compatible.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(KvFormat kv, ResolveKvFormat(config.model(), config.cost_model()));
//   double bytes = kv.BytesPerElement();  // 0.53125 for int4 with one fp16 scale+zero per 128 elements
#ifndef KVSIM_CONFIG_KV_FORMAT_H_
#define KVSIM_CONFIG_KV_FORMAT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "proto/config.pb.h"
#include "proto/spec.pb.h"

namespace kvsim {

struct KvFormat {
  int bits = 16;                  // payload bits per element
  bool is_fp8 = false;            // fp8 (e4m3): tensor cores can consume it directly
  bool is_integer = false;        // integer quantised (8, 4, 3 or 2 bits): dequantised on CUDA cores
  int group_size = 0;             // elements per scale group; 0 = no per-group scales
  int scale_bytes_per_group = 0;  // bytes of scale metadata per group

  // HBM bytes per stored element, scales included.
  double BytesPerElement() const;
  // CUDA-core operations per element to turn it back into bf16/fp32.
  double DequantOpsPerElement() const;
  // E.g. "bf16", "fp8", "int4-g128".
  std::string Name() const;
};

// Bytes of K and V per token held by each GPU of the tensor-parallel group, scales included:
//   2 (K and V) x layers x KvHeadsPerGpu(model) x head_dim x kv.BytesPerElement().
// The one definition of bytes per KV token: GPU capacity, transfer sizes, peak memory and the roofline
// all use it. 131,072 for Llama-3.1-8B at bf16; 34,816 at int4 with one fp16 scale and zero point per
// 128 elements. REQUIRES: a resolved model spec.
double KvBytesPerToken(const proto::ModelSpec& model, const KvFormat& kv);

// The same for one layer of `kv_heads` KV heads of `head_dim` (KvBytesPerToken is num_layers times it,
// with KvHeadsPerGpu): what one attention kernel reads per token.
double KvBytesPerTokenPerLayer(int64_t kv_heads, int64_t head_dim, const KvFormat& kv);

// The KV format of a resolved model and cost-model config (model.kv_dtype, overridden by
// cost_model.kv_quant_bits). InvalidArgument naming the field for unsupported bits or group sizes.
absl::StatusOr<KvFormat> ResolveKvFormat(const proto::ModelSpec& model, const proto::CostModelConfig& cost);

}  // namespace kvsim

#endif  // KVSIM_CONFIG_KV_FORMAT_H_
