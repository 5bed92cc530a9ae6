#include "policies/token/kvquant_policy.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "gtest/gtest.h"
#include "policies/token/h2o_policy.h"
#include "policies/token/rope.h"
#include "policies/token/testing/token_policy_testing.h"

namespace kvsim {
namespace {

// A head of seq_len rows x d channels whose keys are `pre_keys` (pre-RoPE) rotated by ApplyRope at their
// positions, as a model's cache holds them. One query head, no stored queries needed by the quantiser.
TestHead RotatedHead(const std::vector<float>& pre_keys, const std::vector<float>& values, int d, int64_t prompt_len,
                     const RopeConfig& rope) {
  TestHead h;
  h.head_dim = d;
  h.seq_len = static_cast<int64_t>(pre_keys.size()) / d;
  h.prompt_len = prompt_len;
  h.query_start = prompt_len;
  h.keys = pre_keys;
  for (int64_t t = 0; t < h.seq_len; ++t) ApplyRope(rope, t, /*inverse=*/false, &h.keys[t * d], d);
  h.values = values;
  h.queries.assign((h.seq_len - h.query_start) * d, 0.0f);
  return h;
}

HeadContext ContextWithRope(const TestHead& head, const RopeConfig& rope) {
  HeadContext c = head.context();
  c.rope = rope;
  return c;
}

// The policy's dequantised keys (post-RoPE, all rows) and values.
struct Dequantised {
  std::vector<float> keys, values;
};
Dequantised Quantise(const std::string& spec, const std::vector<HeadContext>& heads, int head = 0) {
  auto policy = CreateTokenPolicy(spec);
  EXPECT_TRUE(policy.ok()) << policy.status();
  (*policy)->BeginLayer(heads, 1 << 20);
  const HeadContext& c = heads[head];
  const KvOverride kv = (*policy)->Kv(head, c.seq_len - 1);
  const int64_t n = c.seq_len * c.head_dim;
  return {std::vector<float>(kv.keys, kv.keys + n), std::vector<float>(kv.values, kv.values + n)};
}

// ---- Brute-force reference of the header's rule, step by step, in double where it can be ----

struct RefRange {
  double mid = 0, half = 0, tau = INFINITY;
};

// Step 2 by a full sort of the magnitudes.
RefRange RefDenseRange(const std::vector<double>& x, int64_t outliers) {
  RefRange r;
  std::vector<double> m;
  for (double v : x) m.push_back(std::fabs(v));
  std::sort(m.rbegin(), m.rend());
  if (outliers > 0) r.tau = m[outliers];
  double lo = INFINITY, hi = -INFINITY;
  for (double v : x) {
    if (std::fabs(v) > r.tau) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  r.mid = (lo + hi) / 2;
  r.half = (hi - lo) / 2;
  return r;
}

int RefNearest(const std::vector<double>& levels, double x) {
  int best = 0;
  for (int i = 1; i < static_cast<int>(levels.size()); ++i) {
    if (std::fabs(x - levels[i]) < std::fabs(x - levels[best])) best = i;
  }
  return best;
}

// Step 4 by scanning every level for every sample.
std::vector<double> RefLloyd(const std::vector<double>& samples, int levels) {
  std::vector<double> l(levels);
  for (int i = 0; i < levels; ++i) l[i] = -1.0 + (2.0 * i + 1) / levels;
  for (int round = 0; round < NuqCodebook::kLloydIterations; ++round) {
    std::vector<double> sum(levels, 0.0);
    std::vector<int> count(levels, 0);
    for (double x : samples) {
      const int i = RefNearest(l, x);
      sum[i] += x;
      ++count[i];
    }
    bool moved = false;
    for (int i = 0; i < levels; ++i) {
      if (count[i] == 0) continue;
      const double mean = static_cast<float>(sum[i] / count[i]);  // levels are floats in the rule
      moved = moved || mean != l[i];
      l[i] = mean;
    }
    if (!moved) break;
  }
  return l;
}

double RefDequantize(double x, const RefRange& r, const std::vector<double>& levels) {
  if (std::fabs(x) > r.tau) return x;
  if (!(r.half > 0)) return r.mid;
  return r.mid + r.half * levels[RefNearest(levels, (x - r.mid) / r.half)];
}

// The quantised post-RoPE keys of heads[which] (seq_len x d) in a layer of `heads`: un-rotate (when
// `pre_rope`), quantise per channel with prompt-calibrated ranges and one codebook of every head's prompt
// entries, rotate back.
std::vector<double> RefKeys(const std::vector<const TestHead*>& heads, int which, const RopeConfig& rope, int bits,
                            double fraction, bool pre_rope) {
  std::vector<std::vector<float>> pre;
  std::vector<std::vector<RefRange>> ranges;
  std::vector<double> samples;
  for (const TestHead* head : heads) {
    const int d = head->head_dim;
    const int64_t p = head->prompt_len;
    pre.push_back(head->keys);
    if (pre_rope) {
      for (int64_t t = 0; t < head->seq_len; ++t) ApplyRope(rope, t, /*inverse=*/true, &pre.back()[t * d], d);
    }
    ranges.emplace_back(d);
    for (int c = 0; c < d; ++c) {
      std::vector<double> column;
      for (int64_t t = 0; t < p; ++t) column.push_back(pre.back()[t * d + c]);
      const RefRange r = RefDenseRange(column, static_cast<int64_t>(std::floor(fraction * p)));
      ranges.back()[c] = r;
      for (double v : column) {
        if (std::fabs(v) <= r.tau && r.half > 0) samples.push_back((v - r.mid) / r.half);
      }
    }
  }
  const std::vector<double> levels = RefLloyd(samples, 1 << bits);
  const TestHead& head = *heads[which];
  const int d = head.head_dim;
  std::vector<double> out(head.seq_len * d);
  for (int64_t t = 0; t < head.seq_len; ++t) {
    std::vector<float> row(d);
    for (int c = 0; c < d; ++c) {
      row[c] = static_cast<float>(RefDequantize(pre[which][t * d + c], ranges[which][c], levels));
    }
    if (pre_rope) ApplyRope(rope, t, /*inverse=*/false, row.data(), d);
    for (int c = 0; c < d; ++c) out[t * d + c] = row[c];
  }
  return out;
}
std::vector<double> RefKeys(const TestHead& head, const RopeConfig& rope, int bits, double fraction, bool pre_rope) {
  return RefKeys({&head}, 0, rope, bits, fraction, pre_rope);
}

double MaxAbsDiff(const std::vector<float>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

template <typename A, typename B>
double MeanSquaredError(const A& a, const B& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return s / a.size();
}

// ---- Tests ----

TEST(NuqCodebookTest, HandComputedLloyd) {
  // 2 levels start at -0.5, 0.5 (bound 0): cells {-1, -0.8} and {0.1, 0.2, 0.9, 1}: means -0.9 and 0.55;
  // the new bound -0.175 keeps the cells, so it stops there.
  NuqCodebook two = NuqCodebook::Fit({0.9f, -1, 0.1f, 1, -0.8f, 0.2f}, 2);
  ASSERT_EQ(two.levels().size(), 2u);
  EXPECT_NEAR(two.levels()[0], -0.9f, 1e-6);
  EXPECT_NEAR(two.levels()[1], 0.55f, 1e-6);
  // 4 levels start at -0.75, -0.25, 0.25, 0.75; samples only at the ends: the middle levels get none and stay.
  NuqCodebook ends = NuqCodebook::Fit({-1, 1, -1, 1}, 4);
  EXPECT_EQ(ends.levels(), (std::vector<float>{-1, -0.25f, 0.25f, 1}));
  // Nearest level, ties to the lower: bounds -0.625, 0, 0.625.
  EXPECT_EQ(ends.Snap(0.0f), -0.25f);
  EXPECT_EQ(ends.Snap(0.01f), 0.25f);
  EXPECT_EQ(ends.Snap(-0.7f), -1.0f);
  EXPECT_EQ(ends.Snap(5.0f), 1.0f);  // beyond the range: the end level
  // No samples: the uniform start.
  EXPECT_EQ(NuqCodebook::Fit({}, 2).levels(), (std::vector<float>{-0.5f, 0.5f}));
}

TEST(DenseRangeTest, OutliersAreTheLargestMagnitudes) {
  // Strided: entries 3, -1, 0.5, 10, -2 at stride 2. One outlier: 10 (tau = 3, the 2nd largest magnitude);
  // the rest span [-2, 3]: m = 0.5, h = 2.5.
  const float x[] = {3, 0, -1, 0, 0.5f, 0, 10, 0, -2, 0};
  NuqRange one = DenseRange(x, 5, 2, 1);
  EXPECT_EQ(one.outlier_above, 3.0f);
  EXPECT_EQ(one.mid, 0.5f);
  EXPECT_EQ(one.half, 2.5f);
  // None: [-2, 10].
  NuqRange none = DenseRange(x, 5, 2, 0);
  EXPECT_EQ(none.outlier_above, INFINITY);
  EXPECT_EQ(none.mid, 4.0f);
  EXPECT_EQ(none.half, 6.0f);
  // Two: 10 and 3; tau = 2 keeps -2: [-2, 0.5].
  NuqRange two = DenseRange(x, 5, 2, 2);
  EXPECT_EQ(two.outlier_above, 2.0f);
  EXPECT_EQ(two.mid, -0.75f);
  // Dequantised: an outlier exactly, a constant range to its middle.
  const NuqCodebook book = NuqCodebook::Fit({-1, 1}, 4);
  EXPECT_EQ(NuqDequantize(10, one, book), 10.0f);
  EXPECT_EQ(NuqDequantize(3, one, book), 3.0f);  // = tau: not an outlier; the top level 1 -> m + h = 3
  EXPECT_EQ(NuqDequantize(0.7f, NuqRange{0.7f, 0.0f}, book), 0.7f);
}

TEST(KvQuantPolicyTest, HandComputedTwoBitKeysBeforeRope) {
  // d = 2 (one rotary pair turning 1 rad per position), 4 prompt rows. Pre-RoPE channel 0 = (-1, -0.6, 0.4, 1):
  // m = 0, h = 1; channel 1 = (0, 1.2, 4, 4): m = 2, h = 2, normalised (-1, -0.4, 1, 1). Lloyd from
  // (-0.75, -0.25, 0.25, 0.75) over the 8 samples:
  //   round 1 (bounds -0.5, 0, 0.5): {-1, -0.6, -1} {-0.4} {0.4} {1, 1, 1} -> -0.8667, -0.4, 0.4, 1
  //   round 2 (bounds -0.6333, 0, 0.7): {-1, -1} {-0.6, -0.4} {0.4} {1, 1, 1} -> -1, -0.5, 0.4, 1
  //   round 3 (bounds -0.75, -0.05, 0.7): the same cells; stop.
  // Dequantised pre-RoPE keys: channel 0 (-1, -0.5, 0.4, 1); channel 1: 2 + 2 * (-1, -0.5, 1, 1) = (0, 1, 4, 4).
  // (A uniform 2-bit grid over [-1, 1] would give -0.6 -> -1/3.)
  RopeConfig rope;
  const std::vector<float> pre = {-1, 0, -0.6f, 1.2f, 0.4f, 4, 1, 4};
  const std::vector<float> values = {1, 2, -3, 5, 0, 0, 7, 7};
  const TestHead head = RotatedHead(pre, values, 2, 4, rope);
  const Dequantised q = Quantise("kvquant2", {ContextWithRope(head, rope)});
  std::vector<float> want = {-1, 0, -0.5f, 1, 0.4f, 4, 1, 4};
  for (int64_t t = 0; t < 4; ++t) ApplyRope(rope, t, /*inverse=*/false, &want[t * 2], 2);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(q.keys[i], want[i], 1e-5) << i;
  // Values per token over 2 channels: each token's own range, whose ends the codebook holds exactly
  // (levels -1 and 1 from the samples at +-1); a constant token is its value.
  EXPECT_EQ(q.values, values);
}

TEST(KvQuantPolicyTest, OutliersAreKeptExact) {
  // 100 prompt rows + 2 decode rows, d = 2; 1% -> one outlier per key channel. Channel 0 holds 50 at row 7.
  RopeConfig rope;
  const int d = 2;
  const int64_t prompt = 100, rows = 102;
  std::vector<float> pre(rows * d), values(rows * d);
  for (int64_t t = 0; t < rows; ++t) {
    pre[t * d] = static_cast<float>(std::sin(0.7 * t));
    pre[t * d + 1] = static_cast<float>(std::cos(1.3 * t));
    values[t * d] = static_cast<float>(t % 5);
    values[t * d + 1] = -1;
  }
  pre[7 * d] = 50;
  pre[100 * d] = 60;     // a decode key above the prompt's threshold: an outlier too
  pre[101 * d] = 0.5f;   // one inside the range: quantised
  const TestHead head = RotatedHead(pre, values, d, prompt, rope);
  const std::vector<HeadContext> heads = {ContextWithRope(head, rope)};
  auto unrotated = [&](const std::string& spec) {
    std::vector<float> k = Quantise(spec, heads).keys;
    for (int64_t t = 0; t < rows; ++t) ApplyRope(rope, t, /*inverse=*/true, &k[t * d], d);
    return k;
  };
  const std::vector<float> sparse = unrotated("kvquant2-1pct"), dense = unrotated("kvquant2");
  EXPECT_NEAR(sparse[7 * d], 50, 1e-4);
  EXPECT_NEAR(sparse[100 * d], 60, 1e-4);
  EXPECT_GT(std::fabs(sparse[101 * d] - 0.5f), 1e-3);  // quantised
  // Without outliers channel 0's range is [-1, 50]: 2 bits cannot resolve the sinusoid.
  double err_sparse = 0, err_dense = 0;
  for (int64_t t = 0; t < prompt; ++t) {
    if (t == 7) continue;
    err_sparse += std::pow(sparse[t * d] - pre[t * d], 2);
    err_dense += std::pow(dense[t * d] - pre[t * d], 2);
  }
  EXPECT_LT(err_sparse * 5, err_dense);
}

TEST(KvQuantPolicyTest, ValueOutliersPerToken) {
  // d = 100: floor(0.01 * 100) = 1 outlier per token. Token 1 holds 30 among entries in [0, 1).
  RopeConfig rope;
  const int d = 100;
  std::vector<float> pre(3 * d, 0.0f), values(3 * d);
  for (int i = 0; i < 3 * d; ++i) values[i] = static_cast<float>((i * 37) % 100) / 100;
  values[1 * d + 5] = 30;
  const TestHead head = RotatedHead(pre, values, d, 3, rope);
  const std::vector<HeadContext> heads = {ContextWithRope(head, rope)};
  const Dequantised sparse = Quantise("kvquant2-1pct", heads), dense = Quantise("kvquant2", heads);
  EXPECT_EQ(sparse.values[1 * d + 5], 30.0f);
  double err_sparse = 0, err_dense = 0;
  for (int c = 0; c < d; ++c) {
    if (c == 5) continue;
    err_sparse += std::pow(sparse.values[1 * d + c] - values[1 * d + c], 2);
    err_dense += std::pow(dense.values[1 * d + c] - values[1 * d + c], 2);
  }
  EXPECT_LT(err_sparse * 5, err_dense);
}

// Keys with the structure KVQuant's per-channel pre-RoPE scaling is for: channels with large fixed offsets
// before the rotation (post-RoPE the offsets turn into the pair's partner channel, widening both ranges).
TestHead StructuredHead(const RopeConfig& rope, int d, int64_t prompt, int64_t rows, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> pre(rows * d), values(rows * d);
  for (int64_t t = 0; t < rows; ++t) {
    for (int c = 0; c < d; ++c) {
      const float offset = c % 3 == 0 ? 5.0f - c : 0.0f;
      pre[t * d + c] = offset + (c % 2 == 0 ? 0.3f : 1.0f) * normal(rng);
      values[t * d + c] = normal(rng);
    }
  }
  return RotatedHead(pre, values, d, prompt, rope);
}

TEST(KvQuantPolicyTest, MatchesBruteForceRotateQuantiseRotateAndDiffersFromPostRope) {
  RopeConfig rope;
  rope.base = 10000;
  const int d = 8;
  const TestHead head = StructuredHead(rope, d, 64, 80, 11);
  for (const auto& [spec, bits, fraction] :
       std::vector<std::tuple<std::string, int, double>>{{"kvquant2", 2, 0}, {"kvquant3-1pct", 3, 0.01},
                                                         {"kvquant4", 4, 0}}) {
    SCOPED_TRACE(spec);
    const std::vector<float> got = Quantise(spec, {ContextWithRope(head, rope)}).keys;
    const std::vector<double> pre_rope = RefKeys(head, rope, bits, fraction, /*pre_rope=*/true);
    const std::vector<double> post_rope = RefKeys(head, rope, bits, fraction, /*pre_rope=*/false);
    EXPECT_LT(MaxAbsDiff(got, pre_rope), 1e-4);
    EXPECT_GT(MaxAbsDiff(got, post_rope), 0.1);
    // And on such keys quantising before the rotation is the more accurate.
    EXPECT_LT(MeanSquaredError(got, head.keys), MeanSquaredError(post_rope, head.keys));
  }
}

TEST(KvQuantPolicyTest, LinearRopeScalingIsUndone) {
  RopeConfig rope;
  rope.scaling = RopeScaling::kLinear;
  rope.scaling_factor = 4;
  const TestHead head = StructuredHead(rope, 8, 40, 48, 2);
  const std::vector<float> got = Quantise("kvquant4", {ContextWithRope(head, rope)}).keys;
  EXPECT_LT(MaxAbsDiff(got, RefKeys(head, rope, 4, 0, /*pre_rope=*/true)), 1e-4);
}

TEST(KvQuantPolicyTest, ErrorFallsWithBits) {
  RopeConfig rope;
  const TestHead head = StructuredHead(rope, 16, 128, 160, 5);
  const std::vector<HeadContext> heads = {ContextWithRope(head, rope)};
  double last_k = INFINITY, last_v = INFINITY;
  for (const char* spec : {"kvquant2", "kvquant3", "kvquant4", "kvquant8"}) {
    const Dequantised q = Quantise(spec, heads);
    const double ek = MeanSquaredError(q.keys, head.keys), ev = MeanSquaredError(q.values, head.values);
    EXPECT_LT(ek, last_k) << spec;
    EXPECT_LT(ev, last_v) << spec;
    last_k = ek;
    last_v = ev;
  }
  EXPECT_LT(last_k, 1e-3);  // 8 bits: near exact (unit-variance entries)
  EXPECT_LT(last_v, 1e-3);
}

TEST(KvQuantPolicyTest, OneCodebookPerLayerOverItsHeads) {
  // Two heads of one layer share the key codebook: each head's keys follow the brute force over both heads'
  // samples, and differ from those of the head quantised alone.
  RopeConfig rope;
  const TestHead a = StructuredHead(rope, 8, 32, 40, 7), b = StructuredHead(rope, 8, 32, 40, 8);
  const std::vector<HeadContext> both = {ContextWithRope(a, rope), ContextWithRope(b, rope)};
  for (int which : {0, 1}) {
    EXPECT_LT(MaxAbsDiff(Quantise("kvquant2", both, which).keys, RefKeys({&a, &b}, which, rope, 2, 0, true)), 1e-4);
  }
  EXPECT_NE(Quantise("kvquant2", {ContextWithRope(a, rope)}).keys, Quantise("kvquant2", both, 0).keys);
}

TEST(KvQuantPolicyTest, DeterministicAndCalibratedOnThePromptOnly) {
  RopeConfig rope;
  TestHead head = StructuredHead(rope, 16, 64, 96, 3);
  const std::vector<HeadContext> heads = {ContextWithRope(head, rope)};
  const Dequantised first = Quantise("kvquant3-1pct", heads), second = Quantise("kvquant3-1pct", heads);
  EXPECT_EQ(first.keys, second.keys);
  EXPECT_EQ(first.values, second.values);
  // Changing decode rows leaves the prompt rows' quantisation as it was (the closed loop requantises
  // every step and relies on it), and changes those rows.
  for (int64_t i = 64 * 16; i < 96 * 16; ++i) {
    head.keys[i] *= 1.5f;
    head.values[i] += 0.25f;
  }
  const Dequantised moved = Quantise("kvquant3-1pct", {ContextWithRope(head, rope)});
  EXPECT_TRUE(std::equal(first.keys.begin(), first.keys.begin() + 64 * 16, moved.keys.begin()));
  EXPECT_TRUE(std::equal(first.values.begin(), first.values.begin() + 64 * 16, moved.values.begin()));
  EXPECT_NE(first.keys, moved.keys);
}

TEST(KvQuantPolicyTest, AnInstanceBegunAgainFollowsANewPrompt) {
  // One instance begun on a, then on b (same shapes, other prompt rows), then on a with other decode rows:
  // each time as a fresh instance would quantise (the kept calibration is reused only for the same prompt).
  RopeConfig rope;
  const TestHead a = StructuredHead(rope, 8, 32, 40, 21), b = StructuredHead(rope, 8, 32, 40, 22);
  TestHead a_later = a;
  for (int64_t i = 32 * 8; i < 40 * 8; ++i) a_later.keys[i] = -a_later.keys[i];
  auto reused = *CreateTokenPolicy("kvquant3-1pct");
  for (const TestHead* head : std::vector<const TestHead*>{&a, &b, &a_later}) {
    const std::vector<HeadContext> heads = {ContextWithRope(*head, rope)};
    reused->BeginLayer(heads, 1 << 20);
    const KvOverride kv = reused->Kv(0, head->seq_len - 1);
    const Dequantised fresh = Quantise("kvquant3-1pct", heads);
    EXPECT_EQ(std::vector<float>(kv.keys, kv.keys + fresh.keys.size()), fresh.keys);
    EXPECT_EQ(std::vector<float>(kv.values, kv.values + fresh.values.size()), fresh.values);
  }
}

TEST(KvQuantPolicyTest, EveryTokenQuantisedAndInnerKeptSet) {
  std::vector<std::vector<double>> rows(30, std::vector<double>(100, 0.0));
  TestHead head = TestHead::FromLogits(70, 70, {rows});
  head.column_sums.assign(70, 1.0);
  auto policy = CreateTokenPolicy("kvquant4+h2o");
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ((*policy)->Name(), "kvquant4+h2o");
  EXPECT_EQ((*policy)->kind(), TokenPolicy::Kind::kQuantize);
  H2oPolicy plain({});
  EXPECT_EQ(RunPolicy(**policy, {&head}, 20), RunPolicy(plain, {&head}, 20));
  const KvOverride kv = (*policy)->Kv(0, 75);
  EXPECT_EQ(kv.keys_exact_from, 76);
  EXPECT_EQ(kv.values_exact_from, 76);
  EXPECT_EQ((*CreateTokenPolicy("kvquant3-1pct"))->Name(), "kvquant3-1pct");
  EXPECT_FALSE(CreateTokenPolicy("kvquant4+kivi4").ok());  // one quantiser at a time
}

TEST(KvQuantPolicyTest, RefusesRopeItCannotUndo) {
  auto policy = *CreateTokenPolicy("kvquant4+h2o");
  AttentionTraceHeader header;
  header.head_dim = 16;
  EXPECT_TRUE(policy->CheckTrace(header).ok());
  header.rope.scaling = RopeScaling::kLinear;
  header.rope.scaling_factor = 2;
  EXPECT_TRUE(policy->CheckTrace(header).ok());
  header.rope.scaling = RopeScaling::kLlama3;
  header.rope.scaling_factor = 8;
  const absl::Status s = policy->CheckTrace(header);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("kvquant4+h2o"), std::string::npos) << s;
  EXPECT_NE(s.message().find("'llama3' (factor 8)"), std::string::npos) << s;
  header.rope = RopeConfig();
  header.head_dim = 15;
  EXPECT_NE(policy->CheckTrace(header).message().find("even head_dim"), std::string::npos);
}

}  // namespace
}  // namespace kvsim
