#include "policies/token/snapkv_policy.h"

#include <algorithm>
#include <limits>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "policies/token/token_policy_util.h"

namespace kvsim {

namespace {

// SnapKvScores without the memo.
std::vector<double> ComputeSnapKvScores(const HeadContext& head, int64_t window, int kernel) {
  const int64_t n = head.prompt_len;
  const int64_t w = std::min(window, n - head.query_start);
  const int64_t scored = n - w;  // tokens outside the window
  std::vector<double> scores(n, 0.0);
  if (w == 0) return scores;  // no observation window stored: no information, keep the earliest
  RowMatrixXf scratch;
  const PromptWindowRows probs = PromptWindowAttentionRows(head, w, &scratch);  // no copy out of the cache
  std::vector<double> mean(scored), pooled(scored);
  const int half = kernel / 2;
  for (int j = 0; j < head.group_size; ++j) {
    const Eigen::VectorXf sums = ColumnSums(probs.row(j, 0), w, n);
    for (int64_t i = 0; i < scored; ++i) mean[i] = static_cast<double>(sums(i)) / w;
    for (int64_t i = 0; i < scored; ++i) {
      double sum = 0;
      for (int64_t k = i - half; k <= i + half; ++k) {
        if (k >= 0 && k < scored) sum += mean[k];
      }
      scores[i] += sum / kernel / head.group_size;
    }
  }
  double max_score = 0;
  for (int64_t i = 0; i < scored; ++i) max_score = std::max(max_score, scores[i]);
  // kvpress pads the window with the maximum score; +infinity states the intent (never pruned) exactly.
  for (int64_t i = scored; i < n; ++i) scores[i] = std::numeric_limits<double>::infinity();
  return scores;
}

}  // namespace

std::vector<double> SnapKvScores(const HeadContext& head, int64_t window, int kernel) {
  if (head.prompt_cache != nullptr) {  // computed once per head for every policy applying this rule
    std::lock_guard<std::mutex> lock(head.prompt_cache->scores_mutex);
    std::vector<double>& memo = head.prompt_cache->scores[absl::StrCat("snapkv/", window, "/", kernel)];
    if (memo.empty()) memo = ComputeSnapKvScores(head, window, kernel);
    return memo;
  }
  return ComputeSnapKvScores(head, window, kernel);
}

std::vector<double> SnapKvPolicy::ScorePrompt(absl::Span<const HeadContext> heads, int h) {
  return SnapKvScores(heads[h], kWindow, kKernel);
}

KVSIM_REGISTER_TOKEN_POLICY("snapkv", SnapKvPolicy);

}  // namespace kvsim
