#include "util/stream_sketch.h"

#include <algorithm>
#include <cmath>

// Data and invariants:
// - DistinctCounter: exactly one of values_ (exact) and registers_ (2^kPrecision entries) is in use;
//   registers_[j] is the largest rank (leading zeros + 1 of the hash bits after the index) seen at index j.
// - QuantileSketch: count_, sum_, min_, max_ cover every value. Exactly one of exact_counts_ (value ->
//   count) and buckets_ (kNumBuckets counts) holds the values; the switch moves every count over.
// Why it is fast: one hash (or one map update) per value; Count() and Quantile() walk at most 2^14
// registers or 2,200 buckets (sorting the exact values is O(d log d), d <= exact_limit).

namespace kvsim {
namespace {

constexpr int kRegisters = 1 << DistinctCounter::kPrecision;
// g = (1 + a) / (1 - a) for a = 1%: 1.0202...; ln g.
const double kLogGamma =
    std::log((1 + QuantileSketch::kQuantileRelativeError) / (1 - QuantileSketch::kQuantileRelativeError));
// Values up to 2^63 have ceil(ln(2^63) / ln g) = 2,184 buckets, plus the zeros and some slack.
constexpr int kNumBuckets = 2200;

}  // namespace

void DistinctCounter::AddToRegisters(uint64_t value) {
  const uint64_t h = Mix64(value);
  const int index = static_cast<int>(h >> (64 - kPrecision));
  const uint64_t rest = h << kPrecision;
  const int rank = rest == 0 ? 64 - kPrecision + 1 : __builtin_clzll(rest) + 1;
  registers_[index] = std::max<uint8_t>(registers_[index], static_cast<uint8_t>(rank));
}

void DistinctCounter::Add(uint64_t value) {
  if (!registers_.empty()) {
    AddToRegisters(value);
    return;
  }
  values_.insert(value);
  if (static_cast<int64_t>(values_.size()) <= exact_limit_) return;
  registers_.assign(kRegisters, 0);
  for (uint64_t v : values_) AddToRegisters(v);
  values_ = {};  // releases the table
}

int64_t DistinctCounter::Count() const {
  if (registers_.empty()) return static_cast<int64_t>(values_.size());
  const double m = kRegisters;
  double inverse_sum = 0;
  int zeros = 0;
  for (uint8_t r : registers_) {
    inverse_sum += std::ldexp(1.0, -r);
    zeros += r == 0;
  }
  const double alpha = 0.7213 / (1 + 1.079 / m);
  double estimate = alpha * m * m / inverse_sum;
  if (estimate <= 2.5 * m && zeros > 0) estimate = m * std::log(m / zeros);  // linear counting
  return static_cast<int64_t>(std::llround(estimate));
}

int64_t DistinctCounter::UpperCount() const {
  if (exact()) return Count();
  return static_cast<int64_t>(std::ceil(static_cast<double>(Count()) * (1 + 3 * kRelativeStandardError)));
}

int QuantileSketch::BucketOf(int64_t value) {
  if (value <= 0) return 0;
  // Bucket i >= 1 holds (g^(i-2), g^(i-1)]: 1 + ceil(log_g value).
  const int i = 1 + static_cast<int>(std::ceil(std::log(static_cast<double>(value)) / kLogGamma - 1e-12));
  return std::clamp(i, 1, kNumBuckets - 1);
}

int64_t QuantileSketch::Representative(int bucket) const {
  if (bucket == 0) return std::clamp<int64_t>(0, min_, max_);
  const double g = std::exp(kLogGamma);
  const double upper = std::exp(kLogGamma * (bucket - 1));
  const double r = std::round(2 * upper / (g + 1));
  if (r >= static_cast<double>(max_)) return max_;
  return std::clamp(static_cast<int64_t>(r), min_, max_);
}

void QuantileSketch::AddToBucket(int64_t value, int64_t count) { buckets_[BucketOf(value)] += count; }

void QuantileSketch::Add(int64_t value) {
  min_ = count_ == 0 ? value : std::min(min_, value);
  max_ = count_ == 0 ? value : std::max(max_, value);
  ++count_;
  sum_ += value;
  if (!buckets_.empty()) {
    AddToBucket(value, 1);
    return;
  }
  ++exact_counts_[value];
  if (static_cast<int64_t>(exact_counts_.size()) > exact_limit_) ToBuckets();
}

void QuantileSketch::ToBuckets() {
  buckets_.assign(kNumBuckets, 0);
  for (const auto& [v, c] : exact_counts_) AddToBucket(v, c);
  exact_counts_ = {};  // releases the table
}

void QuantileSketch::Merge(const QuantileSketch& other) {
  if (other.count_ == 0) return;
  min_ = count_ == 0 ? other.min_ : std::min(min_, other.min_);
  max_ = count_ == 0 ? other.max_ : std::max(max_, other.max_);
  count_ += other.count_;
  sum_ += other.sum_;
  if (buckets_.empty() && other.buckets_.empty()) {  // both exact
    for (const auto& [v, c] : other.exact_counts_) exact_counts_[v] += c;
    if (static_cast<int64_t>(exact_counts_.size()) > exact_limit_) ToBuckets();
    return;
  }
  if (buckets_.empty()) ToBuckets();
  if (other.buckets_.empty()) {
    for (const auto& [v, c] : other.exact_counts_) AddToBucket(v, c);
  } else {
    for (int b = 0; b < kNumBuckets; ++b) buckets_[b] += other.buckets_[b];
  }
}

int64_t QuantileSketch::Quantile(double q) const {
  if (count_ == 0) return 0;
  const double rank_real = std::ceil(q * static_cast<double>(count_));
  const int64_t rank = std::clamp<int64_t>(static_cast<int64_t>(rank_real), 1, count_);
  int64_t seen = 0;
  if (buckets_.empty()) {
    std::vector<std::pair<int64_t, int64_t>> sorted(exact_counts_.begin(), exact_counts_.end());
    std::sort(sorted.begin(), sorted.end());
    for (const auto& [v, c] : sorted) {
      seen += c;
      if (seen >= rank) return v;
    }
    return max_;
  }
  for (int b = 0; b < kNumBuckets; ++b) {
    seen += buckets_[b];
    if (seen >= rank) return Representative(b);
  }
  return max_;
}

}  // namespace kvsim
