// File: sim/config.h
//
// Loading, resolving and validating an experiment configuration, and the quantities derived from its
// model and device specs (bytes per token, weight bytes, GPU KV capacity).
//
// Resolution: the config's `model_preset` / `device_preset` are loaded (defaults "llama-3.1-8b" and
// "h200"), then the fields set in its `model` / `device` messages are merged over them, then every
// default that the proto comments document is written in, so the resolved config is explicit and
// can be printed, recorded in results and reloaded unchanged.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(proto::ExperimentConfig config, LoadExperimentConfig("exp.textproto"));
//   int64_t bytes = KvBytesPerToken(config.model());
#ifndef KVSIM_SIM_CONFIG_H_
#define KVSIM_SIM_CONFIG_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/config.pb.h"
#include "proto/spec.pb.h"

namespace kvsim {

// Reads `path` (text proto), resolves presets, fills defaults and validates. An empty path gives the
// default configuration. Errors name the file and the offending field (InvalidArgument) or the
// preset (NotFound).
absl::StatusOr<proto::ExperimentConfig> LoadExperimentConfig(const std::string& path);

// As above from an already parsed message; `source` names it in error messages.
absl::StatusOr<proto::ExperimentConfig> ResolveExperimentConfig(proto::ExperimentConfig config,
                                                                absl::string_view source);

// Field-level checks of a spec after defaults are applied; errors name `source` and the field.
absl::Status ValidateModelSpec(const proto::ModelSpec& model, absl::string_view source);
absl::Status ValidateDeviceSpec(const proto::DeviceSpec& device, absl::string_view source);

// Bits per element of a dtype (4 for DTYPE_INT4). REQUIRES: dtype != DTYPE_UNSPECIFIED.
int DTypeBits(proto::DType dtype);

// KV bytes per token per GPU: 2 (K and V) x layers x kv_heads x head_dim x dtype bytes / TP degree.
// REQUIRES: a resolved (validated) model spec.
int64_t KvBytesPerToken(const proto::ModelSpec& model);

// Weight bytes held by each GPU of the tensor-parallel group. REQUIRES: a resolved model spec.
int64_t WeightBytesPerGpu(const proto::ModelSpec& model);

// Parameters implied by the shapes (embeddings, attention, gated MLP, norms, untied LM head).
int64_t EstimateNumParams(const proto::ModelSpec& model);

// GPU KV capacity of one replica in blocks of `block_tokens` tokens: `gpu_capacity_blocks` or
// `gpu_capacity_tokens` if set, else (memory x utilization - weights - activation reserve) /
// bytes per block. FailedPrecondition if the weights and reserve leave no room for one block.
absl::StatusOr<int64_t> GpuCapacityBlocks(const proto::ExperimentConfig& config, int block_tokens);

}  // namespace kvsim

#endif  // KVSIM_SIM_CONFIG_H_
