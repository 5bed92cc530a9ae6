#include "sim/select/predictors.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>

#include "Eigen/Dense"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "util/status_macros.h"

#ifdef KVSIM_HAS_XGBOOST
#include <dlfcn.h>

#include "xgboost/c_api.h"
#endif

namespace kvsim {

PredictorData CandidateRows(const OutcomeTable& table, int candidate, const std::vector<int>& prompts) {
  PredictorData data;
  data.num_features = static_cast<int>(table.feature_names.size());
  data.prompts = prompts;
  for (int p : prompts) {
    const Outcome& o = table.at(p, candidate);
    data.x.insert(data.x.end(), o.features.begin(), o.features.end());
    data.correct.push_back(o.correct ? 1 : 0);
    data.latency_ms.push_back(o.latency_ms);
    data.peak_memory_mb.push_back(o.peak_memory_mb);
  }
  return data;
}

namespace {

// ---- Logistic / ridge baseline ----

class LogisticPredictor final : public OutcomePredictor {
 public:
  absl::Status Fit(const PredictorData& data) override {
    const int n = data.num_rows(), d = data.num_features;
    mean_ = Eigen::VectorXd::Zero(d);
    scale_ = Eigen::VectorXd::Ones(d);
    for (int j = 0; j < d; ++j) {
      double sum = 0, sq = 0;
      for (int i = 0; i < n; ++i) sum += data.x[i * d + j];
      mean_[j] = sum / n;
      for (int i = 0; i < n; ++i) sq += std::pow(data.x[i * d + j] - mean_[j], 2);
      const double sd = std::sqrt(sq / n);
      scale_[j] = sd > 1e-12 ? sd : 1;
    }
    const Eigen::MatrixXd x = Design(data);
    Eigen::MatrixXd penalty = Eigen::MatrixXd::Identity(d + 1, d + 1) * kLambda;
    penalty(0, 0) = 0;
    // Logistic regression by Newton's method.
    Eigen::VectorXd y(n);
    for (int i = 0; i < n; ++i) y[i] = data.correct[i];
    w_ = Eigen::VectorXd::Zero(d + 1);
    for (int iter = 0; iter < 50; ++iter) {
      const Eigen::VectorXd p = Sigmoid(x * w_);
      const Eigen::VectorXd grad = x.transpose() * (p - y) + penalty * w_;
      const Eigen::VectorXd weights = (p.array() * (1 - p.array())).max(1e-9).matrix();
      Eigen::MatrixXd hessian = x.transpose() * weights.asDiagonal() * x + penalty;
      hessian.diagonal().array() += 1e-9;
      const Eigen::VectorXd step = hessian.ldlt().solve(grad);
      w_ -= step;
      if (step.lpNorm<Eigen::Infinity>() < 1e-10) break;
    }
    // Ridge regressions of log(1 + y).
    Eigen::MatrixXd gram = x.transpose() * x + penalty * kRidge / kLambda;
    gram.diagonal().array() += 1e-9;
    const auto solver = gram.ldlt();
    Eigen::VectorXd lat(n), mem(n);
    for (int i = 0; i < n; ++i) {
      lat[i] = std::log1p(data.latency_ms[i]);
      mem[i] = std::log1p(data.peak_memory_mb[i]);
    }
    latency_ = solver.solve(x.transpose() * lat);
    memory_ = solver.solve(x.transpose() * mem);
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<Prediction>> Predict(const PredictorData& data) const override {
    const Eigen::MatrixXd x = Design(data);
    const Eigen::VectorXd p = Sigmoid(x * w_), lat = x * latency_, mem = x * memory_;
    std::vector<Prediction> out(data.num_rows());
    for (int i = 0; i < data.num_rows(); ++i) {
      out[i] = {p[i], std::max(0.0, std::expm1(lat[i])), std::max(0.0, std::expm1(mem[i]))};
    }
    return out;
  }

  std::vector<double> CorrectnessImportance() const override {
    std::vector<double> out;
    for (int j = 1; j < w_.size(); ++j) out.push_back(std::abs(w_[j]));
    return out;
  }

 private:
  static constexpr double kLambda = 1.0;  // logistic L2
  static constexpr double kRidge = 1e-3;  // ridge L2

  static Eigen::VectorXd Sigmoid(const Eigen::VectorXd& z) {
    return z.unaryExpr([](double v) { return 1 / (1 + std::exp(-v)); });
  }
  Eigen::MatrixXd Design(const PredictorData& data) const {
    const int n = data.num_rows(), d = data.num_features;
    Eigen::MatrixXd x(n, d + 1);
    for (int i = 0; i < n; ++i) {
      x(i, 0) = 1;
      for (int j = 0; j < d; ++j) x(i, j + 1) = (data.x[i * d + j] - mean_[j]) / scale_[j];
    }
    return x;
  }

  Eigen::VectorXd mean_, scale_, w_, latency_, memory_;
};

// ---- XGBoost ----

#ifdef KVSIM_HAS_XGBOOST

// XGBoost's C API, loaded from its shared library on first use rather than linked: the library and
// what it pulls in (libdmlc, libgomp: about 7,800 symbol relocations) would otherwise be mapped and
// relocated at the start of every kvsim process (about 1.8 ms), where only `kvsim select` uses it.
// The types come from the header, so a mismatch with it does not compile.
struct XgboostApi {
  decltype(&XGBGetLastError) get_last_error;
  decltype(&XGDMatrixCreateFromMat) dmatrix_create_from_mat;
  decltype(&XGDMatrixSetFloatInfo) dmatrix_set_float_info;
  decltype(&XGDMatrixFree) dmatrix_free;
  decltype(&XGBoosterCreate) booster_create;
  decltype(&XGBoosterSetParam) booster_set_param;
  decltype(&XGBoosterUpdateOneIter) booster_update_one_iter;
  decltype(&XGBoosterPredict) booster_predict;
  decltype(&XGBoosterFeatureScore) booster_feature_score;
  decltype(&XGBoosterFree) booster_free;
};

// The API, or why it could not be loaded. Loaded once per process (thread-safe: a function-local static).
const absl::StatusOr<XgboostApi>& Xgboost() {
  static const absl::StatusOr<XgboostApi>* const api = [] {
    void* library = nullptr;
    std::string tried;
    for (const char* name : {"libxgboost.so.0", "libxgboost.so"}) {
      library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (library != nullptr) break;
      absl::StrAppend(&tried, tried.empty() ? "" : "; ", dlerror());
    }
    if (library == nullptr) {
      return new absl::StatusOr<XgboostApi>(absl::UnavailableError(
          absl::StrCat("cannot load XGBoost (", tried, "): install libxgboost0, or use --predictor=logistic")));
    }
    XgboostApi loaded;
    absl::Status missing = absl::OkStatus();
    auto bind = [&](auto* function, const char* symbol) {
      void* address = dlsym(library, symbol);
      if (address == nullptr && missing.ok()) {
        missing = absl::UnavailableError(absl::StrCat("XGBoost library lacks ", symbol, " (need 1.5 or later)"));
      }
      *function = reinterpret_cast<std::remove_pointer_t<decltype(function)>>(address);
    };
    bind(&loaded.get_last_error, "XGBGetLastError");
    bind(&loaded.dmatrix_create_from_mat, "XGDMatrixCreateFromMat");
    bind(&loaded.dmatrix_set_float_info, "XGDMatrixSetFloatInfo");
    bind(&loaded.dmatrix_free, "XGDMatrixFree");
    bind(&loaded.booster_create, "XGBoosterCreate");
    bind(&loaded.booster_set_param, "XGBoosterSetParam");
    bind(&loaded.booster_update_one_iter, "XGBoosterUpdateOneIter");
    bind(&loaded.booster_predict, "XGBoosterPredict");
    bind(&loaded.booster_feature_score, "XGBoosterFeatureScore");
    bind(&loaded.booster_free, "XGBoosterFree");
    if (!missing.ok()) return new absl::StatusOr<XgboostApi>(missing);
    return new absl::StatusOr<XgboostApi>(loaded);
  }();
  return *api;
}

// REQUIRES: Xgboost().ok() (a predictor exists only then).
const XgboostApi& Xgb() { return *Xgboost(); }

absl::Status XgbCheck(int rc, absl::string_view what) {
  if (rc == 0) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("xgboost ", what, ": ", Xgb().get_last_error()));
}

class DMatrix {
 public:
  ~DMatrix() {
    if (handle_ != nullptr) Xgb().dmatrix_free(handle_);
  }
  absl::Status Create(const PredictorData& data) {
    std::vector<float> x(data.x.begin(), data.x.end());
    return XgbCheck(Xgb().dmatrix_create_from_mat(x.data(), data.num_rows(), data.num_features, NAN, &handle_),
                    "DMatrix");
  }
  DMatrixHandle get() const { return handle_; }

 private:
  DMatrixHandle handle_ = nullptr;
};

double BaseScore(const std::vector<double>& label, absl::string_view objective) {
  double mean = label.empty() ? 0.5 : std::accumulate(label.begin(), label.end(), 0.0) / label.size();
  if (objective == "binary:logistic") mean = std::clamp(mean, 1e-3, 1 - 1e-3);
  return mean;
}

class Booster {
 public:
  ~Booster() {
    if (handle_ != nullptr) Xgb().booster_free(handle_);
  }
  absl::Status Train(const DMatrix& train, const std::vector<double>& label, const char* objective,
                     const XgboostParams& params) {
    std::vector<float> y(label.begin(), label.end());
    KVSIM_RETURN_IF_ERROR(XgbCheck(Xgb().dmatrix_set_float_info(train.get(), "label", y.data(), y.size()), "label"));
    DMatrixHandle dmats[] = {train.get()};
    KVSIM_RETURN_IF_ERROR(XgbCheck(Xgb().booster_create(dmats, 1, &handle_), "create"));
    const std::vector<std::pair<std::string, std::string>> settings = {
        {"objective", objective},
        {"tree_method", "exact"},
        {"nthread", "1"},
        {"seed", absl::StrCat(params.seed)},
        {"max_depth", absl::StrCat(params.max_depth)},
        {"eta", absl::StrCat(params.eta)},
        {"min_child_weight", absl::StrCat(params.min_child_weight)},
        {"lambda", absl::StrCat(params.lambda)},
        {"subsample", "1"},
        {"colsample_bytree", "1"},
        {"verbosity", "0"},
        // Start from the label mean (XGBoost 1.7 starts from 0.5 whatever the labels), so the shrunken
        // rounds fit the variation, not the level.
        {"base_score", absl::StrCat(BaseScore(label, objective))},
    };
    for (const auto& [key, value] : settings) {
      KVSIM_RETURN_IF_ERROR(XgbCheck(Xgb().booster_set_param(handle_, key.c_str(), value.c_str()), key));
    }
    for (int round = 0; round < params.num_rounds; ++round) {
      KVSIM_RETURN_IF_ERROR(XgbCheck(Xgb().booster_update_one_iter(handle_, round, train.get()), "update"));
    }
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<double>> Predict(const DMatrix& data) const {
    bst_ulong length = 0;
    const float* result = nullptr;
    KVSIM_RETURN_IF_ERROR(XgbCheck(Xgb().booster_predict(handle_, data.get(), 0, 0, 0, &length, &result), "predict"));
    return std::vector<double>(result, result + length);
  }
  std::vector<double> TotalGain(int num_features) const {
    std::vector<double> gain(num_features, 0);
    bst_ulong n = 0, dim = 0;
    const char** names = nullptr;
    const bst_ulong* shape = nullptr;
    const float* scores = nullptr;
    if (Xgb().booster_feature_score(handle_, "{\"importance_type\": \"total_gain\"}", &n, &names, &dim, &shape,
                                    &scores) != 0) {
      return gain;
    }
    for (bst_ulong i = 0; i < n; ++i) {
      int index;
      absl::string_view name(names[i]);
      if (!name.empty() && name[0] == 'f' && absl::SimpleAtoi(name.substr(1), &index) && index >= 0 &&
          index < num_features) {
        gain[index] += scores[i];
      }
    }
    return gain;
  }

 private:
  BoosterHandle handle_ = nullptr;
};

class XgboostPredictor final : public OutcomePredictor {
 public:
  explicit XgboostPredictor(const XgboostParams& params) : params_(params) {}

  absl::Status Fit(const PredictorData& data) override {
    num_features_ = data.num_features;
    DMatrix train;
    KVSIM_RETURN_IF_ERROR(train.Create(data));
    std::vector<double> lat, mem;
    for (double v : data.latency_ms) lat.push_back(std::log1p(v));
    for (double v : data.peak_memory_mb) mem.push_back(std::log1p(v));
    KVSIM_RETURN_IF_ERROR(correct_.Train(train, data.correct, "binary:logistic", params_));
    KVSIM_RETURN_IF_ERROR(latency_.Train(train, lat, "reg:squarederror", params_));
    return memory_.Train(train, mem, "reg:squarederror", params_);
  }

  absl::StatusOr<std::vector<Prediction>> Predict(const PredictorData& data) const override {
    DMatrix test;
    KVSIM_RETURN_IF_ERROR(test.Create(data));
    KVSIM_ASSIGN_OR_RETURN(std::vector<double> p, correct_.Predict(test));
    KVSIM_ASSIGN_OR_RETURN(std::vector<double> lat, latency_.Predict(test));
    KVSIM_ASSIGN_OR_RETURN(std::vector<double> mem, memory_.Predict(test));
    std::vector<Prediction> out(data.num_rows());
    for (int i = 0; i < data.num_rows(); ++i) {
      out[i] = {p[i], std::max(0.0, std::expm1(lat[i])), std::max(0.0, std::expm1(mem[i]))};
    }
    return out;
  }

  std::vector<double> CorrectnessImportance() const override { return correct_.TotalGain(num_features_); }

 private:
  XgboostParams params_;
  int num_features_ = 0;
  Booster correct_, latency_, memory_;
};

#endif  // KVSIM_HAS_XGBOOST

}  // namespace

bool XgboostAvailable() {
#ifdef KVSIM_HAS_XGBOOST
  return Xgboost().ok();
#else
  return false;
#endif
}

absl::StatusOr<PredictorKind> ParsePredictorKind(absl::string_view name) {
  if (name == "xgboost") return PredictorKind::kXgboost;
  if (name == "logistic") return PredictorKind::kLogistic;
  return absl::InvalidArgumentError(absl::StrCat("unknown predictor '", name, "' (known: xgboost, logistic)"));
}

const char* PredictorKindName(PredictorKind kind) { return kind == PredictorKind::kXgboost ? "xgboost" : "logistic"; }

absl::StatusOr<PredictorFactory> MakePredictorFactory(PredictorKind kind, const XgboostParams& params) {
  if (kind == PredictorKind::kLogistic) {
    return PredictorFactory(
        []() -> absl::StatusOr<std::unique_ptr<OutcomePredictor>> { return std::make_unique<LogisticPredictor>(); });
  }
#ifdef KVSIM_HAS_XGBOOST
  if (!Xgboost().ok()) return Xgboost().status();
  return PredictorFactory([params]() -> absl::StatusOr<std::unique_ptr<OutcomePredictor>> {
    return std::make_unique<XgboostPredictor>(params);
  });
#else
  (void)params;
  return absl::UnavailableError(
      "this kvsim was built without XGBoost (install libxgboost-dev and rebuild); use --predictor=logistic");
#endif
}

std::vector<int> PromptFolds(int num_prompts, int folds, uint64_t seed) {
  std::vector<int> order(num_prompts);
  std::iota(order.begin(), order.end(), 0);
  // Fisher-Yates with a seeded mt19937_64 (no std:: distribution, so it does not depend on the library).
  std::mt19937_64 rng(seed);
  for (int i = num_prompts - 1; i > 0; --i) {
    const int j = static_cast<int>(rng() % static_cast<uint64_t>(i + 1));
    std::swap(order[i], order[j]);
  }
  std::vector<int> fold(num_prompts);
  for (int i = 0; i < num_prompts; ++i) fold[order[i]] = i % folds;
  return fold;
}

absl::StatusOr<CrossValidation> CrossValidate(const OutcomeTable& table, int folds, uint64_t seed,
                                              const PredictorFactory& factory) {
  const int n = table.num_prompts(), num_candidates = table.num_candidates();
  if (folds < 2 || folds > n) {
    return absl::InvalidArgumentError(
        absl::StrCat("cross-validation folds=", folds, ": must be in [2, number of prompts = ", n, "]"));
  }
  CrossValidation cv;
  cv.fold_of_prompt = PromptFolds(n, folds, seed);
  cv.predictions.resize(table.cells.size());
  std::vector<double> importance(table.feature_names.size(), 0);
  for (int f = 0; f < folds; ++f) {
    std::vector<int> train, test;
    for (int p = 0; p < n; ++p) (cv.fold_of_prompt[p] == f ? test : train).push_back(p);
    for (int c = 0; c < num_candidates; ++c) {
      KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<OutcomePredictor> predictor, factory());
      KVSIM_RETURN_IF_ERROR(predictor->Fit(CandidateRows(table, c, train)));
      KVSIM_ASSIGN_OR_RETURN(std::vector<Prediction> predicted, predictor->Predict(CandidateRows(table, c, test)));
      for (size_t i = 0; i < test.size(); ++i) {
        cv.predictions[static_cast<size_t>(test[i]) * num_candidates + c] = predicted[i];
      }
      const std::vector<double> gains = predictor->CorrectnessImportance();
      for (size_t j = 0; j < gains.size() && j < importance.size(); ++j) importance[j] += gains[j];
    }
  }
  const double total = std::accumulate(importance.begin(), importance.end(), 0.0);
  if (total > 0) {
    for (double& v : importance) v /= total;
    cv.feature_importance = importance;
  }
  return cv;
}

Calibration CalibrationReport(const OutcomeTable& table, const std::vector<Prediction>& predictions, int num_bins) {
  Calibration cal;
  cal.bins.resize(num_bins);
  for (int b = 0; b < num_bins; ++b) {
    cal.bins[b].lower = static_cast<double>(b) / num_bins;
    cal.bins[b].upper = static_cast<double>(b + 1) / num_bins;
  }
  double positives = 0, lat_err = 0, mem_err = 0;
  int64_t lat_rows = 0, mem_rows = 0;
  for (size_t i = 0; i < table.cells.size(); ++i) {
    const Outcome& o = table.cells[i];
    const Prediction& p = predictions[i];
    const double y = o.correct ? 1 : 0;
    positives += y;
    cal.brier += (p.p_correct - y) * (p.p_correct - y);
    const int b = std::clamp(static_cast<int>(p.p_correct * num_bins), 0, num_bins - 1);
    cal.bins[b].count += 1;
    cal.bins[b].mean_predicted += p.p_correct;
    cal.bins[b].observed_rate += y;
    if (o.latency_ms > 0) {
      lat_err += std::abs(p.latency_ms - o.latency_ms) / o.latency_ms;
      ++lat_rows;
    }
    if (o.peak_memory_mb > 0) {
      mem_err += std::abs(p.peak_memory_mb - o.peak_memory_mb) / o.peak_memory_mb;
      ++mem_rows;
    }
  }
  cal.rows = static_cast<int64_t>(table.cells.size());
  if (cal.rows == 0) return cal;
  for (ReliabilityBin& bin : cal.bins) {
    if (bin.count > 0) {
      bin.mean_predicted /= bin.count;
      bin.observed_rate /= bin.count;
    }
  }
  cal.brier /= cal.rows;
  const double rate = positives / cal.rows;
  cal.brier_no_skill = rate * (1 - rate);
  cal.latency_mape = lat_rows > 0 ? lat_err / lat_rows : 0;
  cal.memory_mape = mem_rows > 0 ? mem_err / mem_rows : 0;
  return cal;
}

}  // namespace kvsim
