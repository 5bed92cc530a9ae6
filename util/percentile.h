// File: util/percentile.h
//
// kvsim's two percentile rules. LinearPercentile is numpy's default (np.percentile, method "linear"),
// for the vLLM-style serving metrics (sim/serving/vllm_metrics.h) that users compare with vLLM's
// benchmark_serving: the value at fractional rank q (n - 1), interpolated between its neighbours; p50 of
// {1, 2, 3, 4} is 2.5, p90 is 3.7. Every other report uses nearest rank: The q-quantile of n sorted values is the
// ceil(q n)-th smallest (the smallest for q n <= 1, the largest for q >= 1): a value that occurred, with at
// least a fraction q of the values at or below it. p50 of {1, 2, 3, 4} is 2, p90 is 4.
//
// Example:
//   std::sort(latencies.begin(), latencies.end());
//   double p99 = NearestRank(latencies, 0.99);
#ifndef KVSIM_UTIL_PERCENTILE_H_
#define KVSIM_UTIL_PERCENTILE_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "util/check.h"

namespace kvsim {

// The 0-based index of the nearest-rank `fraction` quantile among `n` sorted values (for readers that see
// the values as a stream, not a vector). REQUIRES: n >= 1.
inline size_t NearestRankIndex(size_t n, double fraction) {
  KVSIM_CHECK(n >= 1) << "percentile of no values";
  const double rank = std::ceil(fraction * static_cast<double>(n));
  return rank < 1 ? 0 : std::min(n, static_cast<size_t>(rank)) - 1;
}

// REQUIRES: `sorted` is non-empty and sorted ascending.
template <typename T>
T NearestRank(const std::vector<T>& sorted, double fraction) {
  KVSIM_CHECK(!sorted.empty()) << "percentile of no values";
  return sorted[NearestRankIndex(sorted.size(), fraction)];
}

// Where numpy's linear `fraction` quantile of `n` sorted values lies: between the 0-based indices lo and
// hi, at `weight` of the way (for readers that see the values as a stream). REQUIRES: n >= 1,
// 0 <= fraction <= 1.
struct LinearRank {
  size_t lo = 0, hi = 0;
  double weight = 0;
  // The quantile, given the values at lo and hi.
  double Interpolate(double lo_value, double hi_value) const { return lo_value + (hi_value - lo_value) * weight; }
};
inline LinearRank LinearPercentileRank(size_t n, double fraction) {
  KVSIM_CHECK(n >= 1) << "percentile of no values";
  KVSIM_CHECK(fraction >= 0 && fraction <= 1) << "percentile fraction " << fraction;
  const double rank = fraction * static_cast<double>(n - 1);
  LinearRank r;
  r.lo = static_cast<size_t>(std::floor(rank));
  r.hi = std::min(r.lo + 1, n - 1);
  r.weight = rank - static_cast<double>(r.lo);
  return r;
}

// numpy.percentile(sorted, 100 * fraction) with its default linear interpolation.
// REQUIRES: `sorted` is non-empty and sorted ascending; 0 <= fraction <= 1.
inline double LinearPercentile(const std::vector<double>& sorted, double fraction) {
  const LinearRank r = LinearPercentileRank(sorted.size(), fraction);
  return r.Interpolate(sorted[r.lo], sorted[r.hi]);
}

}  // namespace kvsim

#endif  // KVSIM_UTIL_PERCENTILE_H_
