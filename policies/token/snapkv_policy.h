// File: policies/token/snapkv_policy.h
//
// "snapkv" (Li et al. 2024, "SnapKV: LLM Knows What You are Looking for Before Generation"; scoring as in
// kvpress SnapKVPress): with the observation window Omega = the last W = 64 prompt queries (fewer if the
// trace stores fewer), for each group member the attention of each window query over all prompt keys
// (causal softmax), averaged over the window, for the non-window tokens i < prompt_len - W; then
// avg_pool1d (kernel 5, padding 2, zero padding counted, stride 1); then averaged over the GQA group.
// Window tokens get the maximum score (never pruned). Scored once after prefill (PromptScorePolicy);
// B tokens per KV head. Kind: kEvict (permanent).
#ifndef KVSIM_POLICIES_TOKEN_SNAPKV_POLICY_H_
#define KVSIM_POLICIES_TOKEN_SNAPKV_POLICY_H_

#include "policies/token/prompt_score_policy.h"

namespace kvsim {

class SnapKvPolicy : public PromptScorePolicy {
 public:
  static constexpr int64_t kWindow = 64;
  static constexpr int kKernel = 5;
  explicit SnapKvPolicy(const TokenPolicyOptions&) {}
  std::string Name() const override { return "snapkv"; }
  std::vector<double> ScorePrompt(absl::Span<const HeadContext> heads, int h) override;
};

// The SnapKV score vector of one head with window `window` and average-pooling kernel `kernel` (exposed
// for PyramidKV and tests).
std::vector<double> SnapKvScores(const HeadContext& head, int64_t window, int kernel);

}  // namespace kvsim

#endif  // KVSIM_POLICIES_TOKEN_SNAPKV_POLICY_H_
