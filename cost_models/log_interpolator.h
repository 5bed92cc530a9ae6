// File: cost_models/log_interpolator.h
//
// LogGridInterpolator: interpolation of log(value) in log space over the features on a ragged tensor grid by
// monotone piecewise-cubic Hermite curves (Fritsch-Carlson slopes, as PCHIP), with a caller-supplied
// prior outside the measured range.
//
// Abscissae: along each feature, the log of a caller-supplied `scale` function at the measured values
// (the query's other features held) when it grows strictly along that feature in the bracket, else
// log(1 + feature). With a smooth roofline as the scale this absorbs the shape the roofline knows
// (memory/compute crossover, quadratic attention), so the cubic only follows the smooth ratio of the data
// to it; the scale must be monotone along each feature (no wave quantisation) for monotone data to give
// monotone results.
//
// The points need not form a full grid: they are organised as a tree, one level per feature (e.g. batch,
// then context). A query brackets its first feature between two measured values, interpolates the next
// feature within each of those, and so on; then blends them along the first feature by the cubic through
// the neighbouring values (whose slopes are limited so that it never overshoots). So:
//   - a query at a measured point returns that point's value exactly (duplicates: geometric mean);
//   - between points the result is monotone wherever the data is monotone along that feature;
//   - a feature outside its measured range follows the prior, anchored at the data: through the two
//     outermost measured values t1, t2 (priors p1, p2) the line t = a + b x prior is fitted and
//     evaluated at the query's prior (a >= 0 is a fixed cost such as a kernel launch, b > 0 how far the
//     kernel is from the prior's rates); when that fit is not sensible (one value, b <= 0 or a < 0),
//     t1 x prior(query) / p1. Such a result is flagged `extrapolated`.
// Immutable after Build; thread-safe.
//
// Example:
//   LogGridInterpolator interp = *LogGridInterpolator::Build({{{1, 100}, 5.0}, {{2, 100}, 9.0}}, 2);
//   LogGridInterpolator::Result r = interp.Predict({1.5, 100}, prior);
#ifndef KVSIM_COST_MODELS_LOG_INTERPOLATOR_H_
#define KVSIM_COST_MODELS_LOG_INTERPOLATOR_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"

namespace kvsim {

class LogGridInterpolator {
 public:
  struct Point {
    std::vector<double> features;  // each >= 0
    double value = 0;              // > 0
  };
  struct Result {
    double value = 0;
    bool extrapolated = false;
  };
  // Positive prior of a feature vector (e.g. the roofline time of the kernel that shape describes).
  using Prior = std::function<double(const std::vector<double>& features)>;

  // InvalidArgument for no points, a point with the wrong number of features, a negative feature or a
  // non-positive value.
  static absl::StatusOr<LogGridInterpolator> Build(const std::vector<Point>& points, int num_features);

  // REQUIRES: features.size() == num_features(). `scale` may be empty (abscissae log(1 + feature)).
  Result Predict(const std::vector<double>& features, const Prior& prior, const Prior& scale = nullptr) const;

  int num_features() const { return num_features_; }
  size_t num_points() const { return num_points_; }

 private:
  struct Node {
    std::vector<double> raw;         // measured values of this level's feature, ascending
    std::vector<double> keys;        // log1p(raw)
    std::vector<Node> children;      // one per key (inner levels)
    std::vector<double> log_values;  // one per key (last level): mean log value
    std::vector<int> counts;         // samples behind each log value (while building)
  };
  static void Insert(Node* node, const std::vector<double>& features, int level, double log_value, int num_features);
  static void Finish(Node* node);
  // The logs of the scale at the feature vectors one Predict() has evaluated it at: the levels below
  // the first evaluate it at the same measured values for each bracketing neighbour, so most calls
  // repeat. Flat storage, searched linearly (a few dozen entries at most).
  struct ScaleMemo {
    std::vector<double> features;  // num_features per entry
    std::vector<double> logs;
    // log(scale(at)), computed at most once per Predict().
    double LogAt(const std::vector<double>& at, const Prior& scale);
  };
  double PredictAt(const Node& node, int level, std::vector<double>* features, const Prior& prior, const Prior& scale,
                   ScaleMemo* memo, bool* extrapolated) const;

  int num_features_ = 0;
  size_t num_points_ = 0;
  Node root_;
};

}  // namespace kvsim

#endif  // KVSIM_COST_MODELS_LOG_INTERPOLATOR_H_
