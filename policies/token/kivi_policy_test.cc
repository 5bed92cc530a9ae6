#include "policies/token/kivi_policy.h"

#include <cstring>
#include <random>

#include "gtest/gtest.h"
#include "policies/token/h2o_policy.h"
#include "policies/token/testing/token_policy_testing.h"

namespace kvsim {
namespace {

TEST(KiviQuantizeTest, HandComputedGroups) {
  // 2 bits over [0, 3]: s = 1; 0.4 rounds to 0.
  std::vector<float> a = {0, 0.4f, 1, 3};
  QuantizeGroup(a.data(), 4, 2, a.data());
  EXPECT_EQ(a, (std::vector<float>{0, 0, 1, 3}));
  // 4 bits over [-1, 2]: s = 3/15 = 0.2; (0.5 + 1) / 0.2 = 7.5 rounds to even 8: -1 + 1.6 = 0.6.
  std::vector<float> b = {-1, 0, 0.5f, 2};
  QuantizeGroup(b.data(), 4, 4, b.data());
  EXPECT_NEAR(b[1], 0.0f, 1e-6);
  EXPECT_NEAR(b[2], 0.6f, 1e-6);
  EXPECT_EQ(b[3], 2.0f);
  // 3 bits over [0, 7]: s = 1; 2.6 rounds to 3, 4.5 to even 4.
  std::vector<float> d = {0, 2.6f, 4.5f, 7};
  QuantizeGroup(d.data(), 4, 3, d.data());
  EXPECT_EQ(d, (std::vector<float>{0, 3, 4, 7}));
  // A constant group is unchanged.
  std::vector<float> c = {1.5f, 1.5f};
  QuantizeGroup(c.data(), 2, 2, c.data());
  EXPECT_EQ(c, (std::vector<float>{1.5f, 1.5f}));
}

TEST(KiviQuantizeTest, KeysPerChannelValuesPerToken) {
  // Keys (3 tokens x 2 channels), one token group of 3, 2 bits. Channel 1 = (10, 20, 12): s = 10/3,
  // (12 - 10) / s = 0.6 -> 1 -> 13.33. Channel 0 = (0, 1, 3): s = 1, exact.
  std::vector<float> keys = {0, 10, 1, 20, 3, 12};
  std::vector<float> k = QuantizeKeysPerChannel(keys.data(), 3, 2, 3, 2);
  EXPECT_EQ(k[0], 0.0f);
  EXPECT_EQ(k[2], 1.0f);
  EXPECT_NEAR(k[5], 10.0f + 10.0f / 3, 1e-5);
  // Values (1 token x 3 channels), one channel group: (0, 0.9, 3), s = 1 -> (0, 1, 3).
  std::vector<float> values = {0, 0.9f, 3};
  EXPECT_EQ(QuantizeValuesPerToken(values.data(), 1, 3, 32, 2), (std::vector<float>{0, 1, 3}));
}

// KIVI's rule in plain scalar float operations, one at a time (no fused multiply-add: the baseline
// x86-64 target has none), as the bit-exact reference for every path.
float SnapReference(float x, float lo, float scale) {
  if (!(scale > 0)) return lo;
  const float v = (x - lo) / scale;
  const float code = (v + 8388608.0f) - 8388608.0f;
  const float step = scale * code;
  return lo + step;
}

bool SameBits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

TEST(KiviQuantizeTest, EveryPathMatchesTheScalarRuleBitForBit) {
  // 70 tokens (two full key groups of 32 and a partial one) x 128 channels, 2/4/8 bits, with a constant
  // channel (empty range) and a constant value group. This binary also runs with KVSIM_NO_AVX512=1
  // (kivi_policy_avx2_test), so both the AVX-512 kernels and the Eigen expressions are checked.
  const int64_t tokens = 70, group = 32;
  const int dim = 128;
  std::mt19937_64 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.5f);
  std::vector<float> x(tokens * dim);
  for (float& v : x) v = normal(rng);
  for (int64_t i = 0; i < tokens; ++i) x[i * dim + 5] = 0.75f;  // constant key channel
  for (int c = 32; c < 64; ++c) x[9 * dim + c] = -2.0f;         // constant value group
  for (int bits : {2, 4, 8}) {
    const float levels = static_cast<float>((1 << bits) - 1);
    const std::vector<float> keys = QuantizeKeysPerChannel(x.data(), tokens, dim, group, bits);
    for (int64_t start = 0; start < tokens; start += group) {
      const int64_t end = std::min(tokens, start + group);
      for (int c = 0; c < dim; ++c) {
        float lo = x[start * dim + c], hi = lo;
        for (int64_t i = start; i < end; ++i) {
          lo = std::min(lo, x[i * dim + c]);
          hi = std::max(hi, x[i * dim + c]);
        }
        const float scale = (hi - lo) / levels;
        for (int64_t i = start; i < end; ++i) {
          ASSERT_TRUE(SameBits(keys[i * dim + c], SnapReference(x[i * dim + c], lo, scale)))
              << bits << " bits, key " << i << " channel " << c;
        }
      }
    }
    const std::vector<float> values = QuantizeValuesPerToken(x.data(), tokens, dim, group, bits);
    for (int64_t i = 0; i < tokens; ++i) {
      for (int c0 = 0; c0 < dim; c0 += group) {
        const float* g = &x[i * dim + c0];
        const float lo = *std::min_element(g, g + group), hi = *std::max_element(g, g + group);
        const float scale = (hi - lo) / levels;
        for (int c = 0; c < group; ++c) {
          ASSERT_TRUE(SameBits(values[i * dim + c0 + c], SnapReference(g[c], lo, scale)))
              << bits << " bits, value " << i << " channel " << c0 + c;
        }
      }
    }
  }
}

TEST(KiviPolicyTest, ResidualWindowsAndInnerKeptSet) {
  std::vector<std::vector<double>> rows(30, std::vector<double>(100, 0.0));
  TestHead head = TestHead::FromLogits(70, 70, {rows});
  head.column_sums.assign(70, 1.0);
  KiviPolicy policy(4, std::make_unique<H2oPolicy>(TokenPolicyOptions{}));
  EXPECT_EQ(policy.Name(), "kivi4+h2o");
  H2oPolicy plain({});
  EXPECT_EQ(RunPolicy(policy, {&head}, 20), RunPolicy(plain, {&head}, 20));
  // At p = 70 (71 tokens): keys quantised in whole flushed groups of 32 -> rows < 64; values older than
  // the last 32 tokens -> rows < 39.
  KvOverride kv = policy.Kv(0, 70);
  EXPECT_EQ(kv.keys_exact_from, 64);
  EXPECT_EQ(kv.values_exact_from, 39);
  kv = policy.Kv(0, 95);  // 96 tokens: three full key groups
  EXPECT_EQ(kv.keys_exact_from, 96);
  EXPECT_EQ(kv.values_exact_from, 64);
  ASSERT_NE(kv.keys, nullptr);
  // The dequantised keys are KIVI's per-channel groups of the exact keys.
  std::vector<float> want = QuantizeKeysPerChannel(head.keys.data(), head.seq_len, head.head_dim, 32, 4);
  EXPECT_EQ(std::vector<float>(kv.keys, kv.keys + want.size()), want);
}

}  // namespace
}  // namespace kvsim
