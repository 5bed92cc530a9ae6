// GPU kernels against the float64 CPU reference (kernels/reference/attention_reference.h). Each check draws
// fresh random inputs, poisons the outputs with NaN first, and fails on any NaN. Quantised formats are
// compared with attention over the *dequantised* KV, so only the kernel's own error is measured.
#include <cmath>
#include <numeric>
#include <random>

#include "gtest/gtest.h"
#include "kernels/attention_runner.h"
#include "kernels/device.h"
#include "kernels/reference/attention_reference.h"
#include "kernels/reference/kv_quant.h"

namespace kvsim {
namespace {

struct Problem {
  PagedKvLayout layout;
  SegmentTable table;
  int num_q_heads = 0;
  std::vector<float> q, k, v;  // q rounded to bf16 (as uploaded); k, v raw floats
};

std::vector<float> Normal(int64_t n, double stddev, std::mt19937_64& rng) {
  std::normal_distribution<double> dist(0.0, stddev);
  std::vector<float> out(n);
  for (float& x : out) x = RoundToBf16(static_cast<float>(dist(rng)));
  return out;
}

// Requests with `segments` segments of random length (empty ones included) over shuffled pages.
Problem MakeProblem(int num_requests, int segments, int max_tokens, int gqa, int page_size, int64_t q_rows,
                    double q_scale, std::mt19937_64& rng) {
  Problem p;
  p.layout.page_size = page_size;
  p.layout.num_kv_heads = 2;
  p.layout.head_dim = 128;
  p.num_q_heads = 2 * gqa;
  std::uniform_int_distribution<int> tokens(0, max_tokens);
  std::vector<std::vector<SegmentTable::SegmentSpec>> requests(num_requests);
  int pages = 0;
  for (auto& specs : requests) {
    for (int s = 0; s < segments; ++s) {
      SegmentTable::SegmentSpec spec;
      spec.num_tokens = s == 0 ? 1 + tokens(rng) : tokens(rng) * (s % 3 == 2 ? 0 : 1);  // every third empty
      for (int i = 0; i < (spec.num_tokens + page_size - 1) / page_size; ++i) spec.pages.push_back(pages++);
      specs.push_back(spec);
    }
  }
  std::vector<int32_t> perm(pages);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  for (auto& specs : requests) {
    for (auto& spec : specs) {
      for (int32_t& page : spec.pages) page = perm[page];
    }
    p.table.AddRequest(specs);
  }
  p.layout.num_pages = pages + 1;  // one unused page
  p.k = Normal(p.layout.NumElements(), 1.0, rng);
  p.v = Normal(p.layout.NumElements(), 1.0, rng);
  p.q = Normal((q_rows < 0 ? num_requests : q_rows) * p.num_q_heads * p.layout.head_dim, q_scale, rng);
  return p;
}

// Max |gpu - ref| over o and lse; -inf lse must match exactly (with o = 0); NaN fails.
void ExpectMatches(const HostAttentionResult& gpu, const AttentionOutput& ref, double o_tol, double lse_tol,
                   double rel_tol) {
  ASSERT_EQ(gpu.o.size(), ref.o.size());
  ASSERT_EQ(gpu.lse.size(), ref.lse.size());
  double err2 = 0, ref2 = 0;
  for (size_t i = 0; i < ref.o.size(); ++i) {
    ASSERT_TRUE(std::isfinite(gpu.o[i])) << "o[" << i << "] = " << gpu.o[i];
    ASSERT_NEAR(gpu.o[i], ref.o[i], o_tol) << "o[" << i << "]";
    err2 += (gpu.o[i] - ref.o[i]) * (gpu.o[i] - ref.o[i]);
    ref2 += ref.o[i] * ref.o[i];
  }
  for (size_t i = 0; i < ref.lse.size(); ++i) {
    if (std::isinf(ref.lse[i])) {
      ASSERT_EQ(gpu.lse[i], -INFINITY) << "lse[" << i << "] of an empty row";
    } else {
      ASSERT_TRUE(std::isfinite(gpu.lse[i])) << "lse[" << i << "] = " << gpu.lse[i];
      ASSERT_NEAR(gpu.lse[i], ref.lse[i], lse_tol) << "lse[" << i << "]";
    }
  }
  if (ref2 > 0) {
    EXPECT_LE(std::sqrt(err2 / ref2), rel_tol);
  }
}

// Both decode kernels compute the same function and meet the same tolerances.
constexpr DecodeKernel kDecodeKernels[] = {DecodeKernel::kCudaCores, DecodeKernel::kTensorCores};

struct DecodeCase {
  KvDtype dtype;
  int group_size;
  int gqa;
  int page_size;
};

class DecodeKernelTest : public ::testing::TestWithParam<DecodeCase> {};

TEST_P(DecodeKernelTest, MatchesReferenceSplitAndUnsplit) {
  if (!CudaDeviceAvailable()) GTEST_SKIP() << "no GPU";
  const DecodeCase c = GetParam();
  std::mt19937_64 rng(100 + static_cast<int>(c.dtype) * 10 + c.gqa);
  const double scale = 1.0 / std::sqrt(128.0);
  for (int trial = 0; trial < 4; ++trial) {
    // Trials: one segment per request (direct output possible), several segments, large scores.
    const int segments = trial == 0 ? 1 : 1 + 2 * trial;
    const double q_scale = trial == 3 ? 8.0 : 1.0;
    Problem p = MakeProblem(/*num_requests=*/5, segments, /*max_tokens=*/700, c.gqa, c.page_size, -1, q_scale, rng);
    absl::StatusOr<QuantizedKvPool> k = QuantizeKvPool(p.k, p.layout, c.dtype, c.group_size, true);
    absl::StatusOr<QuantizedKvPool> v = QuantizeKvPool(p.v, p.layout, c.dtype, c.group_size, false);
    ASSERT_TRUE(k.ok() && v.ok());
    absl::StatusOr<AttentionOutput> ref =
        DecodeReference(p.layout, p.table, p.num_q_heads, p.q, DequantizeKvPool(*k), DequantizeKvPool(*v), scale);
    ASSERT_TRUE(ref.ok()) << ref.status();
    for (DecodeKernel kernel : kDecodeKernels) {
      for (int min_ctas : {1, 4096}) {  // no split (direct when one segment) / split to 256-token items
        SCOPED_TRACE(testing::Message() << "trial " << trial << " min_ctas " << min_ctas << " kernel "
                                        << static_cast<int>(kernel));
        auto problem = DeviceDecodeProblem::Create(p.layout, p.table, p.num_q_heads, p.q, *k, *v, scale, min_ctas);
        ASSERT_TRUE(problem.ok()) << problem.status();
        (*problem)->UseKernel(kernel);
        ASSERT_TRUE((*problem)->PoisonOutputs().ok());
        ASSERT_TRUE((*problem)->Run().ok());
        absl::StatusOr<HostAttentionResult> out = (*problem)->Download();
        ASSERT_TRUE(out.ok()) << out.status();
        ExpectMatches(*out, *ref, 2e-3, 1e-3, 1e-4);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, DecodeKernelTest,
                         ::testing::Values(DecodeCase{KvDtype::kBf16, 0, 4, 16}, DecodeCase{KvDtype::kBf16, 0, 1, 64},
                                           DecodeCase{KvDtype::kBf16, 0, 2, 16}, DecodeCase{KvDtype::kBf16, 0, 8, 32},
                                           DecodeCase{KvDtype::kFp8E4m3, 0, 4, 16},
                                           DecodeCase{KvDtype::kInt8, 0, 8, 16}, DecodeCase{KvDtype::kInt4, 32, 4, 16},
                                           DecodeCase{KvDtype::kInt4, 64, 4, 64},
                                           DecodeCase{KvDtype::kInt4, 128, 4, 128},
                                           DecodeCase{KvDtype::kInt4, 128, 8, 16},
                                           DecodeCase{KvDtype::kInt2, 32, 4, 32}));

// A request whose segments are all empty gets lse = -inf and o = 0 (not NaN), split or not.
TEST(DecodeKernelEdgeTest, AllEmptyRequestGivesTheEmptyState) {
  if (!CudaDeviceAvailable()) GTEST_SKIP() << "no GPU";
  std::mt19937_64 rng(7);
  Problem p = MakeProblem(2, 2, 300, 4, 16, -1, 1.0, rng);
  SegmentTable table = p.table;
  table.segments.push_back({0, 0});
  table.segments.push_back({0, 0});
  table.segment_begin.push_back(static_cast<int32_t>(table.segments.size()));
  std::vector<float> q = p.q;
  q.insert(q.end(), p.q.begin(), p.q.begin() + p.num_q_heads * 128);
  auto k = QuantizeKvPool(p.k, p.layout, KvDtype::kBf16, 0, true);
  auto v = QuantizeKvPool(p.v, p.layout, KvDtype::kBf16, 0, false);
  ASSERT_TRUE(k.ok() && v.ok());
  auto ref = DecodeReference(p.layout, table, p.num_q_heads, q, DequantizeKvPool(*k), DequantizeKvPool(*v), 0.1);
  ASSERT_TRUE(ref.ok());
  for (DecodeKernel kernel : kDecodeKernels) {
    SCOPED_TRACE(testing::Message() << "kernel " << static_cast<int>(kernel));
    auto problem = DeviceDecodeProblem::Create(p.layout, table, p.num_q_heads, q, *k, *v, 0.1, 4096);
    ASSERT_TRUE(problem.ok()) << problem.status();
    (*problem)->UseKernel(kernel);
    ASSERT_TRUE((*problem)->PoisonOutputs().ok());
    ASSERT_TRUE((*problem)->Run().ok());
    auto out = (*problem)->Download();
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectMatches(*out, *ref, 2e-3, 1e-3, 1e-4);
    for (int h = 0; h < p.num_q_heads; ++h) EXPECT_EQ(out->lse[2 * p.num_q_heads + h], -INFINITY);
  }
}

class PrefillKernelTest : public ::testing::TestWithParam<int> {};

TEST_P(PrefillKernelTest, MatchesCausalReference) {
  if (!CudaDeviceAvailable()) GTEST_SKIP() << "no GPU";
  const int gqa = GetParam();
  std::mt19937_64 rng(200 + gqa);
  const double scale = 1.0 / std::sqrt(128.0);
  for (int trial = 0; trial < 3; ++trial) {
    Problem p = MakeProblem(3, 1 + 2 * trial, 150, gqa, 16, 0, 1.0, rng);
    // Chunk lengths: a short one, one crossing a 64-query tile, and the whole context of the last request.
    std::vector<int32_t> query_begin = {0};
    for (int r = 0; r < 3; ++r) {
      const int64_t tokens = p.table.RequestTokens(r);
      const int64_t n = r == 2 ? tokens : std::min<int64_t>(tokens, r == 0 ? 5 : 100);
      query_begin.push_back(query_begin.back() + static_cast<int32_t>(n));
    }
    p.q = Normal(int64_t{query_begin.back()} * p.num_q_heads * 128, 1.0, rng);
    auto k = QuantizeKvPool(p.k, p.layout, KvDtype::kBf16, 0, true);
    auto v = QuantizeKvPool(p.v, p.layout, KvDtype::kBf16, 0, false);
    ASSERT_TRUE(k.ok() && v.ok());
    auto ref = PrefillReference(p.layout, p.table, p.num_q_heads, query_begin, p.q, p.k, p.v, scale);
    ASSERT_TRUE(ref.ok()) << ref.status();
    auto problem = DevicePrefillProblem::Create(p.layout, p.table, p.num_q_heads, query_begin, p.q, *k, *v, scale);
    ASSERT_TRUE(problem.ok()) << problem.status();
    ASSERT_TRUE((*problem)->PoisonOutputs().ok());
    ASSERT_TRUE((*problem)->Run().ok());
    auto out = (*problem)->Download();
    ASSERT_TRUE(out.ok()) << out.status();
    // P is rounded to bf16 before P.V (as in FlashAttention-2): bf16-operand tolerances for o.
    ExpectMatches(*out, *ref, 2e-2, 1e-3, 1e-2);
  }
}

INSTANTIATE_TEST_SUITE_P(Gqa, PrefillKernelTest, ::testing::Values(1, 4, 8));

TEST(AttentionKernelsTest, WithoutAGpuLaunchesAreUnavailable) {
  if (CudaDeviceAvailable()) GTEST_SKIP() << "a GPU is available";
  std::mt19937_64 rng(1);
  Problem p = MakeProblem(1, 1, 20, 4, 16, -1, 1.0, rng);
  auto k = QuantizeKvPool(p.k, p.layout, KvDtype::kBf16, 0, true);
  ASSERT_TRUE(k.ok());
  auto problem = DeviceDecodeProblem::Create(p.layout, p.table, p.num_q_heads, p.q, *k, *k, 0.1, 1);
  EXPECT_EQ(problem.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace kvsim
