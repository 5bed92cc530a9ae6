// File: config/experiment_config.h
//
// Loading, resolving and validating an experiment configuration, and the GPU KV capacity it implies.
// The arithmetic of its model and device specs is in config/model_spec.h, the KV storage format and
// bytes per token in config/kv_format.h.
//
// Resolution: the config's `model_preset` / `device_preset` are loaded (defaults "llama-3.1-8b" and
// "h200"), then the fields set in its `model` / `device` messages are merged over them, then every
// default that the proto comments document is written in, so the resolved config is explicit and
// can be printed, recorded in results and reloaded unchanged.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(proto::ExperimentConfig config, LoadExperimentConfig("exp.textproto"));
//   KVSIM_ASSIGN_OR_RETURN(int64_t blocks, GpuCapacityBlocks(config, config.cache().block_tokens()));
#ifndef KVSIM_CONFIG_EXPERIMENT_CONFIG_H_
#define KVSIM_CONFIG_EXPERIMENT_CONFIG_H_

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
//
// `unset_cost_model_kind` is what a config without cost_model.kind gets: COST_MODEL_KIND_UNSPECIFIED means
// the device's default (DefaultCostModelKind of config/model_spec.h: the fitted model where the preset has
// fitted parameters); the paths that price per-request KV formats, which only the roofline does (kvsim
// select, replay --kv_configs), pass COST_MODEL_KIND_ROOFLINE. A kind the file sets is kept either way.
absl::StatusOr<proto::ExperimentConfig> LoadExperimentConfig(
    const std::string& path, proto::CostModelKind unset_cost_model_kind = proto::COST_MODEL_KIND_UNSPECIFIED);

// As above from an already parsed message; `source` names it in error messages.
absl::StatusOr<proto::ExperimentConfig> ResolveExperimentConfig(proto::ExperimentConfig config,
                                                                absl::string_view source);

// GPU KV capacity of one replica in blocks of `block_tokens` tokens: `gpu_capacity_blocks` or
// `gpu_capacity_tokens` if set, else (memory x utilization - weights - activation reserve) /
// bytes per block, with the bytes per token of the configured KV format (KvBytesPerToken of
// config/kv_format.h: model.kv_dtype or cost_model.kv_quant_bits, scales included). This is the one
// capacity rule: the serving replay, `kvsim config` and `kvsim costmodel memory` all use it.
// FailedPrecondition if the weights and reserve leave no room for one block; InvalidArgument for a KV
// format the cost-model fields do not describe.
absl::StatusOr<int64_t> GpuCapacityBlocks(const proto::ExperimentConfig& config, int block_tokens);

// Bytes of one KV block of `block_tokens` tokens on one GPU: KvBytesPerToken (config/kv_format.h) x
// block_tokens, the block size every capacity in bytes converts with. InvalidArgument for block_tokens <= 0
// or a KV format the cost-model fields do not describe. REQUIRES: a resolved config.
absl::StatusOr<double> KvBytesPerBlock(const proto::ExperimentConfig& config, int block_tokens);

// The same capacity in tokens, at the config's cache.block_tokens (whole blocks).
absl::StatusOr<int64_t> GpuCapacityTokens(const proto::ExperimentConfig& config);

}  // namespace kvsim

#endif  // KVSIM_CONFIG_EXPERIMENT_CONFIG_H_
