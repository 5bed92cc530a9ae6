// File: policies/token/knorm_policy.h
//
// "knorm" (kvpress KnormPress, after Devoto et al. 2024, "A simple and effective L2 norm-based strategy
// for KV cache compression"): score_i = -||k_i||_2 over the post-RoPE keys, so tokens with the smallest
// key norms are kept. Scored once after prefill (PromptScorePolicy). Kind: kEvict (permanent).
#ifndef KVSIM_POLICIES_TOKEN_KNORM_POLICY_H_
#define KVSIM_POLICIES_TOKEN_KNORM_POLICY_H_

#include "policies/token/prompt_score_policy.h"

namespace kvsim {

class KnormPolicy final : public PromptScorePolicy {
 public:
  explicit KnormPolicy(const TokenPolicyOptions&) {}
  std::string Name() const override { return "knorm"; }
  std::vector<double> ScorePrompt(absl::Span<const HeadContext> heads, int h) override;
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_TOKEN_KNORM_POLICY_H_
