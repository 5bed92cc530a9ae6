// File: policies/token/expected_attention_policy.h
//
// "expected_attention" (kvpress ExpectedAttentionPress, Devoto et al. 2025): scores each prompt token by
// the attention the *future* queries are expected to give it, from statistics of the prompt queries.
// Per query head of the group: the stored prompt queries (positions < 4 dropped) are un-rotated to
// pre-RoPE form (ApplyRope of policies/token/rope.h: HF rotate_half pairs (c, c + d/2), theta_c =
// base^(-2c/d), positions divided by the factor under linear scaling; other scaling types are treated as
// unscaled, an approximation); their mean mu and covariance S are taken; R = the RoPE rotation averaged
// over the next 512 positions after the prompt. With the post-RoPE keys k_i:
//   z_i = k_i . (R mu) / sqrt(d) + k_i^T (R S R^T) k_i / (2 d)
// score_i = (softmax_i(z), averaged over the group, + epsilon) * ||v_i||, epsilon = 0.01; the first 4
// tokens (sinks) are protected. Scored once after prefill (PromptScorePolicy). Kind: kEvict (permanent).
// Wrap it as "adakv+expected_attention" for kvpress's default (head-adaptive budgets).
#ifndef KVSIM_POLICIES_TOKEN_EXPECTED_ATTENTION_POLICY_H_
#define KVSIM_POLICIES_TOKEN_EXPECTED_ATTENTION_POLICY_H_

#include "policies/token/prompt_score_policy.h"
#include "policies/token/token_policy_util.h"

namespace kvsim {

class ExpectedAttentionPolicy final : public PromptScorePolicy {
 public:
  static constexpr int64_t kFuturePositions = 512;
  static constexpr int64_t kSinks = 4;
  static constexpr double kEpsilon = 0.01;
  explicit ExpectedAttentionPolicy(const TokenPolicyOptions&) {}
  std::string Name() const override { return "expected_attention"; }
  std::vector<double> ScorePrompt(absl::Span<const HeadContext> heads, int h) override;

 private:
  static constexpr int64_t kKeysPerChunk = 512;  // rows of scratch_ with few queries (see the .cc)
  RowMatrixXf scratch_;  // keys x (R S R^T), or a chunk of keys x L^T with few queries (see the .cc)
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_TOKEN_EXPECTED_ATTENTION_POLICY_H_
