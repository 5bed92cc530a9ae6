#include "policies/token/token_policy_util.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "gtest/gtest.h"
#include "policies/token/testing/token_policy_testing.h"

namespace kvsim {
namespace {

TEST(TopKIndicesTest, OrdersByScoreThenPosition) {
  const std::vector<double> scores = {0.5, 2.0, 0.5, 3.0, 2.0};
  EXPECT_EQ(TopKIndices(scores, 3), (std::vector<int32_t>{3, 1, 4}));
  EXPECT_EQ(TopKIndices(scores, 4), (std::vector<int32_t>{3, 1, 4, 0}));
  EXPECT_EQ(TopKIndices(scores, 9).size(), 5u);
  EXPECT_TRUE(TopKIndices(scores, 0).empty());
  EXPECT_EQ(TopKIndices(scores, 5), (std::vector<int32_t>{3, 1, 4, 0, 2}));
}

// KthLargest on both of its paths (k up to kHeapMaxK: the heap; beyond: the histogram) against a sorted
// copy: the value and how many values exceed it, with ties and signed zeros.
TEST(KthLargestTest, MatchesSortedReference) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int> small(-3, 3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> scratch;
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t n = 1 + trial * 53 % 2000;
    std::vector<float> values(n);
    for (float& v : values) {
      v = trial % 3 == 0 ? static_cast<float>(small(rng)) : (trial % 3 == 1 ? normal(rng) : std::exp(normal(rng) * 10));
      if (trial % 3 == 0 && v == 0 && small(rng) > 0) v = -0.0f;
    }
    std::vector<float> sorted = values;
    std::sort(sorted.begin(), sorted.end(), std::greater<float>());
    for (int64_t k : {int64_t{1}, int64_t{7}, kHeapMaxK, kHeapMaxK + 1, n / 2, n}) {
      if (k < 1 || k > n) continue;
      int64_t above = -1;
      const float kth = KthLargest(values.data(), n, k, &scratch, &above);
      EXPECT_EQ(kth, sorted[k - 1]) << "trial " << trial << " k " << k;
      EXPECT_EQ(above, std::count_if(values.begin(), values.end(), [&](float v) { return v > kth; }))
          << "trial " << trial << " k " << k;
    }
  }
}

// TopKSet against a brute-force reference: sort indices by (value descending, index ascending), take k,
// return them in index order. Small k (up to n / 8) takes the sampled threshold, including samples that
// overestimate it (then the exact fallback).
TEST(TopKSetTest, MatchesSortedReference) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> small(-3, 3);  // many ties
  std::normal_distribution<float> normal(0.0f, 1.0f);
  TopKScratch scratch;
  std::vector<int32_t> out;
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t n = 1 + trial * 37 % 3000;
    std::vector<float> values(n);
    for (float& v : values) {
      switch (trial % 4) {
        case 0:
          v = static_cast<float>(small(rng));
          break;
        case 1:
          v = normal(rng);
          break;
        case 2:
          v = std::exp(normal(rng) * 10);
          break;  // probabilities of many magnitudes
        default:
          v = small(rng) == 0 ? -0.0f : (small(rng) > 0 ? 0.0f : 1e-30f);  // signed zeros
      }
    }
    if (trial % 5 == 4) {  // the sampled positions (multiples of 32) hold the largest values
      for (int64_t i = 0; i < n; i += 32) values[i] = 1e6f + i;
    }
    for (int64_t k : {int64_t{0}, int64_t{1}, n / 50, n / 20, n / 9, n / 3, n - 1, n, n + 5}) {
      std::vector<int32_t> index(n);
      for (int64_t i = 0; i < n; ++i) index[i] = static_cast<int32_t>(i);
      std::sort(index.begin(), index.end(),
                [&](int32_t a, int32_t b) { return values[a] > values[b] || (values[a] == values[b] && a < b); });
      std::vector<int32_t> expected(index.begin(), index.begin() + std::max<int64_t>(0, std::min(k, n)));
      std::sort(expected.begin(), expected.end());
      TopKSet(values.data(), n, k, &scratch, &out);
      EXPECT_EQ(out, expected) << "trial " << trial << " n " << n << " k " << k;
    }
  }
}

TEST(ColumnSumsTest, SumsTheChosenRows) {
  RowMatrixXf m(4, 3);
  m << 1, 2, 3,       //
      10, 20, 30,     //
      100, 200, 300,  //
      0.5, 0.25, -1;
  EXPECT_EQ(ColumnSums(m.row(1).data(), 2, 3), Eigen::Vector3f(110, 220, 330));
  EXPECT_EQ(ColumnSums(m.data(), 4, 3), Eigen::Vector3f(111.5f, 222.25f, 332));
  EXPECT_EQ(ColumnSums(m.row(2).data(), 0, 3), Eigen::Vector3f::Zero());
}

TEST(PromptWindowAttentionTest, MatchesDirectSoftmax) {
  // Prompt of 4, queries stored from position 2; member 0 at position 2 has logits (ln 2, 0, ln 5):
  // softmax = (2, 1, 5) / 8 and 0 for position 3 (causal).
  TestHead head = TestHead::FromLogits(4, 2, {{{std::log(2.0), 0.0, std::log(5.0), 9.0}, {0.0, 0.0, 0.0, 0.0}}});
  RowMatrixXf a = PromptWindowAttention(head.context(), 8);
  ASSERT_EQ(a.rows(), 2);
  ASSERT_EQ(a.cols(), 4);
  EXPECT_NEAR(a(0, 0), 2.0 / 8, 1e-6);
  EXPECT_NEAR(a(0, 1), 1.0 / 8, 1e-6);
  EXPECT_NEAR(a(0, 2), 5.0 / 8, 1e-6);
  EXPECT_EQ(a(0, 3), 0.0f);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(a(1, i), 0.25, 1e-6);
  EXPECT_EQ(PromptWindowAttention(head.context(), 1).rows(), 1);
}

// The row's exponentials relative to its largest logit, and their sum, against double references.
TEST(ExpRowTest, ExponentiatesFromTheLargestLogitAndSums) {
  const std::vector<float> logits = {2.0f, -1.0f, 6.0f, 0.5f, 6.0f, -30.0f, 3.25f};
  for (int64_t length : {1, 3, 7}) {
    std::vector<float> row = logits;
    const double sum = ExpRow(row.data(), length, 0.5f);
    double max_logit = logits[0], expected_sum = 0;
    for (int64_t i = 0; i < length; ++i) max_logit = std::max<double>(max_logit, logits[i]);
    for (int64_t i = 0; i < length; ++i) {
      const double expected = std::exp(0.5 * (logits[i] - max_logit));
      EXPECT_NEAR(row[i], expected, 1e-6 * expected) << length << " " << i;
      expected_sum += expected;
    }
    EXPECT_NEAR(sum, expected_sum, 1e-6 * expected_sum) << length;
    for (size_t i = length; i < row.size(); ++i) EXPECT_EQ(row[i], logits[i]) << "beyond the row";
  }
}

// The rows, from the cache (narrower and equal windows) and without one, are the causal softmax computed
// in double precision (0 beyond each query's position), and the copying accessor holds the same rows.
TEST(PromptWindowAttentionRowsTest, MatchTheDoubleSoftmaxWithAndWithoutTheCache) {
  // Prompt of 6 with queries stored from position 2 (4 per member), 2 members, distinct logits.
  std::vector<std::vector<std::vector<double>>> logits(2);
  for (int j = 0; j < 2; ++j) {
    for (int t = 2; t < 6; ++t) {
      std::vector<double> row;
      for (int i = 0; i < 6; ++i) row.push_back(0.1 * (i + 1) * (j + 1) + 0.05 * t);
      logits[j].push_back(row);
    }
  }
  TestHead head = TestHead::FromLogits(6, 2, logits);
  for (bool cached : {false, true}) {
    PromptAttentionCache cache;
    HeadContext context = head.context();
    context.prompt_cache = cached ? &cache : nullptr;
    for (int64_t window : {1, 3, 4, 9}) {
      RowMatrixXf scratch;
      const PromptWindowRows rows = PromptWindowAttentionRows(context, window, &scratch);
      const int64_t w = std::min<int64_t>(window, 4);
      ASSERT_EQ(rows.window, w);
      ASSERT_EQ(rows.cols, 6);
      for (int j = 0; j < 2; ++j) {
        for (int64_t r = 0; r < w; ++r) {
          const int64_t position = 6 - w + r;
          const std::vector<double> expected = ReferenceRow(head, j, position);
          for (int i = 0; i < 6; ++i) {
            if (i > position) {
              EXPECT_EQ(rows.row(j, r)[i], 0.0f) << "causal: beyond the query's position";
            } else {
              EXPECT_NEAR(rows.row(j, r)[i], expected[i], 1e-6) << cached << " w " << w << " j " << j << " r " << r;
            }
          }
        }
      }
      const RowMatrixXf copied = PromptWindowAttention(context, window);
      ASSERT_EQ(copied.rows(), 2 * w);
      for (int j = 0; j < 2; ++j) {
        for (int64_t r = 0; r < w; ++r) {
          for (int i = 0; i < 6; ++i) EXPECT_EQ(copied(j * w + r, i), rows.row(j, r)[i]);
        }
      }
    }
  }
}

}  // namespace
}  // namespace kvsim
