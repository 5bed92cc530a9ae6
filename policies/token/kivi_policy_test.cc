#include "policies/token/kivi_policy.h"

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
