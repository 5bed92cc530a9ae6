#include "kernels/reference/kv_quant.h"

#include <cmath>
#include <random>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

TEST(KvQuantTest, Bf16RoundsToNearestEven) {
  EXPECT_EQ(FloatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);      // half an ulp (2^-7) above 1: tie, to even
  EXPECT_EQ(FloatToBf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // 1.5 ulp: tie between 0x3f81 and 0x3f82
  EXPECT_EQ(FloatToBf16(1.0f + 5 * std::ldexp(1.0f, -9)), 0x3f81);  // 1.25 ulp: nearest is 1 ulp
  EXPECT_EQ(FloatToBf16(-2.0f), 0xc000);
  EXPECT_EQ(Bf16ToFloat(0x3f81), 1.0f + std::ldexp(1.0f, -7));
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(NAN))));
}

TEST(KvQuantTest, Fp8E4m3KnownCodes) {
  EXPECT_EQ(Fp8E4m3ToDouble(0x38), 1.0);                  // exponent 7 (bias 7), mantissa 0
  EXPECT_EQ(Fp8E4m3ToDouble(0x7e), 448.0);                // 1.75 * 2^8, the largest finite value
  EXPECT_EQ(Fp8E4m3ToDouble(0x08), std::ldexp(1.0, -6));  // smallest normal
  EXPECT_EQ(Fp8E4m3ToDouble(0x01), std::ldexp(1.0, -9));  // smallest subnormal: 1/8 * 2^-6
  EXPECT_EQ(Fp8E4m3ToDouble(0xb8), -1.0);
  EXPECT_TRUE(std::isnan(Fp8E4m3ToDouble(0x7f)));
  EXPECT_EQ(DoubleToFp8E4m3(1.0625), 0x38);  // midway between 1 (0x38) and 1.125 (0x39): to even
  EXPECT_EQ(DoubleToFp8E4m3(1.1875), 0x3a);  // midway between 1.125 (0x39) and 1.25 (0x3a): to even
  EXPECT_EQ(DoubleToFp8E4m3(1000.0), 0x7e);  // saturates
  EXPECT_EQ(DoubleToFp8E4m3(-1000.0), 0xfe);
  for (int code = 0; code < 256; ++code) {
    if ((code & 0x7f) == 0x7f) continue;
    EXPECT_EQ(DoubleToFp8E4m3(Fp8E4m3ToDouble(code)), code == 0x80 ? 0x80 : code) << code;
  }
}

// Encoding picks the nearest finite value: brute force over all 254 finite codes.
TEST(KvQuantTest, Fp8EncodingIsNearest) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> dist(-460, 460);
  for (int i = 0; i < 2000; ++i) {
    const double x = i % 2 ? dist(rng) : dist(rng) / 256;
    const double err = std::fabs(x - Fp8E4m3ToDouble(DoubleToFp8E4m3(x)));
    for (int code = 0; code < 256; ++code) {
      if ((code & 0x7f) == 0x7f) continue;
      ASSERT_LE(err, std::fabs(x - Fp8E4m3ToDouble(code))) << x;
    }
  }
}

std::vector<float> RandomPool(const PagedKvLayout& l, std::mt19937_64& rng) {
  std::normal_distribution<double> dist(0.0, 1.0);
  std::vector<float> pool(l.NumElements());
  for (size_t i = 0; i < pool.size(); ++i) {
    pool[i] = static_cast<float>(dist(rng)) + (i % 53 == 0 ? 6.0f : 0.0f);  // with outliers
  }
  return pool;
}

struct Case {
  KvDtype dtype;
  int group_size;
  bool is_key;
  int page_size;
};

class KvQuantRoundTripTest : public ::testing::TestWithParam<Case> {};

// Each element's error against the bound derived in kv_quant.h from the stored parameters, computed here
// from the layout's indexing rules; float rounding of the result adds at most 2^-24 |x|.
TEST_P(KvQuantRoundTripTest, ErrorWithinTheStatedBound) {
  const Case c = GetParam();
  PagedKvLayout l{/*num_pages=*/6, c.page_size, /*num_kv_heads=*/2, /*head_dim=*/128};
  std::mt19937_64 rng(12);
  const std::vector<float> pool = RandomPool(l, rng);
  absl::StatusOr<QuantizedKvPool> q = QuantizeKvPool(pool, l, c.dtype, c.group_size, c.is_key);
  ASSERT_TRUE(q.ok()) << q.status();
  ASSERT_EQ(q->data.size(), static_cast<size_t>(l.NumElements() * KvDtypeBits(c.dtype) / 8));
  const std::vector<float> back = DequantizeKvPool(*q);
  double worst_ratio = 0;  // largest error / bound seen: the bound should be nearly reached
  for (int64_t p = 0; p < l.num_pages; ++p) {
    for (int slot = 0; slot < l.page_size; ++slot) {
      for (int h = 0; h < l.num_kv_heads; ++h) {
        for (int d = 0; d < l.head_dim; ++d) {
          const int64_t i = l.RowOffset(p, slot, h) + d;
          const double x = pool[i];
          const int64_t token_param = (p * l.num_kv_heads + h) * l.page_size + slot;
          double bound = 0;
          switch (c.dtype) {
            case KvDtype::kBf16:
              bound = std::ldexp(std::fabs(x), -8);
              break;
            case KvDtype::kFp8E4m3:
              bound = std::max(std::ldexp(std::fabs(x), -4), std::ldexp(double{q->scale[token_param]}, -10));
              break;
            case KvDtype::kInt8:
              bound = q->scale[token_param] / 2.0;
              break;
            default: {
              int64_t param;
              if (c.is_key) {
                const int gt = std::min(c.group_size, l.page_size);
                param = ((p * l.num_kv_heads + h) * (l.page_size / gt) + slot / gt) * l.head_dim + d;
              } else {
                param = token_param * (l.head_dim / c.group_size) + d / c.group_size;
              }
              bound = q->scale[param] / 2.0;
            }
          }
          const double err = std::fabs(x - back[i]);
          ASSERT_LE(err, bound * (1 + 1e-9) + std::ldexp(std::fabs(x), -24)) << "element " << i;
          worst_ratio = std::max(worst_ratio, err / bound);
        }
      }
    }
  }
  EXPECT_GT(worst_ratio, 0.5) << "the bound is far from tight: wrong scale indexing?";
}

INSTANTIATE_TEST_SUITE_P(Formats, KvQuantRoundTripTest,
                         ::testing::Values(Case{KvDtype::kBf16, 0, true, 16}, Case{KvDtype::kFp8E4m3, 0, true, 16},
                                           Case{KvDtype::kInt8, 0, false, 16}, Case{KvDtype::kInt4, 32, true, 16},
                                           Case{KvDtype::kInt4, 32, true, 64}, Case{KvDtype::kInt4, 64, true, 64},
                                           Case{KvDtype::kInt4, 128, true, 128}, Case{KvDtype::kInt4, 32, false, 16},
                                           Case{KvDtype::kInt4, 64, false, 16}, Case{KvDtype::kInt4, 128, false, 16},
                                           Case{KvDtype::kInt2, 32, true, 32}, Case{KvDtype::kInt2, 128, false, 16}));

// Values -1, 2, 0.5, ... in one 32-channel group: zero = -1, step = 3 / 15 = 0.2 rounded up to float
// (0.200000003); 0.5 is (0.5 + 1) / 0.200000003 = 7.4999999 steps up, so code 7: back to -1 + 1.4 = 0.4,
// an error of half a step.
TEST(KvQuantTest, HandComputedInt4Group) {
  PagedKvLayout l{/*num_pages=*/1, /*page_size=*/1, /*num_kv_heads=*/1, /*head_dim=*/32};
  std::vector<float> pool(32, 0.0f);
  pool[0] = -1.0f;
  pool[1] = 2.0f;
  pool[2] = 0.5f;
  absl::StatusOr<QuantizedKvPool> q = QuantizeKvPool(pool, l, KvDtype::kInt4, 32, /*is_key=*/false);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->zero[0], -1.0f);
  EXPECT_NEAR(q->scale[0], 0.2, 1e-7);
  EXPECT_GE(q->scale[0], 0.2);
  EXPECT_EQ(q->data[0], 0x0f << 4);  // channel 0 code 0 (low nibble), channel 1 code 15 (high nibble)
  EXPECT_EQ(q->data[1] & 0x0f, 7);
  EXPECT_NEAR(DequantizeKvPool(*q)[2], 0.4, 1e-6);
}

TEST(KvQuantTest, RejectsBadGroups) {
  PagedKvLayout l{/*num_pages=*/1, /*page_size=*/16, /*num_kv_heads=*/1, /*head_dim=*/128};
  std::vector<float> pool(l.NumElements(), 1.0f);
  absl::StatusOr<QuantizedKvPool> q = QuantizeKvPool(pool, l, KvDtype::kInt4, 48, true);
  EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(q.status().message().find("group size must be 32, 64 or 128 (got 48)"), std::string::npos);
  l.page_size = 48;
  pool.assign(l.NumElements(), 1.0f);
  q = QuantizeKvPool(pool, l, KvDtype::kInt4, 32, true);
  EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(q.status().message().find("does not divide page_size 48"), std::string::npos) << q.status();
  q = QuantizeKvPool(std::vector<float>(5), l, KvDtype::kInt8, 0, true);
  EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(q.status().message().find("KV pool has 5 values"), std::string::npos);
}

}  // namespace
}  // namespace kvsim
