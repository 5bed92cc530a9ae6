#include "sim/train/kvp_objective.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

std::vector<std::vector<int32_t>> AllPermutations(int n) {
  std::vector<int32_t> p(n);
  std::iota(p.begin(), p.end(), 0);
  std::vector<std::vector<int32_t>> all;
  do all.push_back(p);
  while (std::next_permutation(p.begin(), p.end()));
  return all;
}

double Reward(const std::vector<int32_t>& ranking, const std::vector<double>& importance) {
  return NormalisedReward(AllBudgetCost(ranking, importance), AllBudgetCost(OracleRanking(importance), importance));
}

// E[R~] under Plackett-Luce with scores s, by enumerating every permutation (p = exp(log p) in double).
double ExactExpectedReward(const std::vector<double>& s, const std::vector<double>& importance) {
  std::vector<float> f(s.begin(), s.end());
  double expected = 0;
  for (const auto& perm : AllPermutations(s.size())) {
    expected += std::exp(PlackettLuceLogProb(f.data(), perm, nullptr)) * Reward(perm, importance);
  }
  return expected;
}

TEST(KvpObjectiveTest, CostIsTheImportanceLostSummedOverBudgets) {
  // I = (0.5, 0.3, 0.2), ranking (2, 0, 1): budget 1 keeps token 2 and loses 0.5 + 0.3; budget 2 keeps 2 and
  // 0 and loses 0.3: C = 1.1. The oracle (0, 1, 2) loses 0.5 and 0.2: C* = 0.7.
  const std::vector<double> importance = {0.5, 0.3, 0.2};
  EXPECT_NEAR(AllBudgetCost({2, 0, 1}, importance), 1.1, 1e-12);
  EXPECT_EQ(OracleRanking(importance), (std::vector<int32_t>{0, 1, 2}));
  EXPECT_NEAR(AllBudgetCost({0, 1, 2}, importance), 0.7, 1e-12);
  EXPECT_NEAR(Reward({2, 0, 1}, importance), 2.0 - 1.1 / 0.7, 1e-12);
}

TEST(KvpObjectiveTest, OracleScoresOneAndItsReverseTheMinimum) {
  const std::vector<double> importance = {0.05, 0.4, 0.1, 0.25, 0.2};
  const std::vector<int32_t> oracle = OracleRanking(importance);
  EXPECT_EQ(oracle, (std::vector<int32_t>{1, 3, 4, 2, 0}));
  EXPECT_DOUBLE_EQ(Reward(oracle, importance), 1.0);
  const std::vector<int32_t> reversed(oracle.rbegin(), oracle.rend());
  const double worst = Reward(reversed, importance);
  for (const auto& perm : AllPermutations(5)) {
    const double r = Reward(perm, importance);
    EXPECT_LE(r, 1.0 + 1e-12);
    if (perm != reversed) {
      EXPECT_GT(r, worst);
    }
    if (perm != oracle) {
      EXPECT_LT(r, 1.0);
    }
  }
}

TEST(KvpObjectiveTest, PlackettLuceProbabilitiesSumToOneAndTheirGradientMatchesFiniteDifferences) {
  const std::vector<float> s = {0.3f, -1.2f, 2.0f, 0.7f};
  double total = 0;
  for (const auto& perm : AllPermutations(4)) {
    std::vector<double> grad;
    total += std::exp(PlackettLuceLogProb(s.data(), perm, &grad));
    for (int i = 0; i < 4; ++i) {
      std::vector<float> up = s, down = s;
      const float h = 1e-2f;
      up[i] += h;
      down[i] -= h;
      const double fd =
          (PlackettLuceLogProb(up.data(), perm, nullptr) - PlackettLuceLogProb(down.data(), perm, nullptr)) /
          (static_cast<double>(up[i]) - down[i]);
      EXPECT_NEAR(grad[i], fd, 1e-4) << "token " << i;
    }
  }
  EXPECT_NEAR(total, 1.0, 1e-6);
  // Stable far from zero: scores 1e3 apart still give finite gradients.
  const std::vector<float> wide = {1000.0f, -1000.0f, 0.0f};
  std::vector<double> grad;
  EXPECT_TRUE(std::isfinite(PlackettLuceLogProb(wide.data(), {1, 0, 2}, &grad)));
  for (double g : grad) EXPECT_TRUE(std::isfinite(g));
}

TEST(KvpObjectiveTest, GumbelSortSamplesPlackettLuce) {
  const std::vector<float> s = {0.5f, -0.5f, 1.0f};
  std::mt19937_64 rng(7);
  const auto perms = AllPermutations(3);
  std::vector<int> counts(perms.size(), 0);
  const int kDraws = 60000;
  for (int d = 0; d < kDraws; ++d) {
    const auto p = GumbelSortPermutation(s.data(), 3, rng);
    counts[std::find(perms.begin(), perms.end(), p) - perms.begin()]++;
  }
  for (size_t k = 0; k < perms.size(); ++k) {
    const double p = std::exp(PlackettLuceLogProb(s.data(), perms[k], nullptr));
    const double se = std::sqrt(p * (1 - p) / kDraws);
    EXPECT_NEAR(static_cast<double>(counts[k]) / kDraws, p, 5 * se) << "permutation " << k;
  }
}

TEST(KvpObjectiveTest, ReinforceEstimateMatchesTheFiniteDifferenceOfTheExactExpectedReward) {
  const std::vector<double> s = {0.2, -0.4, 0.9, 0.0};
  const std::vector<double> importance = {0.1, 0.6, 0.05, 0.25};
  std::vector<double> fd(4);
  for (int i = 0; i < 4; ++i) {
    std::vector<double> up = s, down = s;
    up[i] += 1e-3;
    down[i] -= 1e-3;
    // Scores go through float: the step actually taken is the float difference.
    const double step = static_cast<double>(static_cast<float>(up[i])) - static_cast<float>(down[i]);
    fd[i] = (ExactExpectedReward(up, importance) - ExactExpectedReward(down, importance)) / step;
  }
  // The exact score-function gradient sum_sigma p R~ grad log p agrees with the finite difference.
  const std::vector<float> f(s.begin(), s.end());
  std::vector<double> exact(4, 0.0), grad;
  for (const auto& perm : AllPermutations(4)) {
    const double p = std::exp(PlackettLuceLogProb(f.data(), perm, &grad));
    for (int i = 0; i < 4; ++i) exact[i] += p * Reward(perm, importance) * grad[i];
  }
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(exact[i], fd[i], 1e-4) << "token " << i;
  // The leave-one-out estimate (K = 4) is unbiased: its mean over many draws is within 4 standard errors.
  std::mt19937_64 rng(11);
  const int kDraws = 40000;
  std::vector<double> sum(4, 0.0), sum_sq(4, 0.0);
  for (int d = 0; d < kDraws; ++d) {
    const ObjectiveResult r = ReinforceGradient(f.data(), importance, 4, rng);
    for (int i = 0; i < 4; ++i) {
      sum[i] += r.grad[i];
      sum_sq[i] += r.grad[i] * r.grad[i];
    }
  }
  for (int i = 0; i < 4; ++i) {
    const double mean = sum[i] / kDraws;
    const double se = std::sqrt(std::max(0.0, sum_sq[i] / kDraws - mean * mean) / kDraws);
    EXPECT_NEAR(mean, fd[i], 4 * se + 1e-6) << "token " << i << " (se " << se << ")";
    EXPECT_LT(se, 0.1 * std::fabs(fd[i]) + 1e-3) << "too few draws to tell";
  }
}

TEST(KvpObjectiveTest, SoftSortGradientMatchesFiniteDifferencesOfItsLoss) {
  const std::vector<float> s = {0.3f, -0.2f, 0.9f, 0.1f, -0.7f};
  const std::vector<double> importance = {0.2, 0.1, 0.05, 0.4, 0.25};
  const ObjectiveResult r = SoftSortGradient(s.data(), importance, 0.5);
  for (int i = 0; i < 5; ++i) {
    std::vector<float> up = s, down = s;
    up[i] += 1e-3f;
    down[i] -= 1e-3f;
    const double fd =
        (SoftSortGradient(up.data(), importance, 0.5).reward - SoftSortGradient(down.data(), importance, 0.5).reward) /
        (static_cast<double>(up[i]) - down[i]);
    EXPECT_NEAR(r.grad[i], fd, 1e-3) << "token " << i;
  }
  // A loss, so the reward is negative; scores in the oracle's order give a higher reward than reversed.
  EXPECT_LT(r.reward, 0);
  const std::vector<float> good = {0.4f, 0.2f, 0.0f, 0.8f, 0.6f}, bad = {-0.4f, -0.2f, 0.0f, -0.8f, -0.6f};
  EXPECT_GT(SoftSortGradient(good.data(), importance, 0.1).reward,
            SoftSortGradient(bad.data(), importance, 0.1).reward);
}

}  // namespace
}  // namespace kvsim
