#include "policies/token/quest_policy.h"

#include <algorithm>

#include "Eigen/Core"
#include "policies/token/token_policy_util.h"

namespace kvsim {

void QuestPolicy::BeginLayer(absl::Span<const HeadContext> heads, int64_t budget_tokens) {
  heads_.assign(heads.begin(), heads.end());
  num_pages_ = std::max<int64_t>(3, budget_tokens / kPageTokens);
  page_min_.resize(heads.size());  // the per-head vectors keep their storage from layer to layer
  page_max_.resize(heads.size());
  for (size_t h = 0; h < heads.size(); ++h) {
    const int64_t pages = heads[h].seq_len / kPageTokens;  // complete pages only
    page_min_[h].resize(pages * heads[h].head_dim);
    page_max_[h].resize(pages * heads[h].head_dim);
  }
  bounded_pages_ = 0;
  BoundPages(heads.empty() ? 0 : heads[0].prompt_len / kPageTokens);
}

void QuestPolicy::BoundPages(int64_t pages) {
  for (size_t h = 0; h < heads_.size(); ++h) {
    const HeadContext& head = heads_[h];
    const int d = head.head_dim;
    // Per page, the channels' minima and maxima over its keys, a whole key row at a time.
    for (int64_t page = bounded_pages_; page < pages; ++page) {
      Eigen::Map<Eigen::ArrayXf> lo(&page_min_[h][page * d], d), hi(&page_max_[h][page * d], d);
      lo = Eigen::Map<const Eigen::ArrayXf>(head.key(page * kPageTokens), d);
      hi = lo;
      for (int64_t i = page * kPageTokens + 1; i < (page + 1) * kPageTokens; ++i) {
        const Eigen::Map<const Eigen::ArrayXf> key(head.key(i), d);
        lo = lo.min(key);
        hi = hi.max(key);
      }
    }
  }
  bounded_pages_ = std::max(bounded_pages_, pages);
}

void QuestPolicy::Step(const LayerStep& step, std::vector<KeptSet>* kept) {
  const int64_t p = step.position;
  const int64_t current_page = p / kPageTokens;
  // Pages completed since the prompt are bounded when first read: their keys exist by now (a
  // closed-loop cache fills them as decoding goes; a trace has them all along, with the same result).
  if (current_page > bounded_pages_) BoundPages(current_page);
  for (size_t h = 0; h < heads_.size(); ++h) {
    const HeadContext& head = heads_[h];
    KeptSet& set = (*kept)[h];
    if (head.layer < kDenseLayers || current_page + 1 <= num_pages_) {
      set.per_query.resize(1);
      set.per_query[0].resize(p + 1);
      for (int64_t i = 0; i <= p; ++i) set.per_query[0][i] = static_cast<int32_t>(i);
      continue;
    }
    set.per_query.resize(head.group_size);
    const int d = head.head_dim;
    for (int j = 0; j < head.group_size; ++j) {
      // sum_c max(q_c M_c, q_c m_c) = M . max(q, 0) + m . min(q, 0).
      Eigen::Map<const Eigen::VectorXf> q(head.query(j, p), d);
      Eigen::Map<const RowMatrixXf> hi(page_max_[h].data(), current_page, d);
      Eigen::Map<const RowMatrixXf> lo(page_min_[h].data(), current_page, d);
      bounds_.resize(current_page);
      Eigen::Map<Eigen::VectorXf>(bounds_.data(), current_page).noalias() =
          hi * q.cwiseMax(0.0f) + lo * q.cwiseMin(0.0f);
      std::vector<int32_t>& tokens = set.per_query[j];
      tokens.clear();
      TopKSet(bounds_.data(), current_page, num_pages_ - 1, &scratch_, &pages_);
      for (int32_t page : pages_) {
        for (int64_t i = page * kPageTokens; i < (page + 1) * kPageTokens; ++i) {
          tokens.push_back(static_cast<int32_t>(i));
        }
      }
      for (int64_t i = current_page * kPageTokens; i <= p; ++i) tokens.push_back(static_cast<int32_t>(i));
    }
  }
}

KVSIM_REGISTER_TOKEN_POLICY("quest", QuestPolicy);

}  // namespace kvsim
