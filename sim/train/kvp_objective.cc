#include "sim/train/kvp_objective.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "util/check.h"

namespace kvsim {
namespace {

double LogAddExp(double a, double b) {
  if (a == -std::numeric_limits<double>::infinity()) return b;
  const double hi = std::max(a, b), lo = std::min(a, b);
  return hi + std::log1p(std::exp(lo - hi));
}

std::vector<int32_t> ArgsortDescending(const std::vector<double>& keys) {
  std::vector<int32_t> order(keys.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return keys[a] > keys[b]; });
  return order;
}

}  // namespace

double AllBudgetCost(const std::vector<int32_t>& ranking, const std::vector<double>& importance) {
  double cost = 0;
  for (size_t r = 0; r < ranking.size(); ++r) cost += static_cast<double>(r) * importance[ranking[r]];
  return cost;
}

std::vector<int32_t> OracleRanking(const std::vector<double>& importance) { return ArgsortDescending(importance); }

std::vector<int32_t> RankByScores(const float* scores, int64_t n) {
  return ArgsortDescending(std::vector<double>(scores, scores + n));
}

double NormalisedReward(double cost, double oracle_cost) {
  if (!(oracle_cost > 0)) return 1.0;
  return 2.0 - cost / oracle_cost;
}

double UniformOpen(std::mt19937_64& rng) {
  return (static_cast<double>(rng() >> 11) + 0.5) * (1.0 / 9007199254740992.0);  // (k + 1/2) / 2^53
}

double Gumbel(std::mt19937_64& rng) { return -std::log(-std::log(UniformOpen(rng))); }

std::vector<int32_t> GumbelSortPermutation(const float* scores, int64_t n, std::mt19937_64& rng) {
  std::vector<double> keys(n);
  for (int64_t i = 0; i < n; ++i) keys[i] = static_cast<double>(scores[i]) + Gumbel(rng);
  return ArgsortDescending(keys);
}

double PlackettLuceLogProb(const float* scores, const std::vector<int32_t>& ranking, std::vector<double>* grad) {
  const size_t n = ranking.size();
  // log_z[r] = log sum_{m >= r} exp s_{ranking[m]}, from the end.
  std::vector<double> log_z(n);
  double acc = -std::numeric_limits<double>::infinity();
  for (size_t r = n; r-- > 0;) {
    acc = LogAddExp(acc, scores[ranking[r]]);
    log_z[r] = acc;
  }
  double log_prob = 0;
  for (size_t r = 0; r < n; ++r) log_prob += scores[ranking[r]] - log_z[r];
  if (grad != nullptr) {
    // d/ds_i = 1 - sum_{r <= rank(i)} exp(s_i - log_z[r]); the sum kept as a log (log_cum).
    grad->assign(n, 0.0);
    double log_cum = -std::numeric_limits<double>::infinity();
    for (size_t r = 0; r < n; ++r) {
      log_cum = LogAddExp(log_cum, -log_z[r]);
      const int32_t i = ranking[r];
      (*grad)[i] = 1.0 - std::exp(scores[i] + log_cum);
    }
  }
  return log_prob;
}

ObjectiveResult ReinforceGradient(const float* scores, const std::vector<double>& importance, int k,
                                  std::mt19937_64& rng) {
  KVSIM_CHECK(k >= 2);
  const int64_t n = importance.size();
  const double oracle_cost = AllBudgetCost(OracleRanking(importance), importance);
  std::vector<std::vector<int32_t>> rankings(k);
  std::vector<double> rewards(k);
  double total = 0;
  for (int s = 0; s < k; ++s) {
    rankings[s] = GumbelSortPermutation(scores, n, rng);
    rewards[s] = NormalisedReward(AllBudgetCost(rankings[s], importance), oracle_cost);
    total += rewards[s];
  }
  ObjectiveResult result;
  result.reward = total / k;
  result.grad.assign(n, 0.0);
  std::vector<double> log_prob_grad;
  for (int s = 0; s < k; ++s) {
    const double advantage = rewards[s] - (total - rewards[s]) / (k - 1);
    if (advantage == 0) continue;
    PlackettLuceLogProb(scores, rankings[s], &log_prob_grad);
    for (int64_t i = 0; i < n; ++i) result.grad[i] += advantage * log_prob_grad[i] / k;
  }
  return result;
}

ObjectiveResult SoftSortGradient(const float* scores, const std::vector<double>& importance, double temperature) {
  KVSIM_CHECK(temperature > 0);
  const int64_t n = importance.size();
  const std::vector<int32_t> target = OracleRanking(importance);
  const std::vector<int32_t> sorted = RankByScores(scores, n);  // s_[r] = scores[sorted[r]]
  ObjectiveResult result;
  result.grad.assign(n, 0.0);
  std::vector<double> logits(n), probs(n);
  double loss = 0;
  for (int64_t r = 0; r < n; ++r) {
    const double anchor = scores[sorted[r]];
    double max_logit = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < n; ++j) {
      logits[j] = -std::fabs(anchor - scores[j]) / temperature;
      max_logit = std::max(max_logit, logits[j]);
    }
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += (probs[j] = std::exp(logits[j] - max_logit));
    loss += -(logits[target[r]] - max_logit - std::log(sum));
    // dCE/dlogit_j = p_j - [j = target]; dlogit_j/ds_j = sign(anchor - s_j) / tau, and the same with the
    // opposite sign for the anchor's own score (the sort is locally a fixed permutation).
    for (int64_t j = 0; j < n; ++j) {
      const double d_logit = probs[j] / sum - (j == target[r] ? 1.0 : 0.0);
      const double diff = anchor - scores[j];
      const double sign = diff > 0 ? 1.0 : (diff < 0 ? -1.0 : 0.0);
      result.grad[j] -= d_logit * sign / temperature / n;  // ascent = minus the loss gradient
      result.grad[sorted[r]] += d_logit * sign / temperature / n;
    }
  }
  result.reward = -loss / n;
  return result;
}

}  // namespace kvsim
