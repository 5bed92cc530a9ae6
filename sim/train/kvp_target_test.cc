#include "sim/train/kvp_target.h"

#include <algorithm>
#include <cmath>

#include "gtest/gtest.h"
#include "traces/attention/synthetic_trace.h"

namespace kvsim {
namespace {

// sum over queries j = n..n+f-1 of max over the group of softmax_j(q . k / sqrt(d))[i], all in double.
std::vector<double> BruteForce(const AttentionTraceHeader& header, const AttentionSample& sample,
                               const HeadTensors& head, int64_t n, int64_t f) {
  const int d = header.head_dim;
  std::vector<double> importance(n, 0.0);
  for (int64_t j = n; j < n + f; ++j) {
    std::vector<double> best(n, 0.0);
    for (int g = 0; g < header.group_size(); ++g) {
      const float* q = head.queries.data() + (g * sample.num_queries() + (j - sample.query_start)) * d;
      std::vector<double> logits(j + 1);
      for (int64_t i = 0; i <= j; ++i) {
        double dot = 0;
        for (int c = 0; c < d; ++c) dot += static_cast<double>(q[c]) * head.keys[i * d + c];
        logits[i] = dot / std::sqrt(static_cast<double>(d));
      }
      const double max_logit = *std::max_element(logits.begin(), logits.end());
      double z = 0;
      for (double l : logits) z += std::exp(l - max_logit);
      for (int64_t i = 0; i < n; ++i) best[i] = std::max(best[i], std::exp(logits[i] - max_logit) / z);
    }
    for (int64_t i = 0; i < n; ++i) importance[i] += best[i];
  }
  return importance;
}

TEST(KvpTargetTest, MatchesBruteForceOverTheGroup) {
  SyntheticTraceOptions o;
  o.num_layers = 1;
  o.num_kv_heads = 2;
  o.group_size = 3;
  o.head_dim = 40;
  o.prompt_len = 50;
  o.decode_steps = 6;
  o.query_window = 8;
  o.head_types = {SyntheticHeadType::kMixed, SyntheticHeadType::kLocal};
  const SyntheticTrace trace = GenerateSyntheticTrace(o);
  const AttentionSample& sample = trace.samples[0];
  for (const HeadTensors& head : sample.heads) {
    // After prefill with the next 4 decode queries, and a cut inside the stored prompt queries.
    for (auto [n, f] : {std::pair<int64_t, int64_t>{50, 4}, {45, 9}, {50, 6}}) {
      auto got = FutureImportance(trace.header, sample, head, n, f);
      ASSERT_TRUE(got.ok()) << got.status();
      const std::vector<double> want = BruteForce(trace.header, sample, head, n, f);
      ASSERT_EQ(got->size(), want.size());
      double total = 0;
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_NEAR((*got)[i], want[i], 1e-5 * std::max(1.0, want[i])) << "head " << head.kv_head << " token " << i;
        total += want[i];
      }
      // Each query's max over the group is at least its mean, and a query's row sums to at most 1 over the cache.
      EXPECT_GT(total, 0);
      EXPECT_LE(total, f * trace.header.group_size() + 1e-6);
    }
  }
}

TEST(KvpTargetTest, RefusesQueriesThatAreNotStored) {
  SyntheticTraceOptions o;
  o.num_layers = 1;
  o.num_kv_heads = 1;
  o.head_dim = 40;
  o.prompt_len = 30;
  o.decode_steps = 4;
  o.query_window = 5;
  const SyntheticTrace trace = GenerateSyntheticTrace(o);
  const AttentionSample& s = trace.samples[0];
  EXPECT_FALSE(FutureImportance(trace.header, s, s.heads[0], 30, 5).ok());  // past the last decode step
  EXPECT_FALSE(FutureImportance(trace.header, s, s.heads[0], 20, 4).ok());  // before the stored queries
  EXPECT_FALSE(FutureImportance(trace.header, s, s.heads[0], 30, 0).ok());
  auto status = FutureImportance(trace.header, s, s.heads[0], 30, 5).status();
  EXPECT_NE(status.message().find("positions 30..34"), std::string::npos) << status;
}

}  // namespace
}  // namespace kvsim
