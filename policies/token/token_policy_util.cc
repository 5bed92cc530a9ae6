#include "policies/token/token_policy_util.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "util/check.h"

namespace kvsim {
namespace {

struct ByScore {
  const std::vector<double>* scores;
  bool operator()(int32_t a, int32_t b) const {
    const double sa = (*scores)[a], sb = (*scores)[b];
    return sa > sb || (sa == sb && a < b);
  }
};

}  // namespace

std::vector<int32_t> TopKIndices(const std::vector<double>& scores, int64_t k) {
  const int64_t n = static_cast<int64_t>(scores.size());
  k = std::max<int64_t>(0, std::min(k, n));
  std::vector<int32_t> index(n);
  std::iota(index.begin(), index.end(), 0);
  ByScore by{&scores};
  if (k < n) std::nth_element(index.begin(), index.begin() + k, index.end(), by);
  index.resize(k);
  std::sort(index.begin(), index.end(), by);
  return index;
}

std::vector<int32_t> RankIndices(const std::vector<double>& scores) {
  return TopKIndices(scores, static_cast<int64_t>(scores.size()));
}

RowMatrixXf PromptWindowAttention(const HeadContext& head, int64_t window) {
  const int64_t n = head.prompt_len;
  const int64_t w = std::min(window, n - head.query_start);
  KVSIM_CHECK(w >= 0);
  const int d = head.head_dim;
  Eigen::Map<const RowMatrixXf> keys(head.keys, n, d);
  RowMatrixXf probs(head.group_size * w, n);
  if (w == 0) return probs;
  for (int j = 0; j < head.group_size; ++j) {
    Eigen::Map<const RowMatrixXf> queries(head.query(j, n - w), w, d);
    probs.middleRows(j * w, w).noalias() = queries * keys.transpose();
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (int64_t row = 0; row < probs.rows(); ++row) {
    const int64_t position = n - w + row % w;
    float* r = probs.row(row).data();
    float max_logit = -INFINITY;
    for (int64_t i = 0; i <= position; ++i) max_logit = std::max(max_logit, r[i] * scale);
    double total = 0;
    for (int64_t i = 0; i <= position; ++i) total += (r[i] = std::exp(r[i] * scale - max_logit));
    const float inv = static_cast<float>(1.0 / total);
    for (int64_t i = 0; i <= position; ++i) r[i] *= inv;
    for (int64_t i = position + 1; i < n; ++i) r[i] = 0.0f;
  }
  return probs;
}

void KeepRankedPlusRange(const std::vector<int32_t>& ranking, int64_t count, int64_t from, int64_t to,
                         std::vector<int32_t>* kept) {
  count = std::max<int64_t>(0, std::min<int64_t>(count, ranking.size()));
  kept->assign(ranking.begin(), ranking.begin() + count);
  for (int64_t i = from; i <= to; ++i) kept->push_back(static_cast<int32_t>(i));
}

}  // namespace kvsim
