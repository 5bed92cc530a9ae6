// File: policies/token/quest_policy.h
//
// "quest" (Tang et al. 2024, "Quest: Query-Aware Sparsity for Efficient Long-Context LLM Inference"):
// nothing is evicted. The keys are split into 16-token pages; each page keeps per-channel key minima m
// and maxima M. At each decode step, per query head, every complete earlier page gets the upper bound
// U_P = sum_c max(q_c M_{P,c}, q_c m_{P,c}) of its best logit; the query reads the page holding the
// current token plus the top K - 1 other pages by U_P (ties: earlier page), with K = max(3, B / 16).
// Layers 0 and 1 stay dense, as in the paper. Kind: kSelect. A page's bounds are computed in BeginLayer for
// the prompt's complete pages and at the first step that reads it for later ones (the paper's metadata is
// updated as pages fill), so the policy never reads keys of positions after the current step.
#ifndef KVSIM_POLICIES_TOKEN_QUEST_POLICY_H_
#define KVSIM_POLICIES_TOKEN_QUEST_POLICY_H_

#include "policies/token/token_policy.h"
#include "policies/token/token_policy_util.h"

namespace kvsim {

class QuestPolicy final : public TokenPolicy {
 public:
  static constexpr int64_t kPageTokens = 16;
  static constexpr int kDenseLayers = 2;
  explicit QuestPolicy(const TokenPolicyOptions&) {}
  std::string Name() const override { return "quest"; }
  Kind kind() const override { return Kind::kSelect; }
  void BeginLayer(absl::Span<const HeadContext> heads, int64_t budget_tokens) override;
  void Step(const LayerStep& step, std::vector<KeptSet>* kept) override;

 private:
  // Computes the bounds of pages [bounded_pages_, pages) of every head.
  void BoundPages(int64_t pages);

  std::vector<HeadContext> heads_;
  int64_t bounded_pages_ = 0;                            // pages [0, this) have bounds
  std::vector<std::vector<float>> page_min_, page_max_;  // per head: pages x head_dim
  int64_t num_pages_ = 0;                                // pages of the budget (K)
  std::vector<float> bounds_;
  TopKScratch scratch_;
  std::vector<int32_t> pages_;
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_TOKEN_QUEST_POLICY_H_
