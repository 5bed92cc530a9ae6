// File: policies/token/rocketkv_policy.h
//
// "rocketkv" (Behnam et al. 2025, "RocketKV: Accelerating Long-Context LLM Inference via Two-Stage KV
// Cache Compression"), per KV head, with B = tokens read per decode step.
// Stage 1 (after prefill, permanent): SnapKV++ scores from the last W = 32 prompt queries: attention
//   summed over the window and the GQA group, then max_pool1d (kernel 63, padding 31, stride 1) over the
//   non-window tokens; the window is kept; the prompt is cut to P = min(prompt_len, 4 B) tokens (the memory
//   budget; 4x the read budget is this implementation's choice). Decode tokens are then all kept.
// Stage 2 (every decode step, selection): with the cache C (sorted positions) and compression
//   c = |C| / B: if c <= 1 read everything; else s = ceil(sqrt(c)), the cache is cut into chunks of s
//   consecutive entries, qbar = sum of the group's queries, and the r = clamp(round(d s / c), 1, d)
//   channels with the largest mean |q| over the group are used. Chunk key K^_{P,ch} = max over the chunk
//   of sign(qbar_ch) k_{i,ch}; each member's approximate logits are sum over the r channels of
//   q_ch sign(qbar_ch) K^_{P,ch} / sqrt(d), in float; the chunks are ranked by the softmax of those,
//   averaged over the group; the query reads the top floor((B - 1) / s) chunks plus the current token.
// Kind: kSelect (stage 1 also evicts).
#ifndef KVSIM_POLICIES_TOKEN_ROCKETKV_POLICY_H_
#define KVSIM_POLICIES_TOKEN_ROCKETKV_POLICY_H_

#include "policies/token/token_policy.h"
#include "policies/token/token_policy_util.h"

namespace kvsim {

class RocketKvPolicy final : public TokenPolicy {
 public:
  static constexpr int64_t kWindow = 32;
  static constexpr int kPoolKernel = 63;
  static constexpr int64_t kMemoryFactor = 4;
  explicit RocketKvPolicy(const TokenPolicyOptions&) {}
  std::string Name() const override { return "rocketkv"; }
  Kind kind() const override { return Kind::kSelect; }
  void BeginLayer(absl::Span<const HeadContext> heads, int64_t budget_tokens) override;
  void Step(const LayerStep& step, std::vector<KeptSet>* kept) override;

 private:
  std::vector<HeadContext> heads_;
  std::vector<std::vector<int32_t>> prompt_kept_;  // stage 1, sorted
  std::vector<std::vector<int32_t>> caches_;       // per head: prompt_kept_, then the decode tokens so far
  std::vector<std::vector<float>> kept_keys_;      // per head: the key rows of prompt_kept_, contiguous
  // Per head, the per-channel maximum and minimum key of every complete chunk of `s` cache entries (a
  // complete chunk's entries never change within a layer): chunk k's channel ch at [ch * capacity + k],
  // channel-major so that a step's logits stream each selected channel's row.
  struct ChunkExtrema {
    int64_t s = 0, num_chunks = 0, capacity = 0;
    std::vector<float> max, min;
  };
  std::vector<ChunkExtrema> extrema_;
  // Extends head h's extrema to chunks [0, complete) of size s (recomputed when s changes).
  void UpdateExtrema(size_t h, int64_t s, int64_t complete, const std::vector<int32_t>& cache);
  int64_t budget_ = 0;
  RowMatrixXf logits_;              // Step() scratch: group_size x chunks
  std::vector<const float*> rows_;  // Step() scratch: the selected channels' extrema rows
  std::vector<float> weights_;      // Step() scratch: group_size x channels query entries
  std::vector<float> staging_;      // Step() scratch of WeightedRowSums
};

// Stage-1 scores of one head (prompt_len values; the window is +infinity).
std::vector<double> SnapKvPlusPlusScores(const HeadContext& head, int64_t window, int kernel);

}  // namespace kvsim

#endif  // KVSIM_POLICIES_TOKEN_ROCKETKV_POLICY_H_
