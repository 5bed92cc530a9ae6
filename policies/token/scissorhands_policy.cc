#include "policies/token/scissorhands_policy.h"

#include <algorithm>

#include "Eigen/Core"
#include "policies/token/token_policy_util.h"

namespace kvsim {

template <typename F>
void ScissorhandsPolicy::Record(HeadState& state, F attention, int rows) {
  const size_t size = state.cache.size();
  share_.assign(size, 0.0);
  values_.resize(size);
  Eigen::Map<Eigen::ArrayXd> share(share_.data(), size), values(values_.data(), size);
  for (int r = 0; r < rows; ++r) {
    double mass = 0;
    for (size_t k = 0; k < size; ++k) mass += (values_[k] = attention(r, state.cache[k]));
    if (mass <= 0) continue;
    share += values / mass / static_cast<double>(rows);  // vectorised: the same two divisions per token
  }
  std::vector<int32_t> low;
  const double uniform = 1.0 / static_cast<double>(size);
  for (size_t k = 0; k < size; ++k) {
    if (share_[k] < uniform) {
      low.push_back(state.cache[k]);
      ++state.counts[state.cache[k]];
    }
  }
  state.history.push_back(std::move(low));
  if (static_cast<int>(state.history.size()) > kHistory) {
    for (int32_t i : state.history.front()) --state.counts[i];
    state.history.pop_front();
  }
}

void ScissorhandsPolicy::DropBatch(HeadState& state, int64_t position) {
  const int64_t target = std::max<int64_t>(0, budget_ - batch_);
  std::vector<int32_t> candidates, protected_tokens;
  for (int32_t i : state.cache) (i > position - recent_ ? protected_tokens : candidates).push_back(i);
  std::sort(candidates.begin(), candidates.end(), [&](int32_t a, int32_t b) {
    return state.counts[a] > state.counts[b] || (state.counts[a] == state.counts[b] && a < b);
  });
  const int64_t drop = std::min<int64_t>(candidates.size(), static_cast<int64_t>(state.cache.size()) - target);
  state.cache.assign(candidates.begin() + drop, candidates.end());
  state.cache.insert(state.cache.end(), protected_tokens.begin(), protected_tokens.end());
}

void ScissorhandsPolicy::BeginLayer(absl::Span<const HeadContext> heads, int64_t budget_tokens) {
  budget_ = budget_tokens;
  recent_ = std::max<int64_t>(1, budget_tokens / 8);
  batch_ = std::max<int64_t>(1, budget_tokens / 16);
  heads_.assign(heads.size(), HeadState());
  for (size_t h = 0; h < heads.size(); ++h) {
    const HeadContext& head = heads[h];
    HeadState& state = heads_[h];
    state.group_size = head.group_size;
    state.counts.assign(head.seq_len, 0);
    const int64_t n = head.prompt_len;
    const int64_t w = std::min<int64_t>(kHistory, n - head.query_start);
    RowMatrixXf scratch;
    const PromptWindowRows probs = PromptWindowAttentionRows(head, w, &scratch);
    // Each window query t sees the prompt tokens 0..t.
    for (int64_t r = 0; r < w; ++r) {
      const int64_t t = n - w + r;
      state.cache.clear();
      for (int64_t i = 0; i <= t; ++i) state.cache.push_back(static_cast<int32_t>(i));
      Record(state, [&](int j, int32_t i) { return static_cast<double>(probs.row(j, r)[i]); }, head.group_size);
    }
    state.cache.clear();
    for (int64_t i = 0; i < n; ++i) state.cache.push_back(static_cast<int32_t>(i));
    if (n > budget_ - batch_) DropBatch(state, n - 1);
  }
}

void ScissorhandsPolicy::Step(const LayerStep& step, std::vector<KeptSet>* kept) {
  for (size_t h = 0; h < heads_.size(); ++h) {
    HeadState& state = heads_[h];
    state.cache.push_back(static_cast<int32_t>(step.position));
    if (static_cast<int64_t>(state.cache.size()) > budget_) DropBatch(state, step.position);
    (*kept)[h].per_query.assign(1, state.cache);
    const HeadStep& rows = step.heads[h];
    Record(state, [&](int j, int32_t i) { return static_cast<double>(rows.row(j)[i]); }, state.group_size);
  }
}

KVSIM_REGISTER_TOKEN_POLICY("scissorhands", ScissorhandsPolicy);

}  // namespace kvsim
