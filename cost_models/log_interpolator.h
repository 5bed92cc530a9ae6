// File: cost_models/log_interpolator.h
//
// LogGridInterpolator: interpolation of log(value) over log(1 + feature) on a ragged tensor grid by
// monotone piecewise-cubic Hermite curves (Fritsch-Carlson slopes, as PCHIP), with a caller-supplied
// prior outside the measured range.
//
// The points need not form a full grid: they are organised as a tree, one level per feature (e.g. batch,
// then context). A query brackets its first feature between two measured values, interpolates the next
// feature within each of those, and so on; then blends them along the first feature by the cubic through
// the neighbouring values (whose slopes are limited so that it never overshoots). So:
//   - a query at a measured point returns that point's value exactly (duplicates: geometric mean);
//   - between points the result is monotone wherever the data is monotone along that feature;
//   - a feature outside its measured range is clamped to the nearest measured value and the result is
//     scaled by prior(query) / prior(clamped query): the prior's shape, anchored at the data. Such a
//     result is flagged `extrapolated`.
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

  // REQUIRES: features.size() == num_features().
  Result Predict(const std::vector<double>& features, const Prior& prior) const;

  int num_features() const { return num_features_; }
  size_t num_points() const { return num_points_; }

 private:
  struct Node {
    std::vector<double> raw;       // measured values of this level's feature, ascending
    std::vector<double> keys;      // log1p(raw)
    std::vector<Node> children;    // one per key (inner levels)
    std::vector<double> log_values;  // one per key (last level): mean log value
    std::vector<int> counts;         // samples behind each log value (while building)
  };
  static void Insert(Node* node, const std::vector<double>& features, int level, double log_value,
                     int num_features);
  static void Finish(Node* node);
  double PredictAt(const Node& node, int level, std::vector<double>* features, const Prior& prior,
                   bool* extrapolated) const;

  int num_features_ = 0;
  size_t num_points_ = 0;
  Node root_;
};

}  // namespace kvsim

#endif  // KVSIM_COST_MODELS_LOG_INTERPOLATOR_H_
