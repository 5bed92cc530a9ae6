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

TEST(ValidationTest, LeaveOneOutOfTheMiddlePointByHand) {
  proto::CalibrationTable t;
  AddGemm(&t, 1, 10);
  AddGemm(&t, 2, 20);
  AddGemm(&t, 4, 40);
  absl::StatusOr<ValidationReport> report = ValidateTable(t, H200(), {});
  ASSERT_TRUE(report.ok()) << report.status();
  // Without (2, 20): the line through (log 2, ln 10) and (log 5, ln 40) at log 3 (keys are log(1 + m)):
  // w = ln(3/2) / ln(5/2) = 0.4425; 10 x 4^w = 18.47, an error of 7.6%.
  const double w = std::log(1.5) / std::log(2.5);
  bool found = false;
  for (const PredictedPoint& p : report->loo_points) {
    if (p.measured_ns != 20) continue;
    found = true;
    EXPECT_NEAR(p.predicted_ns, 10 * std::pow(4.0, w), 1e-9);
  }
  EXPECT_TRUE(found);
  ASSERT_EQ(report->leave_one_out.size(), 2u);  // mlp_gemm, all
  EXPECT_EQ(report->leave_one_out[0].kind, "mlp_gemm");
  EXPECT_EQ(report->leave_one_out[0].count, 3);
  EXPECT_EQ(report->leave_one_out[0].extrapolated, 2);  // the two ends
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

TEST(ValidationTest, EmptyTableIsAnError) {
  EXPECT_EQ(ValidateTable(proto::CalibrationTable(), H200(), {}).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace kvsim
