#include "sim/select/select_report.h"

#include <string>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

OutcomeTable Table() {
  OutcomeTable t;
  t.candidates = {"a", "b,c"};
  t.feature_names = {"input_tokens", "output_tokens"};
  t.prompt_ids = {"p0", "p1"};
  t.cells = {{true, 10, 100, {1, 1}}, {true, 5, 50, {1, 1}}, {false, 10, 100, {1, 1}}, {true, 5, 50, {1, 1}}};
  return t;
}

TEST(SelectReportTest, GridCsvHasOneRowPerBudgetAndLeavesInfeasibleCsrEmpty) {
  const OutcomeTable t = Table();
  const CsrSurface s = EvaluateGrid(t, PerfectPredictions(t), {1, 10}, {100});
  const std::string csv = CsrGridCsv(t, s);
  EXPECT_EQ(csv,
            "latency_ms,memory_mb,feasible,infeasible_prompts,selector_csr,best_static_csr,best_static_config,"
            "oracle_csr,gain_over_best_static,fallbacks\n"
            "1,100,0,2,,,,,,2\n"
            "10,100,1,0,1,1,\"b,c\",1,0,0\n");
  const std::string svg = CsrGridSvg(t, s, "title <x>");
  EXPECT_NE(svg.find("title &lt;x&gt;"), std::string::npos);
  EXPECT_NE(svg.find("&#215;"), std::string::npos);  // the infeasible cell's cross
  EXPECT_NE(svg.find("best static CSR"), std::string::npos);
  EXPECT_NE(svg.find("oracle CSR"), std::string::npos);
  EXPECT_NE(FormatCsrSurface(t, s).find("1 infeasible"), std::string::npos);
}

TEST(SelectReportTest, SelectionsAndCalibrationCsv) {
  const OutcomeTable t = Table();
  const CsrPoint point = EvaluateBudget(t, PerfectPredictions(t), {10, 100});
  EXPECT_EQ(SelectionsCsv(t, PerfectPredictions(t), point),
            "prompt_id,config,fallback,predicted_p_correct,predicted_latency_ms,predicted_peak_memory_mb,correct,"
            "latency_ms,peak_memory_mb,success\n"
            "p0,\"b,c\",0,1,5,50,1,5,50,1\n"
            "p1,\"b,c\",0,1,5,50,1,5,50,1\n");
  Calibration cal;
  cal.bins = {{0, 0.5, 2, 0.25, 0.5}, {0.5, 1, 0, 0, 0}};
  EXPECT_EQ(CalibrationCsv(cal), "lower,upper,count,mean_predicted,observed_rate\n0,0.5,2,0.25,0.5\n0.5,1,0,,\n");
  EXPECT_EQ(FeatureImportanceCsv(t, {0.75, 0.25}), "feature,importance\ninput_tokens,0.75\noutput_tokens,0.25\n");
}

}  // namespace
}  // namespace kvsim
