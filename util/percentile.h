// File: util/percentile.h
//
// The one percentile rule of kvsim's reports: nearest rank. The q-quantile of n sorted values is the
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

// REQUIRES: `sorted` is non-empty and sorted ascending.
template <typename T>
T NearestRank(const std::vector<T>& sorted, double fraction) {
  KVSIM_CHECK(!sorted.empty()) << "percentile of no values";
  const double rank = std::ceil(fraction * static_cast<double>(sorted.size()));
  const size_t index = rank < 1 ? 0 : std::min(sorted.size(), static_cast<size_t>(rank)) - 1;
  return sorted[index];
}

}  // namespace kvsim

#endif  // KVSIM_UTIL_PERCENTILE_H_
