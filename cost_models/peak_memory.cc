#include "cost_models/peak_memory.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "config/kv_format.h"
#include "config/model_spec.h"
#include "util/status_macros.h"

namespace kvsim {

absl::StatusOr<PeakMemory> EstimatePeakMemory(const proto::ExperimentConfig& config, int64_t kv_tokens) {
  if (kv_tokens < 0) return absl::InvalidArgumentError(absl::StrCat("kv_tokens must be >= 0, got ", kv_tokens));
  const proto::ModelSpec& m = config.model();
  const int64_t tp = std::max(1, m.tensor_parallel_size());
  PeakMemory peak;
  KVSIM_ASSIGN_OR_RETURN(KvFormat kv, ResolveKvFormat(m, config.cost_model()));
  peak.kv_format = kv.Name();
  const double per_token = KvBytesPerToken(m, kv);
  peak.weights_bytes = WeightBytesPerGpu(m);
  peak.kv_bytes = static_cast<int64_t>(std::ceil(per_token * kv_tokens));
  const int64_t hidden = m.hidden_size(), heads = m.num_attention_heads() / tp;
  const int64_t kv_heads = KvHeadsPerGpu(m), d = m.head_dim();
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

}  // namespace kvsim
