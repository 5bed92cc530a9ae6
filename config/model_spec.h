// File: config/model_spec.h
//
// The arithmetic of model and device specs: element widths, parameter counts, the weights and KV heads
// each GPU of a tensor-parallel group holds, the defaults a spec gets and the ranges it must lie in.
// Everything that sizes memory (GPU KV capacity, peak memory, the roofline) takes these numbers from here,
// so the figures agree.
//
// Tensor parallelism: attention heads, MLP columns and weights are split evenly over the group; KV heads
// too, except that when the group is larger than the number of KV heads each GPU keeps one replicated head
// (vLLM's rule): KvHeadsPerGpu = max(1, num_kv_heads / tensor_parallel_size).
//
// Stateless functions; thread-safe.
#ifndef KVSIM_CONFIG_MODEL_SPEC_H_
#define KVSIM_CONFIG_MODEL_SPEC_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "proto/config.pb.h"
#include "proto/spec.pb.h"

namespace kvsim {

// Bits per element of a dtype (4 for DTYPE_INT4); 0 for DTYPE_UNSPECIFIED or an unknown value.
int DTypeBits(proto::DType dtype);

// Parameters implied by the shapes (embeddings, attention, gated MLP, norms, untied LM head).
int64_t EstimateNumParams(const proto::ModelSpec& model);

// Weight bytes held by each GPU of the tensor-parallel group. REQUIRES: a resolved model spec.
int64_t WeightBytesPerGpu(const proto::ModelSpec& model);

// KV heads each GPU of the tensor-parallel group holds (see the file comment). REQUIRES: a resolved spec.
int64_t KvHeadsPerGpu(const proto::ModelSpec& model);

// The documented defaults of unset fields (head_dim from hidden_size, bf16 weights, KV at the weight
// dtype, TP 1, num_params from the shapes; device efficiencies 0.7 / 0.8 / 0.7).
void FillModelDefaults(proto::ModelSpec* model);
void FillDeviceDefaults(proto::DeviceSpec* device);

// Field-level checks of a spec after defaults are applied; errors name `source` and the field.
absl::Status ValidateModelSpec(const proto::ModelSpec& model, absl::string_view source);
// Includes ValidateFittedCostParams of `device.fitted` unless it is absent or marked `unfitted`.
absl::Status ValidateDeviceSpec(const proto::DeviceSpec& device, absl::string_view source);

// True when `device` carries fitted cost-model parameters (DeviceSpec.fitted present, not marked
// `unfitted`, with a GEMM fit): the fitted cost model runs on it, and it is the default cost model there.
// False for datasheet-only presets (L40S, B200).
bool HasFittedCostParams(const proto::DeviceSpec& device);

// The cost model an unset cost_model.kind means on `device`: COST_MODEL_KIND_FITTED where
// HasFittedCostParams, else COST_MODEL_KIND_ROOFLINE (datasheet-only presets).
proto::CostModelKind DefaultCostModelKind(const proto::DeviceSpec& device);

// Range checks of the fitted cost model's parameters (every present kind): latency floors and overheads in
// [0, 1 s] ns, efficiencies in (0, 1], wave weights in [0, 1], ridge_exponent in [1, 1000],
// half_efficiency_tokens in [0, 1e7], causal_pair_cost in [1e-6, 100], per-unit costs
// in [0, 1e6] ns per sequence and [0, 1e3] ns per token element, all-reduce num_gpus in [2, 65536] (each
// count once) with bus bandwidths in device range. Fields are named `prefix`.gemm.launch_ns and so on.
absl::Status ValidateFittedCostParams(const proto::FittedCostParams& fitted, absl::string_view source,
                                      absl::string_view prefix = "device.fitted");

}  // namespace kvsim

#endif  // KVSIM_CONFIG_MODEL_SPEC_H_
