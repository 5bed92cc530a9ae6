// File: util/stream_sketch.h
//
// Statistics of a stream in bounded memory, exact while the stream is small and approximate, with a stated
// error bound, once it is not:
//
// DistinctCounter: the number of distinct 64-bit values. Exact (a hash set) up to `exact_limit` values; past
//   that a HyperLogLog of 2^14 registers (Flajolet, Fusy, Gandouet, Meunier, "HyperLogLog: the analysis of a
//   near-optimal cardinality estimation algorithm", AofA 2007; with linear counting for small estimates, as
//   in Heule, Nunkesser, Hall, EDBT 2013), 16 KiB: relative standard error 1.04 / sqrt(2^14) = 0.81%.
//   The values are mixed with the SplitMix64 finaliser first, so sequential ids count as well as random ones.
//
// QuantileSketch: count, exact sum, mean, min and max of integers (the bound below: non-negative ones), and
// nearest-rank quantiles
//   (util/percentile.h's definition). Exact (a count per distinct value) while there are at most
//   `exact_limit` distinct values; past that each value is kept in a logarithmic bucket
//   [g^(i-1), g^i) with g = (1 + a) / (1 - a), a = kQuantileRelativeError = 1%, whose representative
//   2 g^i / (g + 1) (rounded, clamped to [min, max]) is within a relative 1% (plus 0.5 for the
//   rounding) of every value in it, so a quantile is within that of the exact nearest-rank value (the
//   idea of DDSketch, Masson, Rim, Lee, VLDB 2019). 0 has its own bucket; memory is at most ~2,200
//   buckets whatever the values.
//
// Both are deterministic: the result depends on the values and their multiset only (not on the order for the
// counts, and the switch to the approximate form happens at a fixed count).
//
// Example:
//   QuantileSketch tokens;
//   for (...) tokens.Add(request.input_tokens);
//   tokens.Quantile(0.99); tokens.exact();
//
// Thread-safety: none; one owner.
#ifndef KVSIM_UTIL_STREAM_SKETCH_H_
#define KVSIM_UTIL_STREAM_SKETCH_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "util/mix64.h"

namespace kvsim {

class DistinctCounter {
 public:
  static constexpr int kPrecision = 14;                     // 2^14 registers
  static constexpr double kRelativeStandardError = 0.0081;  // 1.04 / sqrt(2^14)

  // REQUIRES: exact_limit >= 0.
  explicit DistinctCounter(int64_t exact_limit = int64_t{1} << 20) : exact_limit_(exact_limit) {}

  void Add(uint64_t value);
  // The count: exact while exact(), else the HyperLogLog estimate (rounded).
  int64_t Count() const;
  // An upper value for the count: exact while exact(), else three standard errors above the estimate.
  int64_t UpperCount() const;
  bool exact() const { return registers_.empty(); }

 private:
  void AddToRegisters(uint64_t value);

  int64_t exact_limit_;
  absl::flat_hash_set<uint64_t> values_;  // while exact
  std::vector<uint8_t> registers_;        // once approximate
};

class QuantileSketch {
 public:
  static constexpr double kQuantileRelativeError = 0.01;

  // REQUIRES: exact_limit >= 0.
  explicit QuantileSketch(int64_t exact_limit = 4096) : exact_limit_(exact_limit) {}

  // The error bound holds for values >= 0 (smaller ones share the bucket of 0 once approximate).
  void Add(int64_t value);
  // Adds every value of `other` (exact if both are and the union has at most exact_limit distinct values).
  void Merge(const QuantileSketch& other);

  int64_t count() const { return count_; }
  long double sum() const { return sum_; }
  double Mean() const { return count_ == 0 ? 0 : static_cast<double>(sum_ / count_); }
  int64_t min() const { return min_; }  // 0 when empty
  int64_t max() const { return max_; }  // 0 when empty
  bool exact() const { return buckets_.empty(); }

  // The nearest-rank q-quantile (q in (0, 1]): exact while exact(), else within the bound above. 0 when empty.
  int64_t Quantile(double q) const;

 private:
  static int BucketOf(int64_t value);
  int64_t Representative(int bucket) const;
  void AddToBucket(int64_t value, int64_t count);
  void ToBuckets();

  int64_t exact_limit_;
  int64_t count_ = 0;
  long double sum_ = 0;
  int64_t min_ = 0, max_ = 0;
  absl::flat_hash_map<int64_t, int64_t> exact_counts_;  // while exact
  std::vector<int64_t> buckets_;                        // once approximate; index 0 holds the zeros
};

}  // namespace kvsim

#endif  // KVSIM_UTIL_STREAM_SKETCH_H_
