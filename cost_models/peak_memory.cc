#include "cost_models/peak_memory.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "cost_models/kv_format.h"
#include "sim/config.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

// Bytes of KV per token per GPU at the configured format, scales included.
absl::StatusOr<double> KvBytesPerTokenWithScales(const proto::ExperimentConfig& config, std::string* name) {
  const proto::ModelSpec& m = config.model();
  KVSIM_ASSIGN_OR_RETURN(KvFormat kv, ResolveKvFormat(m, config.cost_model()));
  *name = kv.Name();
  const int64_t tp = std::max(1, m.tensor_parallel_size());
  const int64_t kv_heads = std::max<int64_t>(1, m.num_kv_heads() / tp);
  return 2.0 * m.num_layers() * kv_heads * m.head_dim() * kv.BytesPerElement();
}

}  // namespace

absl::StatusOr<PeakMemory> EstimatePeakMemory(const proto::ExperimentConfig& config, int64_t kv_tokens) {
  if (kv_tokens < 0) return absl::InvalidArgumentError(absl::StrCat("kv_tokens must be >= 0, got ", kv_tokens));
  const proto::ModelSpec& m = config.model();
  const int64_t tp = std::max(1, m.tensor_parallel_size());
  PeakMemory peak;
  KVSIM_ASSIGN_OR_RETURN(double per_token, KvBytesPerTokenWithScales(config, &peak.kv_format));
  peak.weights_bytes = WeightBytesPerGpu(m);
  peak.kv_bytes = static_cast<int64_t>(std::ceil(per_token * kv_tokens));
  const int64_t hidden = m.hidden_size(), heads = m.num_attention_heads() / tp;
  const int64_t kv_heads = std::max<int64_t>(1, m.num_kv_heads() / tp), d = m.head_dim();
  const int64_t inter = (m.intermediate_size() + tp - 1) / tp, vocab = (m.vocab_size() + tp - 1) / tp;
  const int64_t tokens = config.scheduler().max_num_batched_tokens();
  const int64_t attention = (heads + 2 * kv_heads) * d + heads * d;
  const int64_t mlp = 3 * inter;
  peak.activation_bytes = 2 * tokens * (2 * hidden + std::max(attention, mlp));
  const int64_t seqs = config.scheduler().max_num_seqs();
  peak.workspace_bytes = seqs * vocab * 4 + seqs * heads * kSplitKvPartitions * (d * 4 + 4) + kFixedWorkspaceBytes;
  peak.total_bytes = peak.weights_bytes + peak.kv_bytes + peak.activation_bytes + peak.workspace_bytes;
  return peak;
}

absl::StatusOr<int64_t> MaxKvTokens(const proto::ExperimentConfig& config) {
  KVSIM_ASSIGN_OR_RETURN(PeakMemory base, EstimatePeakMemory(config, 0));
  std::string name;
  KVSIM_ASSIGN_OR_RETURN(double per_token, KvBytesPerTokenWithScales(config, &name));
  const double usable = config.device().memory_bytes() * config.cache().gpu_memory_utilization();
  const double free_bytes = usable - static_cast<double>(base.total_bytes);
  return free_bytes > 0 ? static_cast<int64_t>(free_bytes / per_token) : 0;
}

}  // namespace kvsim
