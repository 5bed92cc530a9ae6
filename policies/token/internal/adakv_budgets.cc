#include "policies/token/internal/adakv_budgets.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "policies/token/token_policy_util.h"

namespace kvsim {

std::vector<int64_t> AdaKvBudgets(const std::vector<std::vector<double>>& scores, int64_t budget, double safeguard) {
  const int64_t guard = static_cast<int64_t>(std::floor(safeguard * budget));
  std::vector<int64_t> budgets(scores.size(), 0);
  struct Candidate {
    double score;
    int head;
    int32_t position;
  };
  std::vector<Candidate> rest;
  // Slots beyond the safeguards, over all heads. No head can take more than that many of them, so each
  // head's candidates past rank guard + total_free can never be chosen: only its top ranks are sorted.
  int64_t total_free = 0;
  for (const std::vector<double>& s : scores) {
    const int64_t n = static_cast<int64_t>(s.size());
    total_free += std::min(budget, n) - std::min(guard, n);
  }
  int64_t free_slots = 0;
  for (size_t h = 0; h < scores.size(); ++h) {
    const int64_t n = static_cast<int64_t>(scores[h].size());
    budgets[h] = std::min(guard, n);
    free_slots += std::min(budget, n) - budgets[h];
    const std::vector<int32_t> ranking = TopKIndices(scores[h], budgets[h] + total_free);
    for (size_t k = budgets[h]; k < ranking.size(); ++k) {
      rest.push_back({scores[h][ranking[k]], static_cast<int>(h), ranking[k]});
    }
  }
  free_slots = std::min<int64_t>(free_slots, rest.size());
  auto better = [](const Candidate& a, const Candidate& b) {
    return std::make_tuple(-a.score, a.head, a.position) < std::make_tuple(-b.score, b.head, b.position);
  };
  std::nth_element(rest.begin(), rest.begin() + free_slots, rest.end(), better);
  for (int64_t k = 0; k < free_slots; ++k) ++budgets[rest[k].head];
  // Budget beyond the prompt (room for decode tokens) stays with each head.
  for (size_t h = 0; h < scores.size(); ++h) {
    budgets[h] += budget - std::min<int64_t>(budget, static_cast<int64_t>(scores[h].size()));
  }
  return budgets;
}

}  // namespace kvsim
