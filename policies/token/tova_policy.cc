#include "policies/token/tova_policy.h"

#include <algorithm>

#include "policies/token/token_policy_util.h"

namespace kvsim {

void TovaPolicy::BeginLayer(absl::Span<const HeadContext> heads, int64_t budget_tokens) {
  budget_ = budget_tokens;
  group_sizes_.clear();
  for (const HeadContext& h : heads) group_sizes_.push_back(h.group_size);
  const int64_t n = heads[0].prompt_len;
  score_.assign(heads[0].seq_len, 0.0);
  const int64_t keep = std::min(n, std::max<int64_t>(0, budget_ - 1));
  if (heads[0].query_start >= n) {  // no prompt query stored: keep the most recent
    cache_.clear();
    for (int64_t i = n - keep; i < n; ++i) cache_.push_back(static_cast<int32_t>(i));
    return;
  }
  std::vector<double> mean(n, 0.0);
  int rows = 0;
  for (const HeadContext& h : heads) {
    RowMatrixXf probs = PromptWindowAttention(h, 1);  // the last prompt query of each member
    for (int64_t r = 0; r < probs.rows(); ++r, ++rows) {
      for (int64_t i = 0; i < n; ++i) mean[i] += probs(r, i);
    }
  }
  cache_ = TopKIndices(mean, keep);
}

void TovaPolicy::Step(const LayerStep& step, std::vector<KeptSet>* kept) {
  cache_.push_back(static_cast<int32_t>(step.position));
  for (size_t h = 0; h < group_sizes_.size(); ++h) (*kept)[h].per_query.assign(1, cache_);
  if (static_cast<int64_t>(cache_.size()) <= budget_ - 1) return;
  for (int32_t i : cache_) score_[i] = 0;
  for (size_t h = 0; h < group_sizes_.size(); ++h) {
    for (int j = 0; j < group_sizes_[h]; ++j) {
      const float* row = step.heads[h].row(j);
      double mass = 0;
      for (int32_t i : cache_) mass += row[i];
      if (mass <= 0) continue;
      for (int32_t i : cache_) score_[i] += row[i] / mass;
    }
  }
  size_t victim = 0;
  for (size_t k = 1; k < cache_.size(); ++k) {
    const int32_t i = cache_[k], v = cache_[victim];
    if (score_[i] < score_[v] || (score_[i] == score_[v] && i < v)) victim = k;
  }
  cache_[victim] = cache_.back();
  cache_.pop_back();
}

KVSIM_REGISTER_TOKEN_POLICY("tova", TovaPolicy);

}  // namespace kvsim
