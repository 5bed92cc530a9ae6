// File: policies/token/prompt_score_policy.h
//
// PromptScorePolicy: the shared shape of "score the prompt once after prefill, keep the best" eviction
// policies (kvpress score presses: random, knorm, SnapKV, PyramidKV, Expected Attention, and the
// eviction oracle). After prefill each KV head's prompt tokens are ranked once by the subclass's score
// (ties: lower position first; +infinity = protected). Decode tokens are always kept, so at the decode
// step at position p the head keeps the best (B_h - c) prompt tokens plus the c = p - prompt_len + 1
// decode tokens 0..p (if c >= B_h, the last B_h tokens). Because the ranking is fixed, the kept prompt
// set only shrinks: eviction is permanent, one prompt token per decode step, as kvpress's decoding
// wrapper does with a static score.
//
// Per-head budgets B_h default to the budget; subclasses may move budget between the layer's heads or
// set a per-layer budget (HeadBudgets()).
//
// Thread-safety: as TokenPolicy.
#ifndef KVSIM_POLICIES_TOKEN_PROMPT_SCORE_POLICY_H_
#define KVSIM_POLICIES_TOKEN_PROMPT_SCORE_POLICY_H_

#include <cstdint>
#include <vector>

#include "policies/token/token_policy.h"

namespace kvsim {

class PromptScorePolicy : public TokenPolicy {
 public:
  Kind kind() const override { return Kind::kEvict; }
  void BeginLayer(absl::Span<const HeadContext> heads, int64_t budget_tokens) final;
  void Step(const LayerStep& step, std::vector<KeptSet>* kept) final;

  // Scores of head h's prompt tokens (prompt_len values; higher = keep; +infinity = always keep).
  // Called once per head by BeginLayer, in head order.
  virtual std::vector<double> ScorePrompt(absl::Span<const HeadContext> heads, int h) = 0;

  // Per-head budgets for this layer given every head's scores. Default: `budget_tokens` for each.
  virtual std::vector<int64_t> HeadBudgets(absl::Span<const HeadContext> heads,
                                           const std::vector<std::vector<double>>& scores, int64_t budget_tokens);

  // The budgets chosen for the current layer (after BeginLayer).
  const std::vector<int64_t>& budgets() const { return budgets_; }

 private:
  int64_t prompt_len_ = 0;
  std::vector<std::vector<int32_t>> rankings_;  // per head: its top budgets_[h] prompt positions, best first
  std::vector<int64_t> budgets_;
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_TOKEN_PROMPT_SCORE_POLICY_H_
