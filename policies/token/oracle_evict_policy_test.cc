#include "policies/token/oracle_evict_policy.h"

#include <cmath>
#include <random>

#include "gtest/gtest.h"
#include "policies/token/testing/token_policy_testing.h"
#include "policies/token/token_policy_util.h"
#include "util/float_gemm.h"

namespace kvsim {
namespace {

TEST(OracleEvictPolicyTest, ScoresByFutureAttentionMass) {
  const double l2 = std::log(2.0), l3 = std::log(3.0);
  // Prompt 0..2, decode at 3 and 4. t = 3: (ln 2, 0, 0, 0) -> (2, 1, 1, 1) / 5;
  // t = 4: (0, ln 3, 0, 0, 0) -> (1, 3, 1, 1, 1) / 7. Future mass: 0: 0.543, 1: 0.629, 2: 0.343.
  TestHead head = TestHead::FromLogits(3, 3, {{{l2, 0, 0, 0}, {0, l3, 0, 0, 0}}});
  OracleEvictPolicy policy({});
  std::vector<double> s = policy.ScorePrompt({head.context()}, 0);
  EXPECT_NEAR(s[0], 2.0 / 5 + 1.0 / 7, 1e-6);
  EXPECT_NEAR(s[1], 1.0 / 5 + 3.0 / 7, 1e-6);
  EXPECT_NEAR(s[2], 1.0 / 5 + 1.0 / 7, 1e-6);
  auto kept = RunPolicy(policy, {&head}, 3);
  EXPECT_EQ(kept[0][0][0], (std::vector<int32_t>{0, 1, 3}));
  EXPECT_EQ(kept[1][0][0], (std::vector<int32_t>{1, 3, 4}));
  kept = RunPolicy(policy, {&head}, 2);
  EXPECT_EQ(kept[0][0][0], (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(kept[1][0][0], (std::vector<int32_t>{3, 4}));
}

// A head of random logits: 2 members, prompt 30 (queries from 20), 70 decode steps (two of the policy's
// 64-step blocks).
TestHead RandomHead() {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal(0.0, 2.0);
  std::vector<std::vector<std::vector<double>>> logits(2, std::vector<std::vector<double>>(80));
  for (auto& member : logits) {
    for (auto& row : member) {
      row.resize(100);
      for (double& x : row) x = normal(rng);
    }
  }
  return TestHead::FromLogits(30, 20, logits);
}

TEST(OracleEvictPolicyTest, SumsTheCallersRowsWhenGiven) {
  // Rows that are not a softmax at all: the scores are their prompt entries summed, so they were read.
  TestHead head = RandomHead();
  const int64_t steps = head.seq_len - head.prompt_len;
  std::vector<float> rows(2 * steps * head.seq_len);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<float>(i % 7) + 0.25f;
  HeadContext c = head.context();
  c.decode_attention = DecodeAttention{rows.data(), head.seq_len, steps};
  OracleEvictPolicy policy({});
  const std::vector<double> s = policy.ScorePrompt({c}, 0);
  ASSERT_EQ(s.size(), 30u);
  for (int64_t i = 0; i < 30; ++i) {
    double want = 0;
    for (int j = 0; j < 2; ++j) {
      for (int64_t t = 0; t < steps; ++t) want += rows[(j * steps + t) * head.seq_len + i];
    }
    EXPECT_DOUBLE_EQ(s[i], want) << i;
  }
}

TEST(OracleEvictPolicyTest, GivenRowsAndRecomputedRowsGiveTheSameBits) {
  // The evaluator's rows (one GEMM over a block of every member's queries, then SoftmaxRow) against the
  // policy's own (64-step blocks): here each row from its own one-query product.
  TestHead head = RandomHead();
  const int64_t steps = head.seq_len - head.prompt_len;
  const int d = head.head_dim;
  std::vector<float> rows(2 * steps * head.seq_len, 0.0f);
  const HeadContext c = head.context();
  for (int j = 0; j < 2; ++j) {
    for (int64_t t = 0; t < steps; ++t) {
      float* row = &rows[(j * steps + t) * head.seq_len];
      const int64_t p = head.prompt_len + t;
      GemmABt(c.query(j, p), d, c.keys, d, 1, head.seq_len, d, row, head.seq_len);
      std::fill(row + p + 1, row + head.seq_len, 0.0f);
      SoftmaxRow(row, p + 1, 1.0f / std::sqrt(static_cast<float>(d)));
    }
  }
  HeadContext given = c;
  given.decode_attention = DecodeAttention{rows.data(), head.seq_len, steps};
  OracleEvictPolicy policy({});
  const std::vector<double> own = policy.ScorePrompt({c}, 0);
  const std::vector<double> read = policy.ScorePrompt({given}, 0);
  ASSERT_EQ(own.size(), read.size());
  for (size_t i = 0; i < own.size(); ++i) EXPECT_EQ(own[i], read[i]) << i;
  // And both are the future attention mass (double-precision reference rows).
  for (int64_t i = 0; i < head.prompt_len; ++i) {
    double want = 0;
    for (int j = 0; j < 2; ++j) {
      for (int64_t t = 0; t < steps; ++t) want += ReferenceRow(head, j, head.prompt_len + t)[i];
    }
    EXPECT_NEAR(own[i], want, 1e-5 * std::max(1.0, want)) << i;
  }
}

}  // namespace
}  // namespace kvsim
