#include "sim/select/predictors.h"

#include <set>
#include <string>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

// A table of one feature x per prompt (plus the two token columns), `candidates` candidates.
OutcomeTable Table(int prompts, int candidates, const std::function<Outcome(int prompt, int candidate)>& fill) {
  OutcomeTable table;
  for (int c = 0; c < candidates; ++c) table.candidates.push_back("c" + std::to_string(c));
  table.feature_names = {"input_tokens", "output_tokens", "x"};
  for (int p = 0; p < prompts; ++p) {
    table.prompt_ids.push_back("p" + std::to_string(p));
    for (int c = 0; c < candidates; ++c) table.cells.push_back(fill(p, c));
  }
  return table;
}

TEST(PromptFoldsTest, EveryPromptInOneFoldBalancedAndSeeded) {
  const std::vector<int> folds = PromptFolds(103, 5, 7);
  std::vector<int> sizes(5, 0);
  for (int f : folds) {
    ASSERT_GE(f, 0);
    ASSERT_LT(f, 5);
    ++sizes[f];
  }
  for (int s : sizes) EXPECT_TRUE(s == 20 || s == 21) << s;
  EXPECT_EQ(folds, PromptFolds(103, 5, 7));
  EXPECT_NE(folds, PromptFolds(103, 5, 8));
}

// Records the prompts each instance was trained on and flags any prediction for one of them.
struct LeakLog {
  int fits = 0;
  int leaks = 0;
  std::vector<int> predicted_count;  // per prompt
};

class RecordingPredictor final : public OutcomePredictor {
 public:
  explicit RecordingPredictor(LeakLog* log) : log_(log) {}
  absl::Status Fit(const PredictorData& data) override {
    ++log_->fits;
    trained_.insert(data.prompts.begin(), data.prompts.end());
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<Prediction>> Predict(const PredictorData& data) const override {
    for (int p : data.prompts) {
      if (trained_.count(p)) ++log_->leaks;
      ++log_->predicted_count[p];
    }
    return std::vector<Prediction>(data.num_rows(), Prediction{0.5, 1, 1});
  }

 private:
  LeakLog* log_;
  std::set<int> trained_;
};

TEST(CrossValidateTest, NoPromptIsPredictedByAModelThatSawIt) {
  const OutcomeTable table = Table(37, 3, [](int p, int) { return Outcome{p % 2 == 0, 1, 1, {100, 10, 1.0 * p}}; });
  LeakLog log;
  log.predicted_count.assign(37, 0);
  PredictorFactory factory = [&log]() -> absl::StatusOr<std::unique_ptr<OutcomePredictor>> {
    return std::make_unique<RecordingPredictor>(&log);
  };
  absl::StatusOr<CrossValidation> cv = CrossValidate(table, 4, 3, factory);
  ASSERT_TRUE(cv.ok()) << cv.status();
  EXPECT_EQ(log.fits, 4 * 3);
  EXPECT_EQ(log.leaks, 0);
  for (int count : log.predicted_count) EXPECT_EQ(count, 3);  // once per candidate
  EXPECT_FALSE(CrossValidate(table, 1, 3, factory).ok());
  EXPECT_FALSE(CrossValidate(table, 38, 3, factory).ok());
}

// correct = 1[x > 0] with x in [-1, 1]; latency = 10 e^(x) (log-linear: the ridge of log(1 + y) is close).
OutcomeTable Planted(int prompts) {
  return Table(prompts, 2, [prompts](int p, int c) {
    const double x = -1 + 2.0 * p / (prompts - 1);
    return Outcome{(c == 0 ? x > 0 : x > 0.5), 10 * std::exp(x), 100.0 + 50 * c, {100, 10, x}};
  });
}

void ExpectLearnsThePlantedRule(PredictorKind kind) {
  const OutcomeTable table = Planted(200);
  absl::StatusOr<PredictorFactory> factory = MakePredictorFactory(kind);
  ASSERT_TRUE(factory.ok()) << factory.status();
  absl::StatusOr<CrossValidation> cv = CrossValidate(table, 5, 1, *factory);
  ASSERT_TRUE(cv.ok()) << cv.status();
  const Calibration cal = CalibrationReport(table, cv->predictions);
  EXPECT_LT(cal.brier, 0.5 * cal.brier_no_skill) << PredictorKindName(kind);
  EXPECT_LT(cal.latency_mape, 0.1) << PredictorKindName(kind);
  EXPECT_LT(cal.memory_mape, 0.02) << PredictorKindName(kind);
  // Far from the threshold the prediction is confident and right.
  EXPECT_GT(cv->predictions[199 * 2 + 0].p_correct, 0.8);
  EXPECT_LT(cv->predictions[0 * 2 + 0].p_correct, 0.2);
  // Only x carries P(correct).
  ASSERT_EQ(cv->feature_importance.size(), 3);
  EXPECT_GT(cv->feature_importance[2], 0.99);
  // Deterministic: a second run gives the same predictions bit for bit.
  absl::StatusOr<CrossValidation> again = CrossValidate(table, 5, 1, *factory);
  ASSERT_TRUE(again.ok());
  for (size_t i = 0; i < cv->predictions.size(); ++i) {
    EXPECT_EQ(cv->predictions[i].p_correct, again->predictions[i].p_correct);
    EXPECT_EQ(cv->predictions[i].latency_ms, again->predictions[i].latency_ms);
  }
}

TEST(PredictorsTest, LogisticBaselineLearnsThePlantedRule) { ExpectLearnsThePlantedRule(PredictorKind::kLogistic); }

TEST(PredictorsTest, XgboostLearnsThePlantedRule) {
  if (!XgboostAvailable()) {
    EXPECT_FALSE(MakePredictorFactory(PredictorKind::kXgboost).ok());
    GTEST_SKIP() << "built without XGBoost (libxgboost-dev)";
  }
  ExpectLearnsThePlantedRule(PredictorKind::kXgboost);
}

TEST(PredictorsTest, KindNames) {
  EXPECT_EQ(*ParsePredictorKind("xgboost"), PredictorKind::kXgboost);
  EXPECT_EQ(*ParsePredictorKind("logistic"), PredictorKind::kLogistic);
  EXPECT_FALSE(ParsePredictorKind("forest").ok());
}

TEST(CalibrationTest, BrierAndBinsByHand) {
  const std::vector<bool> correct = {false, true, true, false};
  const OutcomeTable table = Table(4, 1, [&](int p, int) { return Outcome{correct[p], 10, 100, {1, 1, 0}}; });
  const std::vector<Prediction> predictions = {{0.05, 10, 100}, {0.15, 20, 100}, {0.95, 10, 50}, {0.95, 10, 100}};
  const Calibration cal = CalibrationReport(table, predictions);
  // ((0.05)^2 + (0.85)^2 + (0.05)^2 + (0.95)^2) / 4
  EXPECT_NEAR(cal.brier, (0.0025 + 0.7225 + 0.0025 + 0.9025) / 4, 1e-12);
  EXPECT_NEAR(cal.brier_no_skill, 0.25, 1e-12);
  EXPECT_EQ(cal.bins[0].count, 1);
  EXPECT_EQ(cal.bins[1].count, 1);
  EXPECT_EQ(cal.bins[1].observed_rate, 1);
  EXPECT_EQ(cal.bins[9].count, 2);
  EXPECT_NEAR(cal.bins[9].mean_predicted, 0.95, 1e-12);
  EXPECT_EQ(cal.bins[9].observed_rate, 0.5);
  EXPECT_NEAR(cal.latency_mape, 0.25, 1e-12);  // one of four is off by 100%
  EXPECT_NEAR(cal.memory_mape, 0.125, 1e-12);  // one of four is off by 50%
}

}  // namespace
}  // namespace kvsim
