// File: cost_models/peak_memory.h
//
// Peak GPU memory of one configuration (per GPU of the tensor-parallel group), for the selection path:
// does this KV format, at this many resident tokens, fit next to the weights and the working buffers?
// How many KV tokens a replica holds is not decided here: that is GpuCapacityBlocks
// (config/experiment_config.h), the one capacity rule the serving replay uses.
//
//   weights     = WeightBytesPerGpu(model) (config/model_spec.h)
//   kv          = kv_tokens x KvBytesPerToken(model, format) (config/kv_format.h: scales included, int4
//                 g128 is 0.53125 bytes per element, not 0.5)
//   activations = 2 bytes x T x (2 x hidden + max(QKV out + attention out, gate/up out + activated))
//                 with T = scheduler.max_num_batched_tokens: the residual stream in and out plus the
//                 larger of the attention and MLP intermediates of one layer (bf16), all per GPU
//   workspace   = fp32 logits of max_num_seqs sequences over the per-GPU vocabulary
//                 + split-KV partial outputs (fp32 o and lse) of max_num_seqs x heads x 16 splits
//                 + 256 MiB fixed (GEMM library workspace, graphs, allocator slack)
//
// Stateless; thread-safe.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(PeakMemory peak, EstimatePeakMemory(config, /*kv_tokens=*/500000));
//   bool fits = peak.total_bytes <= config.device().memory_bytes();
#ifndef KVSIM_COST_MODELS_PEAK_MEMORY_H_
#define KVSIM_COST_MODELS_PEAK_MEMORY_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "proto/config.pb.h"

namespace kvsim {

struct PeakMemory {
  int64_t weights_bytes = 0;
  int64_t kv_bytes = 0;
  int64_t activation_bytes = 0;
  int64_t workspace_bytes = 0;
  int64_t total_bytes = 0;
  std::string kv_format;  // e.g. "int4-g128"
};

inline constexpr int64_t kFixedWorkspaceBytes = int64_t{256} << 20;
inline constexpr int64_t kSplitKvPartitions = 16;

// REQUIRES: a resolved config. InvalidArgument for kv_tokens < 0 or an unusable KV format.
absl::StatusOr<PeakMemory> EstimatePeakMemory(const proto::ExperimentConfig& config, int64_t kv_tokens);

}  // namespace kvsim

#endif  // KVSIM_COST_MODELS_PEAK_MEMORY_H_
