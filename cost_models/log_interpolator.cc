#include "cost_models/log_interpolator.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"

namespace kvsim {

absl::StatusOr<LogGridInterpolator> LogGridInterpolator::Build(const std::vector<Point>& points, int num_features) {
  if (points.empty()) return absl::InvalidArgumentError("interpolator: no points");
  if (num_features < 1) return absl::InvalidArgumentError("interpolator: needs at least one feature");
  LogGridInterpolator interp;
  interp.num_features_ = num_features;
  interp.num_points_ = points.size();
  for (size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    if (static_cast<int>(p.features.size()) != num_features) {
      return absl::InvalidArgumentError(
          absl::StrCat("interpolator: point ", i, " has ", p.features.size(), " features, expected ", num_features));
    }
    for (double f : p.features) {
      if (!(f >= 0) || !std::isfinite(f)) {
        return absl::InvalidArgumentError(absl::StrCat("interpolator: point ", i, " has feature ", f));
      }
    }
    if (!(p.value > 0) || !std::isfinite(p.value)) {
      return absl::InvalidArgumentError(absl::StrCat("interpolator: point ", i, " has value ", p.value));
    }
  }
  // Inserting in sorted order appends to each level's vectors: O(n log n) in all.
  std::vector<const Point*> sorted;
  sorted.reserve(points.size());
  for (const Point& p : points) sorted.push_back(&p);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Point* a, const Point* b) { return a->features < b->features; });
  // Sum of log values and count per node leaf, so duplicates average geometrically.
  for (const Point* p : sorted) Insert(&interp.root_, p->features, 0, std::log(p->value), num_features);
  Finish(&interp.root_);
  return interp;
}

void LogGridInterpolator::Insert(Node* node, const std::vector<double>& features, int level, double log_value,
                                 int num_features) {
  const double x = features[level];
  auto it = std::lower_bound(node->raw.begin(), node->raw.end(), x);
  const size_t index = it - node->raw.begin();
  const bool last = level + 1 == num_features;
  if (it == node->raw.end() || *it != x) {
    node->raw.insert(it, x);
    node->keys.insert(node->keys.begin() + index, std::log1p(x));
    if (last) {  // log_values holds sums until Finish divides them by the counts
      node->log_values.insert(node->log_values.begin() + index, 0.0);
      node->counts.insert(node->counts.begin() + index, 0);
    } else {
      node->children.insert(node->children.begin() + index, Node());
    }
  }
  if (last) {
    node->log_values[index] += log_value;
    ++node->counts[index];
  } else {
    Insert(&node->children[index], features, level + 1, log_value, num_features);
  }
}

void LogGridInterpolator::Finish(Node* node) {
  if (!node->log_values.empty()) {
    for (size_t i = 0; i < node->log_values.size(); ++i) {
      node->log_values[i] /= node->counts[i];
    }
    node->counts.clear();
    return;
  }
  for (Node& child : node->children) Finish(&child);
}

double LogGridInterpolator::ScaleMemo::LogAt(const std::vector<double>& at, const Prior& scale) {
  const size_t n = at.size();
  for (size_t e = 0; e < logs.size(); ++e) {
    if (std::equal(at.begin(), at.end(), features.begin() + e * n)) return logs[e];
  }
  features.insert(features.end(), at.begin(), at.end());
  logs.push_back(std::log(scale(at)));
  return logs.back();
}

double LogGridInterpolator::PredictAt(const Node& node, int level, std::vector<double>* features, const Prior& prior,
                                      const Prior& scale, ScaleMemo* memo, bool* extrapolated) const {
  const bool last = level + 1 == num_features_;
  auto value_at = [&](size_t i) {
    return last ? node.log_values[i]
                : PredictAt(node.children[i], level + 1, features, prior, scale, memo, extrapolated);
  };
  const double x = (*features)[level];
  if (x < node.raw.front() || x > node.raw.back()) {
    *extrapolated = true;
    const bool below = x < node.raw.front();
    const size_t edge = below ? 0 : node.raw.size() - 1;
    const double prior_query = prior(*features);
    auto at = [&](size_t i, double* prior_i) {  // value and prior with this feature at raw[i]
      (*features)[level] = node.raw[i];
      *prior_i = prior(*features);
      const double v = std::exp(value_at(i));
      (*features)[level] = x;
      return v;
    };
    double prior_edge = 0;
    const double t_edge = at(edge, &prior_edge);
    if (node.raw.size() >= 2) {
      // Affine in the prior through the two outermost points: t = a + b x prior (a: fixed cost such
      // as a launch; b: how far the kernel is from the prior's rates).
      double prior_next = 0;
      const double t_next = at(below ? 1 : edge - 1, &prior_next);
      const double b = (t_edge - t_next) / (prior_edge - prior_next);
      const double a = t_edge - b * prior_edge;
      const double t = a + b * prior_query;
      if (std::isfinite(b) && b > 0 && a >= 0 && t > 0) return std::log(t);
    }
    return std::log(t_edge * prior_query / prior_edge);  // proportional to the prior
  }
  auto it = std::lower_bound(node.raw.begin(), node.raw.end(), x);
  const size_t hi = it - node.raw.begin();
  if (node.raw[hi] == x) return value_at(hi);
  const size_t lo = hi - 1;
  // Monotone cubic Hermite (Fritsch-Carlson, as in PCHIP) on the keys around [lo, hi].
  const size_t first = lo > 0 ? lo - 1 : lo;
  const size_t end = std::min(node.raw.size(), hi + 2);
  double v[4];
  for (size_t i = first; i < end; ++i) v[i - first] = value_at(i);
  auto val = [&](size_t i) { return v[i - first]; };
  // Abscissae: log scale at each measured value (the query's other features held), if the scale grows
  // strictly along this feature in the window; else log(1 + feature).
  double k[5];
  double query_key = 0;
  bool use_prior = scale != nullptr;
  for (size_t i = first; i < end && use_prior; ++i) {
    (*features)[level] = node.raw[i];
    k[i - first] = memo->LogAt(*features, scale);  // finite only for a positive, finite scale
    use_prior = std::isfinite(k[i - first]) && (i == first || k[i - first] - k[i - first - 1] > 1e-9);
  }
  (*features)[level] = x;
  if (use_prior) {
    query_key = memo->LogAt(*features, scale);
    use_prior = query_key > k[lo - first] && query_key < k[hi - first];
  }
  if (!use_prior) {
    for (size_t i = first; i < end; ++i) k[i - first] = node.keys[i];
    query_key = std::log1p(x);
  }
  auto h = [&](size_t i) { return k[i + 1 - first] - k[i - first]; };
  auto secant = [&](size_t i) { return (val(i + 1) - val(i)) / h(i); };
  auto slope = [&](size_t j) {
    const bool has_left = j > first, has_right = j + 1 < end;
    if (has_left && has_right) {
      const double d0 = secant(j - 1), d1 = secant(j);
      if (d0 * d1 <= 0) return 0.0;
      const double w1 = 2 * h(j) + h(j - 1), w2 = h(j) + 2 * h(j - 1);
      return (w1 + w2) / (w1 / d0 + w2 / d1);
    }
    if (end - first < 3) return has_right ? secant(j) : secant(j - 1);  // two points: the line
    // Ends of the data: the three-point formula, limited so the curve neither turns nor overshoots.
    const size_t a = has_right ? j : j - 2;  // the three points are a, a + 1, a + 2
    const double h0 = has_right ? h(a) : h(a + 1), h1 = has_right ? h(a + 1) : h(a);
    const double d0 = has_right ? secant(a) : secant(a + 1), d1 = has_right ? secant(a + 1) : secant(a);
    double d = ((2 * h0 + h1) * d0 - h0 * d1) / (h0 + h1);
    if (d * d0 <= 0) {
      d = 0;
    } else if (d0 * d1 <= 0 && std::abs(d) > 3 * std::abs(d0)) {
      d = 3 * d0;
    }
    return d;
  };
  const double t = (query_key - k[lo - first]) / h(lo);
  const double t2 = t * t, t3 = t2 * t;
  return (2 * t3 - 3 * t2 + 1) * val(lo) + (t3 - 2 * t2 + t) * h(lo) * slope(lo) + (-2 * t3 + 3 * t2) * val(hi) +
         (t3 - t2) * h(lo) * slope(hi);
}

LogGridInterpolator::Result LogGridInterpolator::Predict(const std::vector<double>& features, const Prior& prior,
                                                         const Prior& scale) const {
  std::vector<double> f = features;
  thread_local ScaleMemo memo;  // per thread: Predict() stays const and thread-safe; storage is reused
  memo.features.clear();
  memo.logs.clear();
  Result result;
  result.value = std::exp(PredictAt(root_, 0, &f, prior, scale, &memo, &result.extrapolated));
  return result;
}

}  // namespace kvsim
