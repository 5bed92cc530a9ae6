#include "kernels/blaslt_gemm.h"

#include <cmath>
#include <random>

#include "gtest/gtest.h"
#include "kernels/device.h"
#include "kernels/reference/kv_quant.h"

namespace kvsim {
namespace {

// Random bf16 matrices (never zeros), C poisoned with NaN, against a float64 product on the host.
TEST(BlasLtGemmTest, MatchesHostProduct) {
  if (!CudaDeviceAvailable()) GTEST_SKIP() << "no GPU";
  absl::StatusOr<std::unique_ptr<BlasLtGemm>> gemm = BlasLtGemm::Create();
  ASSERT_TRUE(gemm.ok()) << gemm.status();
  std::mt19937_64 rng(31);
  std::normal_distribution<double> dist(0, 1);
  struct Shape {
    int m, n, k;
  };
  for (Shape s : {Shape{37, 96, 64}, Shape{128, 2048, 512}, Shape{1, 256, 4096}}) {
    std::vector<uint16_t> a(int64_t{s.m} * s.k), b(int64_t{s.k} * s.n);
    for (uint16_t& x : a) x = FloatToBf16(static_cast<float>(dist(rng)));
    for (uint16_t& x : b) x = FloatToBf16(static_cast<float>(dist(rng)));
    auto da = DeviceBuffer::FromHost(a.data(), a.size() * 2);
    auto db = DeviceBuffer::FromHost(b.data(), b.size() * 2);
    auto dc = DeviceBuffer::Allocate(int64_t{s.m} * s.n * 2);
    ASSERT_TRUE(da.ok() && db.ok() && dc.ok());
    ASSERT_TRUE(dc->Fill(0xff).ok());  // bf16 NaN
    ASSERT_TRUE((*gemm)->Run(s.m, s.n, s.k, da->get(), db->get(), dc->get()).ok());
    ASSERT_TRUE(DeviceSynchronize().ok());
    std::vector<uint16_t> c(int64_t{s.m} * s.n);
    ASSERT_TRUE(dc->CopyToHost(c.data(), c.size() * 2).ok());
    double err2 = 0, ref2 = 0;
    for (int i = 0; i < s.m; ++i) {
      for (int j = 0; j < s.n; ++j) {
        double ref = 0;
        for (int t = 0; t < s.k; ++t) ref += double{Bf16ToFloat(a[i * s.k + t])} * Bf16ToFloat(b[t * s.n + j]);
        const double got = Bf16ToFloat(c[int64_t{i} * s.n + j]);
        ASSERT_TRUE(std::isfinite(got)) << i << "," << j;
        err2 += (got - ref) * (got - ref);
        ref2 += ref * ref;
      }
    }
    EXPECT_LE(std::sqrt(err2 / ref2), 5e-3) << s.m << "x" << s.n << "x" << s.k;  // bf16 output: ~2^-9
  }
}

TEST(BlasLtGemmTest, WithoutAGpuCreateIsUnavailable) {
  if (CudaDeviceAvailable()) GTEST_SKIP() << "a GPU is available";
  EXPECT_EQ(BlasLtGemm::Create().status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace kvsim
