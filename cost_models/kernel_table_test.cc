#include "cost_models/kernel_table.h"

#include <cmath>

#include "gtest/gtest.h"
#include "presets/presets.h"

namespace kvsim {
namespace {

// Known laws (ns) the synthetic tables are drawn from.
double DecodeNs(double b, double l) { return 5000 + 0.004 * b * l + 20 * b; }
double PrefillNs(double q, double c) { return 8000 + 0.9 * q + 2e-4 * q * c + 1e-4 * q * q; }
double GemmNs(double m) { return 3000 + 0.05 * m; }

DeviceRates H200() {
  proto::DeviceSpec d = *LoadDevicePreset("h200");
  d.set_compute_efficiency(0.7);
  d.set_memory_efficiency(0.8);
  d.set_interconnect_efficiency(0.7);
  return MakeDeviceRates(d);
}

proto::CalibrationPoint Attention(proto::KernelKind kind, int64_t b, int64_t q, int64_t c, double ns) {
  proto::CalibrationPoint p;
  p.set_kind(kind);
  p.set_dtype("bf16");
  p.mutable_shape()->set_batch(b);
  p.mutable_shape()->set_query_tokens(q);
  p.mutable_shape()->set_context_tokens(c);
  p.mutable_shape()->set_num_segments(1);
  p.mutable_shape()->set_num_heads(32);
  p.mutable_shape()->set_num_kv_heads(8);
  p.mutable_shape()->set_head_dim(128);
  p.set_median_ns(ns);
  return p;
}

proto::CalibrationPoint Gemm(int64_t m, double ns) {
  proto::CalibrationPoint p;
  p.set_kind(proto::KERNEL_KIND_MLP_GEMM);
  p.set_dtype("bf16");
  p.mutable_shape()->set_batch(1);
  p.mutable_shape()->set_num_segments(1);
  p.mutable_shape()->set_query_tokens(m);
  p.mutable_shape()->set_in_features(4096);
  p.mutable_shape()->set_out_features(28672);
  p.set_median_ns(ns);
  return p;
}

proto::CalibrationTable LawTable() {
  proto::CalibrationTable t;
  for (int64_t b = 1; b <= 256; b *= 2) {
    for (int64_t l = 256; l <= 131072; l *= 2) {
      *t.add_points() = Attention(proto::KERNEL_KIND_DECODE_ATTENTION, b, 1, l, DecodeNs(b, l));
    }
  }
  for (int64_t q = 16; q <= 8192; q *= 2) {
    for (int64_t c = 1024; c <= 131072; c *= 2) {
      *t.add_points() = Attention(proto::KERNEL_KIND_PREFILL_ATTENTION, 1, q, c, PrefillNs(q, c));
    }
  }
  for (int64_t m = 1; m <= 16384; m *= 2) *t.add_points() = Gemm(m, GemmNs(m));
  return t;
}

KernelTable Table(bool anchor = true) {
  KernelTableOptions options;
  options.anchor_extrapolation = anchor;
  absl::StatusOr<KernelTable> table = KernelTable::Build(LawTable(), H200(), options);
  EXPECT_TRUE(table.ok()) << table.status();
  return *table;
}

KernelQuery Query(const proto::CalibrationPoint& p) { return KernelQueryFromPoint(p); }

TEST(KernelTableTest, ReproducesEveryPointExactly) {
  const proto::CalibrationTable law = LawTable();
  const KernelTable table = Table();
  EXPECT_EQ(table.num_series(), 3u);  // decode, prefill, GEMM
  for (const proto::CalibrationPoint& p : law.points()) {
    const KernelTable::Prediction pred = table.Predict(Query(p));
    EXPECT_NEAR(pred.seconds * 1e9, p.median_ns(), 1e-9 * p.median_ns()) << p.ShortDebugString();
    EXPECT_FALSE(pred.extrapolated);
    EXPECT_TRUE(pred.measured);
  }
}

TEST(KernelTableTest, KnownLawsWithinTwoPercentAtHeldOutShapes) {
  const KernelTable table = Table();
  double worst = 0;
  for (double b = 1.5; b < 256; b *= 1.9) {
    for (double l = 300; l < 131072; l *= 1.7) {
      const int64_t bi = std::llround(b), li = std::llround(l);
      const double ns =
          table.Predict(Query(Attention(proto::KERNEL_KIND_DECODE_ATTENTION, bi, 1, li, 1))).seconds * 1e9;
      worst = std::max(worst, std::abs(ns / DecodeNs(bi, li) - 1));
    }
  }
  for (double q = 20; q < 8192; q *= 1.8) {
    for (double c = 1200; c < 131072; c *= 1.6) {
      const int64_t qi = std::llround(q), ci = std::llround(c);
      const double ns =
          table.Predict(Query(Attention(proto::KERNEL_KIND_PREFILL_ATTENTION, 1, qi, ci, 1))).seconds * 1e9;
      worst = std::max(worst, std::abs(ns / PrefillNs(qi, ci) - 1));
    }
  }
  for (int64_t m = 3; m < 16384; m = m * 3 / 2 + 1) {
    worst = std::max(worst, std::abs(table.Predict(Query(Gemm(m, 1))).seconds * 1e9 / GemmNs(m) - 1));
  }
  EXPECT_LT(worst, 0.02);
}

TEST(KernelTableTest, MonotoneWhereTheDataIs) {
  const KernelTable table = Table();
  double last = 0;
  for (int64_t l = 256; l <= 131072; l += 997) {
    const double s = table.Predict(Query(Attention(proto::KERNEL_KIND_DECODE_ATTENTION, 24, 1, l, 1))).seconds;
    EXPECT_GE(s, last) << l;
    last = s;
  }
}

TEST(KernelTableTest, ExtrapolationFallsBackToTheRooflineAndSaysSo) {
  // Context 1M is beyond the table's 128K.
  const KernelQuery far = Query(Attention(proto::KERNEL_KIND_DECODE_ATTENTION, 8, 1, 1 << 20, 1));
  const KernelQuery edge = Query(Attention(proto::KERNEL_KIND_DECODE_ATTENTION, 8, 1, 131072, 1));
  const KernelTable bare = Table(/*anchor=*/false);
  KernelTable::Prediction p = bare.Predict(far);
  EXPECT_TRUE(p.extrapolated);
  EXPECT_DOUBLE_EQ(p.seconds, bare.RooflineSeconds(far));
  // Anchored: the line t = a + b x roofline through the measured times at 64K and 128K, evaluated at
  // the roofline time of 1M.
  const KernelTable anchored = Table();
  const KernelQuery inner = Query(Attention(proto::KERNEL_KIND_DECODE_ATTENTION, 8, 1, 65536, 1));
  const double r0 = anchored.RooflineSeconds(inner), r1 = anchored.RooflineSeconds(edge);
  const double t0 = DecodeNs(8, 65536) * 1e-9, t1 = DecodeNs(8, 131072) * 1e-9;
  const double b = (t1 - t0) / (r1 - r0), a = t1 - b * r1;
  ASSERT_GT(b, 0);
  ASSERT_GE(a, 0);
  p = anchored.Predict(far);
  EXPECT_TRUE(p.extrapolated);
  EXPECT_NEAR(p.seconds, a + b * anchored.RooflineSeconds(far), 1e-9 * p.seconds);
  // The law itself is affine in the context, as the memory-bound roofline is: the fit is near exact.
  EXPECT_NEAR(p.seconds, DecodeNs(8, 1 << 20) * 1e-9, 0.01 * p.seconds);
  // A kernel with no series at all: the roofline, flagged as unmeasured.
  proto::CalibrationPoint merge;
  merge.set_kind(proto::KERNEL_KIND_SEGMENT_MERGE);
  merge.mutable_shape()->set_batch(4);
  merge.mutable_shape()->set_num_segments(8);
  merge.mutable_shape()->set_num_heads(32);
  merge.mutable_shape()->set_head_dim(128);
  p = anchored.Predict(Query(merge));
  EXPECT_FALSE(p.measured);
  EXPECT_DOUBLE_EQ(p.seconds, anchored.RooflineSeconds(Query(merge)));
}

TEST(KernelTableTest, CompressedKvBorrowsBf16ScaledByTheRooflineRatio) {
  const KernelTable table = Table();
  proto::CalibrationPoint point = Attention(proto::KERNEL_KIND_DECODE_ATTENTION, 64, 1, 8192, 1);
  const KernelQuery bf16 = Query(point);
  point.set_dtype("int4");
  const KernelQuery int4 = Query(point);
  const KernelTable::Prediction p = table.Predict(int4);
  EXPECT_TRUE(p.extrapolated);
  EXPECT_NEAR(p.seconds, DecodeNs(64, 8192) * 1e-9 * table.RooflineSeconds(int4) / table.RooflineSeconds(bf16), 1e-15);
  // int4 moves 0.53125 / 2 = 27% of bf16's bytes but its dequantisation and CUDA-core dot products make
  // it compute-bound: (3 x 16.8M + 134M) ops / 46.9e12 = 3.94 us vs 8.74 us of bf16 memory time per
  // sequence, a ratio of 0.45, not 0.27.
  EXPECT_NEAR(p.seconds / (DecodeNs(64, 8192) * 1e-9), 0.45, 0.01);
}

TEST(KernelTableTest, RejectsInvalidPointsNamingThem) {
  proto::CalibrationTable t = LawTable();
  t.mutable_points(3)->set_median_ns(0);
  absl::StatusOr<KernelTable> table = KernelTable::Build(t, H200(), {});
  EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(table.status().message().find("calibration point 3"), absl::string_view::npos);
}

}  // namespace
}  // namespace kvsim
