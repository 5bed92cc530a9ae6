// File: sim/train/kvp_objective.h
//
// The objectives KVP (arXiv 2602.10238) trains its rankers with, as pure functions of one example: the
// scores s_i the agent gives the n cached tokens and their future importance I_i (kvp_target.h).
//
// All-budget reward. A ranking sigma (best first) keeps its first b tokens at budget b; the importance it
// loses there is sum_{k > b} I_{sigma_k}, so R_b = -that and R = sum_{b=1}^{n-1} R_b = -sum_r r I_{sigma_r}
// (0-based rank r: a token ranked r is lost at the r budgets 1..r). The cost C = -R >= 0 is smallest for
// the oracle ranking (I descending; rearrangement inequality) and largest for its reverse. Normalised by
// the oracle's R* = -C*: R~ = R / |R*| + 2 = 2 - C / C*, so the oracle scores exactly 1 and every other
// ranking less (the +2 is a constant shift, which changes no gradient). C* = 0 (n < 2, or one token holds
// all the importance): R~ = 1 for every ranking.
//
// Policy: Plackett-Luce over the tokens with utilities s, sampled by Gumbel-sort (sigma = argsort of
// s + g, g i.i.d. standard Gumbel, descending). log p(sigma) = sum_r [s_{sigma_r} - log sum_{m >= r}
// exp s_{sigma_m}].
//
// REINFORCE with a leave-one-out baseline: K permutations; the estimate of grad_s E[R~] is
// (1/K) sum_k (R~_k - b_k) grad_s log p(sigma_k), b_k = the mean reward of the other K - 1 (unbiased).
//
// Soft-sort baseline (supervised; the paper reports it fails): SoftSort (Prillo and Eisenschlos 2020)
// relaxes sort(s) to P_rj = softmax_j(-|s_[r] - s_j| / tau), s_[r] the r-th largest score; the loss is the
// mean cross-entropy of each row r against the oracle's token at rank r.
//
// Randomness comes from the caller's std::mt19937_64 through hand-written conversions (no standard
// library distribution), so results are the same on every platform. Thread-compatible.
#ifndef KVSIM_SIM_TRAIN_KVP_OBJECTIVE_H_
#define KVSIM_SIM_TRAIN_KVP_OBJECTIVE_H_

#include <cstdint>
#include <random>
#include <vector>

namespace kvsim {

// C(sigma) = sum_r r * importance[ranking[r]]. REQUIRES: ranking is a permutation of 0..n-1.
double AllBudgetCost(const std::vector<int32_t>& ranking, const std::vector<double>& importance);

// The oracle ranking: importance descending, ties to the lower index.
std::vector<int32_t> OracleRanking(const std::vector<double>& importance);

// The ranking by scores descending, ties to the lower index.
std::vector<int32_t> RankByScores(const float* scores, int64_t n);

// R~ of `ranking` given the oracle's cost (see the file comment).
double NormalisedReward(double cost, double oracle_cost);

// A uniform double in (0, 1) and a standard Gumbel variate -log(-log u) from `rng`.
double UniformOpen(std::mt19937_64& rng);
double Gumbel(std::mt19937_64& rng);

// A Plackett-Luce sample: argsort of scores + Gumbel noise, descending.
std::vector<int32_t> GumbelSortPermutation(const float* scores, int64_t n, std::mt19937_64& rng);

// log p(ranking | scores) under Plackett-Luce, and its gradient with respect to the scores into *grad
// (n values; not written when null). Stable for any score range (log-sum-exp suffixes).
double PlackettLuceLogProb(const float* scores, const std::vector<int32_t>& ranking, std::vector<double>* grad);

struct ObjectiveResult {
  double reward = 0;         // REINFORCE: mean R~ of the sampled permutations; soft-sort: minus the loss
  std::vector<double> grad;  // ascent direction with respect to the scores (n values)
};

// The leave-one-out REINFORCE estimate of grad_s E[R~] from `k` Gumbel-sort samples. REQUIRES: k >= 2.
ObjectiveResult ReinforceGradient(const float* scores, const std::vector<double>& importance, int k,
                                  std::mt19937_64& rng);

// The soft-sort cross-entropy loss (reward = -loss) and minus its gradient. REQUIRES: temperature > 0.
ObjectiveResult SoftSortGradient(const float* scores, const std::vector<double>& importance, double temperature);

}  // namespace kvsim

#endif  // KVSIM_SIM_TRAIN_KVP_OBJECTIVE_H_
