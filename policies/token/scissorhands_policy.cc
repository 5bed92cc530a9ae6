#include "policies/token/scissorhands_policy.h"

#include <algorithm>
#include <numeric>

#include "Eigen/Core"
#include "policies/token/token_policy_util.h"

namespace kvsim {

void ScissorhandsPolicy::Record(HeadState& state, const float* const* rows, int num_rows, bool prefix) {
  const size_t size = state.cache.size();
  const int32_t* cache = state.cache.data();
  share_.resize(size);
  values_.resize(size);
  Eigen::Map<Eigen::ArrayXd> share(share_.data(), size), values(values_.data(), size);
  bool empty = true;  // no row added to `share` yet (its storage holds the last call's values)
  for (int r = 0; r < num_rows; ++r) {
    const float* row = rows[r];
    if (prefix) {  // cache[k] == k: a contiguous (vectorised) conversion instead of a gather
      values = Eigen::Map<const Eigen::ArrayXf>(row, size).cast<double>();
    } else {
      for (size_t k = 0; k < size; ++k) values_[k] = row[cache[k]];
    }
    const double mass = values.sum();
    if (mass <= 0) continue;
    const double factor = 1.0 / (mass * num_rows);  // this row's attention renormalised over the cache
    if (empty) {
      share = values * factor;
    } else {
      share += values * factor;
    }
    empty = false;
  }
  if (empty) share.setZero();
  // Below the uniform share: counted, and remembered until the record leaves the history. Branch-free
  // (most tokens are below it, but not predictably).
  if (low_.size() < size) low_.resize(size);
  int32_t* low = low_.data();
  size_t num_low = 0;
  const double uniform = 1.0 / static_cast<double>(size);
  for (size_t k = 0; k < size; ++k) {
    const bool is_low = share_[k] < uniform;
    low[num_low] = cache[k];
    num_low += is_low;
    state.counts[cache[k]] += is_low;
  }
  state.history.emplace_back(low, low + num_low);
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
    std::vector<const float*> rows(head.group_size);
    for (int64_t r = 0; r < w; ++r) {
      state.cache.resize(n - w + r + 1);
      std::iota(state.cache.begin(), state.cache.end(), 0);
      for (int j = 0; j < head.group_size; ++j) rows[j] = probs.row(j, r);
      Record(state, rows.data(), head.group_size, /*prefix=*/true);
    }
    state.cache.resize(n);
    std::iota(state.cache.begin(), state.cache.end(), 0);
    if (n > budget_ - batch_) DropBatch(state, n - 1);
  }
}

void ScissorhandsPolicy::Step(const LayerStep& step, std::vector<KeptSet>* kept) {
  for (size_t h = 0; h < heads_.size(); ++h) {
    HeadState& state = heads_[h];
    state.cache.push_back(static_cast<int32_t>(step.position));
    if (static_cast<int64_t>(state.cache.size()) > budget_) DropBatch(state, step.position);
    (*kept)[h].per_query.assign(1, state.cache);
    rows_.resize(state.group_size);
    for (int j = 0; j < state.group_size; ++j) rows_[j] = step.heads[h].row(j);
    Record(state, rows_.data(), state.group_size, /*prefix=*/false);
  }
}

KVSIM_REGISTER_TOKEN_POLICY("scissorhands", ScissorhandsPolicy);

}  // namespace kvsim
