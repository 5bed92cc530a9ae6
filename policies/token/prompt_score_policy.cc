#include "policies/token/prompt_score_policy.h"

#include <algorithm>

#include "policies/token/token_policy_util.h"
#include "util/check.h"

namespace kvsim {

std::vector<int64_t> PromptScorePolicy::HeadBudgets(absl::Span<const HeadContext> heads,
                                                    const std::vector<std::vector<double>>& scores,
                                                    int64_t budget_tokens) {
  return std::vector<int64_t>(heads.size(), budget_tokens);
}

void PromptScorePolicy::BeginLayer(absl::Span<const HeadContext> heads, int64_t budget_tokens) {
  KVSIM_CHECK(!heads.empty() && budget_tokens >= 1);
  prompt_len_ = heads[0].prompt_len;
  std::vector<std::vector<double>> scores;
  for (size_t h = 0; h < heads.size(); ++h) {
    scores.push_back(ScorePrompt(heads, static_cast<int>(h)));
    KVSIM_CHECK(static_cast<int64_t>(scores.back().size()) == prompt_len_) << Name();
  }
  budgets_ = HeadBudgets(heads, scores, budget_tokens);
  // Step() reads at most a head's budget of its ranking: the top entries, in rank order, are all it needs.
  rankings_.clear();
  for (size_t h = 0; h < scores.size(); ++h) rankings_.push_back(TopKIndices(scores[h], budgets_[h]));
}

void PromptScorePolicy::Step(const LayerStep& step, std::vector<KeptSet>* kept) {
  const int64_t decoded = step.position - prompt_len_ + 1;
  for (size_t h = 0; h < rankings_.size(); ++h) {
    (*kept)[h].per_query.resize(1);
    std::vector<int32_t>& set = (*kept)[h].per_query[0];
    const int64_t budget = std::max<int64_t>(1, budgets_[h]);
    if (decoded >= budget) {
      KeepRankedPlusRange(rankings_[h], 0, step.position - budget + 1, step.position, &set);
    } else {
      KeepRankedPlusRange(rankings_[h], budget - decoded, prompt_len_, step.position, &set);
    }
  }
}

}  // namespace kvsim
