// File: sim/select/predictors.h
//
// Predictors of one candidate configuration's outcome on a prompt from the prompt's features: P(correct),
// latency_ms and peak_memory_mb, and their cross-validation by prompt.
//
// Kinds (PredictorKind):
//   kXgboost   gradient-boosted trees (XGBoost's C API, libxgboost-dev): binary:logistic for P(correct),
//              reg:squarederror on log(1 + y) for latency and memory; exact tree method, one thread,
//              fixed seed, base score the label mean, no row or column sampling, so a fit is
//              deterministic. Unavailable where the build has no XGBoost or its library cannot be loaded
//              at run time (XgboostAvailable(); it is loaded on first use, not linked).
//   kLogistic  the baseline: L2-regularised logistic regression (Newton's method on standardised
//              features) for P(correct); ridge regression of log(1 + y) on the same features for latency
//              and memory.
// One predictor per candidate, trained on that candidate's rows only.
//
// Cross-validation (CrossValidate): prompts, not rows, are split into folds (PromptFolds: a seeded shuffle
// of the prompt indices dealt round-robin), so no prompt is in both the training and the test rows of a
// fold; every prompt is predicted exactly once, by the fold that held it out.
//
// Calibration (CalibrationReport): reliability bins of the held-out P(correct) (10 equal-width bins over
// [0, 1]: count, mean prediction, observed rate), the Brier score, and the Brier score of predicting the
// overall correct rate for every row (the no-skill reference).
//
// Thread-compatible; Fit and Predict of one predictor must not run concurrently.
#ifndef KVSIM_SIM_SELECT_PREDICTORS_H_
#define KVSIM_SIM_SELECT_PREDICTORS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/select/outcome_table.h"

namespace kvsim {

// Rows of one candidate: features (row-major, num_features per row) and targets.
struct PredictorData {
  std::vector<int> prompts;  // the table's prompt index of each row
  int num_features = 0;
  std::vector<double> x;
  std::vector<double> correct;  // 0 or 1
  std::vector<double> latency_ms;
  std::vector<double> peak_memory_mb;
  int num_rows() const { return static_cast<int>(prompts.size()); }
};

// The rows of `candidate` for `prompts` of `table`.
PredictorData CandidateRows(const OutcomeTable& table, int candidate, const std::vector<int>& prompts);

struct Prediction {
  double p_correct = 0;
  double latency_ms = 0;
  double peak_memory_mb = 0;
};

class OutcomePredictor {
 public:
  virtual ~OutcomePredictor() = default;
  // REQUIRES: data.num_rows() >= 1. Errors from the library, as InvalidArgument/Internal.
  virtual absl::Status Fit(const PredictorData& data) = 0;
  // One prediction per row of `data` (same num_features). REQUIRES: Fit succeeded.
  virtual absl::StatusOr<std::vector<Prediction>> Predict(const PredictorData& data) const = 0;
  // Importance of each feature for P(correct) (XGBoost: total gain; logistic: |coefficient| on the
  // standardised feature); empty if the model has none.
  virtual std::vector<double> CorrectnessImportance() const { return {}; }
};

enum class PredictorKind { kXgboost, kLogistic };

// Defaults for small tables (hundreds of prompts per configuration): shallow trees, a small learning rate
// and leaves of at least 5 rows, against overfitting.
struct XgboostParams {
  int num_rounds = 100;
  int max_depth = 3;
  double eta = 0.05;
  double min_child_weight = 5;
  double lambda = 5;
  uint64_t seed = 0;
};

bool XgboostAvailable();
// "xgboost" or "logistic" -> kind; InvalidArgument otherwise.
absl::StatusOr<PredictorKind> ParsePredictorKind(absl::string_view name);
const char* PredictorKindName(PredictorKind kind);

using PredictorFactory = std::function<absl::StatusOr<std::unique_ptr<OutcomePredictor>>()>;
// Unavailable for kXgboost in a build without XGBoost.
absl::StatusOr<PredictorFactory> MakePredictorFactory(PredictorKind kind, const XgboostParams& params = {});

// Fold of each prompt (0 .. folds - 1). REQUIRES: 2 <= folds <= num_prompts.
std::vector<int> PromptFolds(int num_prompts, int folds, uint64_t seed);

struct CrossValidation {
  std::vector<Prediction> predictions;  // prompt-major like OutcomeTable::cells, each from its held-out fold
  std::vector<int> fold_of_prompt;
  // Mean over folds and candidates of CorrectnessImportance(), normalised to sum 1 (empty if none).
  std::vector<double> feature_importance;
};

// InvalidArgument when folds < 2 or folds > the number of prompts.
absl::StatusOr<CrossValidation> CrossValidate(const OutcomeTable& table, int folds, uint64_t seed,
                                              const PredictorFactory& factory);

struct ReliabilityBin {
  double lower = 0, upper = 0;
  int64_t count = 0;
  double mean_predicted = 0;
  double observed_rate = 0;
};

struct Calibration {
  std::vector<ReliabilityBin> bins;
  double brier = 0;
  double brier_no_skill = 0;  // predicting the overall rate
  double latency_mape = 0;    // mean |predicted - actual| / actual over rows with actual > 0
  double memory_mape = 0;
  int64_t rows = 0;
};

// REQUIRES: predictions.size() == table.cells.size().
Calibration CalibrationReport(const OutcomeTable& table, const std::vector<Prediction>& predictions, int num_bins = 10);

}  // namespace kvsim

#endif  // KVSIM_SIM_SELECT_PREDICTORS_H_
