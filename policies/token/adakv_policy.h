// File: policies/token/adakv_policy.h
//
// "adakv+POLICY" (Feng et al. 2024, "Ada-KV: Optimizing KV Cache Eviction by Adaptive Budget Allocation";
// as kvpress AdaKVPress): a wrapper around a score-once policy (PromptScorePolicy: snapkv, knorm,
// expected_attention, random, oracle_evict, ...) that moves budget between the KV heads of a layer. With
// B per head and H heads, each head first keeps its top floor(0.2 B) tokens by the inner score (the
// safeguard); the remaining H (B - floor(0.2 B)) slots go to the highest inner scores among all the heads'
// other tokens together (ties: lower head, then lower position). The total equals H B; per-head budgets
// vary. Kind: kEvict (permanent). "adakv" alone wraps nothing useful and is refused.
#ifndef KVSIM_POLICIES_TOKEN_ADAKV_POLICY_H_
#define KVSIM_POLICIES_TOKEN_ADAKV_POLICY_H_

#include <memory>

#include "policies/token/prompt_score_policy.h"

namespace kvsim {

class AdaKvPolicy final : public PromptScorePolicy {
 public:
  static constexpr double kSafeguard = 0.2;
  explicit AdaKvPolicy(std::unique_ptr<PromptScorePolicy> inner) : inner_(std::move(inner)) {}
  std::string Name() const override { return "adakv+" + inner_->Name(); }
  std::vector<double> ScorePrompt(absl::Span<const HeadContext> heads, int h) override {
    return inner_->ScorePrompt(heads, h);
  }
  std::vector<int64_t> HeadBudgets(absl::Span<const HeadContext> heads, const std::vector<std::vector<double>>& scores,
                                   int64_t budget_tokens) override;

 private:
  std::unique_ptr<PromptScorePolicy> inner_;
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_TOKEN_ADAKV_POLICY_H_
