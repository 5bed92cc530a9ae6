#include "kernels/calibration.h"

#include <algorithm>
#include <iterator>
#include <numeric>
#include <set>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/device.h"

namespace kvsim {
namespace {

// Nearest-rank percentiles of 1..10: p10 is the 1st value, the median the 5th, p90 the 9th.
TEST(CalibrationTest, PercentilesAreNearestRank) {
  double p10, median, p90;
  Percentiles({10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, &p10, &median, &p90);
  EXPECT_EQ(p10, 1);
  EXPECT_EQ(median, 5);
  EXPECT_EQ(p90, 9);
  Percentiles({42}, &p10, &median, &p90);
  EXPECT_EQ(p10, 42);
  EXPECT_EQ(p90, 42);
}

TEST(CalibrationTest, CoarseGridRespectsTheTokenCapAndCoversEveryFormat) {
  const CalibrationGrid grid = MakeCalibrationGrid(false);
  std::set<std::pair<int, int>> formats;
  for (const DecodePoint& p : grid.decode) {
    EXPECT_LE(int64_t{p.batch} * p.context_tokens, int64_t{1} << 21);
    EXPECT_LE(p.num_segments * p.page_size, p.context_tokens);
    formats.insert({static_cast<int>(p.dtype), p.group_size});
  }
  EXPECT_EQ(formats.size(), 5u);  // bf16, fp8, int8, int4 g32, int4 g128
  // The headline shape of the issue is in the grid: B = 64, L = 8192, 4 segments, bf16, GQA 4.
  bool headline = false;
  for (const DecodePoint& p : grid.decode) {
    headline |=
        p.batch == 64 && p.context_tokens == 8192 && p.num_segments == 4 && p.dtype == KvDtype::kBf16 && p.gqa == 4;
  }
  EXPECT_TRUE(headline);
  EXPECT_LT(grid.decode.size(), 1500u);  // ~30 runs each: about a minute on an H200, inside the 5-minute budget
  EXPECT_GT(MakeCalibrationGrid(true).decode.size(), grid.decode.size());
  for (const PrefillPoint& p : grid.prefill) EXPECT_TRUE(p.prefix_tokens > 0 || p.prefix_segments == 1);
  // GEMMs: every 64 tokens from 128 to 1024, never more than 1/8 apart above, for each of the 5 layer
  // shapes; the LM head up to 4096 rows.
  std::set<int64_t> tokens;
  int lm_head = 0;
  for (const GemmPoint& g : grid.gemm) {
    tokens.insert(g.tokens);
    if (g.name == "lm_head") {
      ++lm_head;
      EXPECT_LE(g.tokens, 4096);
      EXPECT_EQ(g.out_features, 128256);
    }
  }
  EXPECT_EQ(grid.gemm.size() - lm_head, 5 * tokens.size());
  EXPECT_EQ(*tokens.begin(), 1);
  for (int64_t t = 128; t <= 1024; t += 64) EXPECT_TRUE(tokens.count(t)) << t;
  for (auto it = tokens.upper_bound(1024); it != tokens.end(); ++it) {
    EXPECT_LE(*it - *std::prev(it), *std::prev(it) / 8) << *it;
  }
  EXPECT_EQ(*tokens.rbegin(), 16384);
  EXPECT_LE(tokens.size(), 64u);
}

// Bit-reversed order of 0..7 written out by hand; every size is a permutation, and a prefix of half the
// points leaves no gap wider than 2 (an even subset).
TEST(CalibrationTest, CoverageOrderIsAPermutationWhosePrefixesSpread) {
  EXPECT_EQ(CoverageOrder(8), (std::vector<int>{0, 4, 2, 6, 1, 5, 3, 7}));
  EXPECT_EQ(CoverageOrder(5), (std::vector<int>{0, 4, 2, 1, 3}));
  EXPECT_TRUE(CoverageOrder(0).empty());
  EXPECT_EQ(CoverageOrder(1), (std::vector<int>{0}));
  for (int n : {2, 3, 7, 100, 450}) {
    std::vector<int> order = CoverageOrder(n);
    std::vector<int> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int> expect(n);
    std::iota(expect.begin(), expect.end(), 0);
    EXPECT_EQ(sorted, expect) << n;
    std::vector<int> half(order.begin(), order.begin() + n / 2);
    std::sort(half.begin(), half.end());
    for (size_t i = 1; i < half.size(); ++i) EXPECT_LE(half[i] - half[i - 1], 3) << n;
  }
}

TEST(CalibrationTest, WithoutAGpuCalibrationIsUnavailable) {
  if (CudaDeviceAvailable()) GTEST_SKIP() << "a GPU is available";
  absl::StatusOr<CalibrationResult> result = RunCalibration(CalibrationOptions(), nullptr);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(result.status().message().find("needs a CUDA GPU"), std::string::npos);
}

}  // namespace
}  // namespace kvsim
