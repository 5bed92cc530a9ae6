#include "policies/token/h2o_policy.h"

#include <algorithm>

#include "policies/token/token_policy_util.h"

namespace kvsim {

void H2oPolicy::BeginLayer(absl::Span<const HeadContext> heads, int64_t budget_tokens) {
  budget_ = budget_tokens;
  recent_ = std::max<int64_t>(1, budget_tokens / 2);
  heads_.assign(heads.size(), HeadState());
  for (size_t h = 0; h < heads.size(); ++h) {
    const HeadContext& head = heads[h];
    HeadState& state = heads_[h];
    state.group_size = head.group_size;
    state.hh.assign(head.seq_len, 0.0);
    const int64_t n = head.prompt_len;
    if (head.column_sums != nullptr) {
      for (int j = 0; j < head.group_size; ++j) {
        for (int64_t i = 0; i < n; ++i) state.hh[i] += head.column_sums[j * n + i];
      }
    } else {
      const std::vector<double> sums = PromptAttentionColumnSums(head);
      for (int64_t i = 0; i < n; ++i) state.hh[i] = sums[i];
    }
    // Cut the prompt to the budget: the recent B_r plus the heaviest others.
    const int64_t recent = std::min(recent_, n);
    std::vector<double> older(state.hh.begin(), state.hh.begin() + (n - recent));
    const int64_t heavy = std::max<int64_t>(0, std::min(budget_ - recent, n - recent));
    state.cache = TopKIndices(older, heavy);
    for (int64_t i = n - recent; i < n; ++i) state.cache.push_back(static_cast<int32_t>(i));
  }
}

void H2oPolicy::Step(const LayerStep& step, std::vector<KeptSet>* kept) {
  const int64_t p = step.position;
  for (size_t h = 0; h < heads_.size(); ++h) {
    HeadState& state = heads_[h];
    state.cache.push_back(static_cast<int32_t>(p));
    if (static_cast<int64_t>(state.cache.size()) > budget_) {
      size_t victim = state.cache.size();
      for (size_t k = 0; k < state.cache.size(); ++k) {
        const int32_t i = state.cache[k];
        if (i > p - recent_) continue;  // protected recent window
        if (victim == state.cache.size() || state.hh[i] < state.hh[state.cache[victim]] ||
            (state.hh[i] == state.hh[state.cache[victim]] && i < state.cache[victim])) {
          victim = k;
        }
      }
      if (victim < state.cache.size()) {
        state.cache[victim] = state.cache.back();
        state.cache.pop_back();
      }
    }
    for (int j = 0; j < state.group_size; ++j) {
      const float* row = step.heads[h].row(j);
      gathered_.resize(state.cache.size());  // the row's entries at the cache, read once
      double mass = 0;
      for (size_t k = 0; k < state.cache.size(); ++k) mass += (gathered_[k] = row[state.cache[k]]);
      if (mass <= 0) continue;
      for (size_t k = 0; k < state.cache.size(); ++k) state.hh[state.cache[k]] += gathered_[k] / mass;
    }
    (*kept)[h].per_query.assign(1, state.cache);
  }
}

KVSIM_REGISTER_TOKEN_POLICY("h2o", H2oPolicy);

}  // namespace kvsim
