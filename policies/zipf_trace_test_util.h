// File: policies/zipf_trace_test_util.h
//
// Test helper: a reproducible stream of block ids drawn from a Zipf(alpha) popularity over
// `num_distinct` blocks (ids 1..num_distinct, id 1 the most popular), by inverse transform over the
// cumulative weights with a seeded mt19937_64. testonly.
//
// Example:
//   std::vector<BlockId> accesses = ZipfAccesses(/*num_distinct=*/2000, /*alpha=*/0.9, 20000, /*seed=*/1);
#ifndef KVSIM_POLICIES_ZIPF_TRACE_TEST_UTIL_H_
#define KVSIM_POLICIES_ZIPF_TRACE_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "policies/eviction_policy.h"

namespace kvsim {

inline std::vector<BlockId> ZipfAccesses(int64_t num_distinct, double alpha, int64_t num_accesses, uint64_t seed) {
  std::vector<double> cumulative(num_distinct);
  double sum = 0;
  for (int64_t k = 0; k < num_distinct; ++k) cumulative[k] = sum += std::pow(static_cast<double>(k + 1), -alpha);
  std::mt19937_64 engine(seed);
  std::vector<BlockId> accesses(num_accesses);
  for (BlockId& b : accesses) {
    const double u = static_cast<double>(engine() >> 11) * 0x1.0p-53 * sum;
    b = static_cast<BlockId>(std::upper_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin()) + 1;
    b = std::min<BlockId>(b, num_distinct);
  }
  return accesses;
}

}  // namespace kvsim

#endif  // KVSIM_POLICIES_ZIPF_TRACE_TEST_UTIL_H_
