#include "traces/attention/synthetic_trace.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

// Attention row of query row `r` of group member 0 over keys 0..position, computed directly.
std::vector<double> Row(const AttentionSample& s, const HeadTensors& h, int d, int64_t position) {
  const float* q = &h.queries[(position - s.query_start) * d];
  std::vector<double> a(position + 1);
  double max_logit = -1e300;
  for (int64_t i = 0; i <= position; ++i) {
    double dot = 0;
    for (int c = 0; c < d; ++c) dot += static_cast<double>(q[c]) * h.keys[i * d + c];
    a[i] = dot / std::sqrt(static_cast<double>(d));
    max_logit = std::max(max_logit, a[i]);
  }
  double total = 0;
  for (double& x : a) total += (x = std::exp(x - max_logit));
  for (double& x : a) x /= total;
  return a;
}

SyntheticTraceOptions Options() {
  SyntheticTraceOptions o;
  o.num_layers = 1;
  o.num_kv_heads = 4;  // sink, local, heavy, needle
  o.group_size = 1;
  o.head_dim = 64;
  o.prompt_len = 512;
  o.decode_steps = 4;
  return o;
}

TEST(SyntheticTraceTest, Deterministic) {
  SyntheticTrace a = GenerateSyntheticTrace(Options());
  SyntheticTrace b = GenerateSyntheticTrace(Options());
  EXPECT_EQ(a.samples[0].heads[2].keys, b.samples[0].heads[2].keys);
  EXPECT_EQ(a.samples[0].heads[3].queries, b.samples[0].heads[3].queries);
  SyntheticTraceOptions other = Options();
  other.seed = 2;
  EXPECT_NE(GenerateSyntheticTrace(other).samples[0].heads[0].values, a.samples[0].heads[0].values);
}

TEST(SyntheticTraceTest, HeadTypesShowTheirPatterns) {
  const SyntheticTraceOptions o = Options();
  SyntheticTrace t = GenerateSyntheticTrace(o);
  const AttentionSample& s = t.samples[0];
  const int64_t p = s.seq_len() - 1;  // last decode query
  // Sink head: the 4 sinks take most of the mass (logit +8 over noise).
  std::vector<double> a = Row(s, s.heads[0], o.head_dim, p);
  EXPECT_GT(a[0] + a[1] + a[2] + a[3], 0.5);
  // Local head: the last 16 tokens take more mass than the first 400.
  a = Row(s, s.heads[1], o.head_dim, p);
  double recent = 0, early = 0;
  for (int64_t i = p - 15; i <= p; ++i) recent += a[i];
  for (int64_t i = 0; i < 400; ++i) early += a[i];
  EXPECT_GT(recent, early);
  // Needle head: the decode query's argmax is the planted needle.
  a = Row(s, s.heads[3], o.head_dim, p);
  EXPECT_EQ(std::max_element(a.begin(), a.end()) - a.begin(), SyntheticNeedlePosition(o, 0));
  EXPECT_GT(a[SyntheticNeedlePosition(o, 0)], 0.3);
  // ...but a prompt query does not look for it.
  a = Row(s, s.heads[3], o.head_dim, s.prompt_len - 1);
  EXPECT_LT(a[SyntheticNeedlePosition(o, 0)], 0.05);
}

TEST(SyntheticTraceTest, ColumnSumsAddUpToTheNumberOfQueries) {
  SyntheticTraceOptions o = Options();
  o.prompt_len = 64;
  o.column_sums = true;
  SyntheticTrace t = GenerateSyntheticTrace(o);
  // Each of the 64 prompt queries distributes mass 1 over the prompt: the column sums total 64.
  for (const HeadTensors& h : t.samples[0].heads) {
    double total = 0;
    for (float x : h.column_sums) total += x;
    EXPECT_NEAR(total, 64.0, 1e-3);
    // The first token is seen by every query; the last only by itself.
    EXPECT_GE(h.column_sums[63], 0.0f);
  }
}

}  // namespace
}  // namespace kvsim
