#include "cost_models/validation.h"

#include <cmath>

#include "gtest/gtest.h"
#include "presets/presets.h"

namespace kvsim {
namespace {

DeviceRates H200() {
  proto::DeviceSpec d = *LoadDevicePreset("h200");
  d.set_compute_efficiency(0.7);
  d.set_memory_efficiency(0.8);
  d.set_interconnect_efficiency(0.7);
  return MakeDeviceRates(d);
}

void AddGemm(proto::CalibrationTable* t, int64_t m, double ns) {
  proto::CalibrationPoint* p = t->add_points();
  p->set_kind(proto::KERNEL_KIND_MLP_GEMM);
  p->mutable_shape()->set_query_tokens(m);
  p->mutable_shape()->set_in_features(4096);
  p->mutable_shape()->set_out_features(4096);
  p->set_median_ns(ns);
}

void AddDecode(proto::CalibrationTable* t, int64_t b, int64_t l, double ns) {
  proto::CalibrationPoint* p = t->add_points();
  p->set_kind(proto::KERNEL_KIND_DECODE_ATTENTION);
  p->mutable_shape()->set_batch(b);
  p->mutable_shape()->set_context_tokens(l);
  p->mutable_shape()->set_num_heads(32);
  p->mutable_shape()->set_num_kv_heads(8);
  p->mutable_shape()->set_head_dim(128);
  p->set_median_ns(ns);
}

void AddCopy(proto::CalibrationTable* t, int64_t bytes, double ns) {
  proto::CalibrationPoint* p = t->add_points();
  p->set_kind(proto::KERNEL_KIND_HOST_DEVICE_COPY);
  p->mutable_shape()->set_bytes(bytes);
  p->set_median_ns(ns);
}

TEST(ValidationTest, LeaveOneOutByHand) {
  proto::CalibrationTable t;
  AddCopy(&t, 1000, 10);
  AddCopy(&t, 2000, 25);
  AddCopy(&t, 4000, 40);
  absl::StatusOr<ValidationReport> report = ValidateTable(t, H200(), {});
  ASSERT_TRUE(report.ok()) << report.status();
  // The prior of a copy is bytes / PCIe bandwidth, so the abscissa is log(bytes) + constant.
  // Without (2000, 25): halfway between log 1000 and log 4000, exp((ln 10 + ln 40) / 2) = 20: 20% off.
  // Without (1000, 10): the line t = a + b x prior through (2000, 25) and (4000, 40) is 10 + 15 x
  // bytes / 2000, which gives 17.5 at 1000 bytes (75% off). Without (4000, 40): 10 + 15 x 4000 / 1000
  // ... through (1000, 10) and (2000, 25): t = -5 + 15 x bytes / 1000 has a < 0, so proportional:
  // 25 x 2 = 50 (25% off).
  auto predicted = [&](double measured) {
    for (const PredictedPoint& p : report->loo_points) {
      if (std::abs(p.measured_ns - measured) < 1e-6) return p.predicted_ns;
    }
    return -1.0;
  };
  EXPECT_NEAR(predicted(25), 20, 1e-9);
  EXPECT_NEAR(predicted(10), 17.5, 1e-9);
  EXPECT_NEAR(predicted(40), 50, 1e-9);
  ASSERT_EQ(report->leave_one_out.size(), 2u);  // host_device_copy, all
  EXPECT_EQ(report->leave_one_out[0].kind, "host_device_copy");
  EXPECT_EQ(report->leave_one_out[0].count, 3);
  EXPECT_EQ(report->leave_one_out[0].extrapolated, 2);  // the two ends
  EXPECT_NEAR(report->leave_one_out[0].median, 0.25, 1e-9);
  EXPECT_NEAR(report->leave_one_out[0].worst, 0.75, 1e-9);
  EXPECT_EQ(report->leave_one_out[1].kind, "all");
}

TEST(ValidationTest, SmoothLawValidatesWithinTwoPercentHeldOut) {
  proto::CalibrationTable t;
  for (int64_t b = 1; b <= 256; b *= 2) {
    for (int64_t l = 256; l <= 131072; l *= 2) AddDecode(&t, b, l, 5000 + 0.004 * b * l + 20 * b);
  }
  for (int64_t m = 1; m <= 16384; m *= 2) AddGemm(&t, m, 3000 + 0.05 * m);
  absl::StatusOr<ValidationReport> report = ValidateTable(t, H200(), {});
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->num_series, 2);
  for (const ErrorStats& s : report->held_out) {
    EXPECT_LT(s.median, 0.02) << s.kind;
    EXPECT_GT(s.count, 0) << s.kind;
  }
  const std::string text = FormatValidationReport(*report);
  EXPECT_NE(text.find("decode_attention"), std::string::npos) << text;
  EXPECT_NE(text.find("leave-one-out"), std::string::npos) << text;
  EXPECT_NE(text.find("goal (held-out median <= 5%, p95 <= 15%, per kind): met for 2 of 2 kinds\n"), std::string::npos)
      << text;
}

TEST(ValidationTest, PlotIsAnSvgScatterWithTheDiagonalAndLabels) {
  proto::CalibrationTable t;
  AddGemm(&t, 1, 10);
  AddGemm(&t, 2, 20);
  AddGemm(&t, 4, 40);
  AddDecode(&t, 1, 1024, 9000);
  const std::string svg = ValidationPlotSvg(*ValidateTable(t, H200(), {}), "t <1>");
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_NE(svg.find("measured time (ns)"), std::string::npos);
  EXPECT_NE(svg.find("predicted time, leave-one-out (ns)"), std::string::npos);
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);  // y = x
  EXPECT_NE(svg.find("t &lt;1&gt;"), std::string::npos);       // escaped title
  size_t circles = 0;
  for (size_t pos = svg.find("<circle"); pos != std::string::npos; pos = svg.find("<circle", pos + 1)) ++circles;
  EXPECT_EQ(circles, 4u + 2u);  // 4 points + 2 legend entries
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
}

// Held out at holdout_every = 2: the middle copy (2000 bytes), predicted 20 us from its neighbours as in
// LeaveOneOutByHand (20% off), and the middle GEMM of an exactly affine law (nearly 0% off): the copy is
// listed first, with its shape.
TEST(ValidationTest, WorstHeldOutPointsComeFirstWithTheirShapes) {
  proto::CalibrationTable t;
  AddCopy(&t, 1000, 10000);
  AddCopy(&t, 2000, 25000);
  AddCopy(&t, 4000, 40000);
  AddGemm(&t, 1024, 3000 + 0.05 * 1024);
  AddGemm(&t, 2048, 3000 + 0.05 * 2048);
  AddGemm(&t, 4096, 3000 + 0.05 * 4096);
  ValidationOptions options;
  options.holdout_every = 2;
  absl::StatusOr<ValidationReport> report = ValidateTable(t, H200(), options);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->held_out_points.size(), 2u);
  EXPECT_EQ(report->held_out_points[0].kind, "host_device_copy");
  EXPECT_EQ(report->held_out_points[0].shape, "bf16 batch=1 segments=1 bytes=2000");
  EXPECT_NEAR(report->held_out_points[0].error, 0.2, 1e-9);
  EXPECT_NEAR(report->held_out_points[0].predicted_ns, 20000, 1e-6);
  EXPECT_EQ(report->held_out_points[1].kind, "mlp_gemm");
  EXPECT_LT(report->held_out_points[1].error, 0.02);
  const std::string one = FormatWorstHeldOut(*report, 1);
  EXPECT_EQ(one.rfind("1 worst held-out predictions:\n", 0), 0u) << one;
  EXPECT_NE(one.find("20.0%  host_device_copy"), std::string::npos) << one;
  EXPECT_NE(one.find("measured       25.0 us, predicted       20.0 us"), std::string::npos) << one;
  EXPECT_EQ(one.find("mlp_gemm"), std::string::npos) << one;
  EXPECT_NE(FormatWorstHeldOut(*report, 10).find("mlp_gemm"), std::string::npos);
}

TEST(ValidationTest, EmptyTableIsAnError) {
  EXPECT_EQ(ValidateTable(proto::CalibrationTable(), H200(), {}).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace kvsim
