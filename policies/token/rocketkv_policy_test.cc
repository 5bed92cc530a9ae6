#include "policies/token/rocketkv_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <set>

#include "gtest/gtest.h"
#include "policies/token/testing/token_policy_testing.h"

namespace kvsim {
namespace {

TEST(RocketKvPolicyTest, SnapKvPlusPlusSumsThenMaxPools) {
  // Prompt 8, window queries at 6 and 7 put (almost) all their mass on token 2: summed ~2.0 there.
  std::vector<double> row = {0, 0, 30, 0, 0, 0, 0, 0, 0};
  TestHead head = TestHead::FromLogits(8, 6, {{row, row, std::vector<double>(9, 0.0)}});
  std::vector<double> s = SnapKvPlusPlusScores(head.context(), 2, 3);
  // max_pool1d(kernel 3) spreads the peak to 1, 2, 3; 0, 4, 5 stay ~0; the window 6, 7 is kept.
  EXPECT_NEAR(s[1], 2.0, 1e-6);
  EXPECT_NEAR(s[2], 2.0, 1e-6);
  EXPECT_NEAR(s[3], 2.0, 1e-6);
  EXPECT_LT(s[0], 1e-6);
  EXPECT_LT(s[4], 1e-6);
  EXPECT_EQ(s[6], std::numeric_limits<double>::infinity());
}

TEST(RocketKvPolicyTest, SecondStageReadsTheBestChunks) {
  // Prompt 8, no stored prompt queries, one decode step at 8; B = 4 keeps the whole prompt in stage 1
  // (4 B >= 8). At p = 8: |C| = 9, c = 2.25, s = 2, r = round(9 * 2 / 2.25) = 8 channels. Keys are
  // 3 e_i (sqrt(9)), the query's logits are 4 on token 5 and 1 on token 2: chunk {4, 5} scores 4,
  // chunk {2, 3} scores 1; (B - 1) / s = 1 chunk plus the current token.
  std::vector<double> row(9, 0.0);
  row[5] = 4.0;
  row[2] = 1.0;
  TestHead head = TestHead::FromLogits(8, 8, {{row}});
  RocketKvPolicy policy({});
  auto kept = RunPolicy(policy, {&head}, 4);
  EXPECT_EQ(kept[0][0][0], (std::vector<int32_t>{4, 5, 8}));
  // A budget covering the cache reads everything.
  EXPECT_EQ(RunPolicy(policy, {&head}, 9)[0][0][0].size(), 9u);
}

// Stage 2 over many decode steps, against a direct recomputation written here: random keys and queries,
// prompt 40 with B = 10 (stage 1 keeps the whole prompt: 4 B = 40), so |C| = p + 1 and c runs from 4.1 to
// 20: s goes 3, 4, 5, the last chunk is partial at most steps, and (B - 1) / s = 3, 2, 1 chunks are read.
TEST(RocketKvPolicyTest, SecondStageMatchesADirectRecomputationAtEveryStep) {
  constexpr int kDim = 16, kGroup = 2;
  constexpr int64_t kPrompt = 40, kSeq = 200, kBudget = 10;
  TestHead head;
  head.group_size = kGroup;
  head.head_dim = kDim;
  head.prompt_len = kPrompt;
  head.seq_len = kSeq;
  head.query_start = kPrompt;  // no stored prompt queries
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t i = 0; i < kSeq * kDim; ++i) head.keys.push_back(normal(rng));
  head.values.assign(kSeq * kDim, 0.0f);
  for (int64_t i = 0; i < kGroup * (kSeq - kPrompt) * kDim; ++i) head.queries.push_back(normal(rng));
  const HeadContext c = head.context();
  RocketKvPolicy policy({});
  auto kept = RunPolicy(policy, {&head}, kBudget);
  ASSERT_EQ(kept.size(), static_cast<size_t>(kSeq - kPrompt));
  // Indices 0..n-1 by descending value (no ties in random data).
  auto top = [](const std::vector<double>& v, int64_t k) {
    std::vector<int64_t> order(v.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return v[a] > v[b]; });
    order.resize(k);
    return order;
  };
  std::set<int64_t> seen_s;
  for (int64_t p = kPrompt; p < kSeq; ++p) {
    const int64_t size = p + 1, body = size - 1;
    const double comp = static_cast<double>(size) / kBudget;
    const int64_t s = static_cast<int64_t>(std::ceil(std::sqrt(comp)));
    const int r = static_cast<int>(std::clamp<int64_t>(std::llround(kDim * s / comp), 1, kDim));
    seen_s.insert(s);
    std::vector<double> magnitude(kDim, 0.0), qbar(kDim, 0.0);
    for (int j = 0; j < kGroup; ++j) {
      for (int ch = 0; ch < kDim; ++ch) {
        magnitude[ch] += std::abs(c.query(j, p)[ch]);
        qbar[ch] += c.query(j, p)[ch];
      }
    }
    const std::vector<int64_t> channels = top(magnitude, r);
    const int64_t chunks = (body + s - 1) / s;
    std::vector<double> score(chunks, 0.0);
    for (int j = 0; j < kGroup; ++j) {
      std::vector<double> logits(chunks);
      for (int64_t k = 0; k < chunks; ++k) {
        double dot = 0;
        for (int x = 0; x < r; ++x) {
          const int64_t ch = channels[x];
          const double sign = qbar[ch] >= 0 ? 1.0 : -1.0;
          double best = -std::numeric_limits<double>::infinity();
          for (int64_t e = k * s; e < std::min(body, (k + 1) * s); ++e) best = std::max(best, sign * c.key(e)[ch]);
          dot += c.query(j, p)[ch] * sign * best;
        }
        logits[k] = dot / std::sqrt(static_cast<double>(kDim));
      }
      const double max_logit = *std::max_element(logits.begin(), logits.end());
      double total = 0;
      for (double& l : logits) total += (l = std::exp(l - max_logit));
      for (int64_t k = 0; k < chunks; ++k) score[k] += logits[k] / total / kGroup;
    }
    std::vector<int32_t> expected = {static_cast<int32_t>(p)};
    for (int64_t k : top(score, (kBudget - 1) / s)) {
      for (int64_t e = k * s; e < std::min(body, (k + 1) * s); ++e) expected.push_back(static_cast<int32_t>(e));
    }
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(kept[p - kPrompt][0][0], expected) << "position " << p;
  }
  EXPECT_EQ(seen_s, (std::set<int64_t>{3, 4, 5}));
}

}  // namespace
}  // namespace kvsim
