#include "traces/generators/portable_random.h"

#include <algorithm>
#include <cmath>

#include "util/check.h"
#include "util/mix64.h"

namespace kvsim {

uint64_t SeedFor(uint64_t seed, uint64_t stream) { return Mix64(Mix64(seed) ^ Mix64(~stream)); }

double SampleUniform01(Rng& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

double SampleUniformOpen01(Rng& rng) { return (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53; }

int64_t SampleUniformInt(Rng& rng, int64_t lo, int64_t hi) {
  KVSIM_CHECK(lo <= hi) << lo << " > " << hi;
  const uint64_t range = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;
  if (range == 0) return static_cast<int64_t>(rng());  // the whole 64-bit range
  unsigned __int128 m = static_cast<unsigned __int128>(rng()) * range;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < range) {
    const uint64_t threshold = (0 - range) % range;  // 2^64 mod range
    while (low < threshold) {
      m = static_cast<unsigned __int128>(rng()) * range;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + static_cast<uint64_t>(m >> 64));
}

double SampleExponential(Rng& rng, double mean) { return -mean * std::log1p(-SampleUniform01(rng)); }

double NormalQuantile(double p) {
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                                 1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                 6.680131188771972e+01, -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                 -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                 3.754408661907416e+00};
  constexpr double kLow = 0.02425;
  double x;
  if (p < kLow || p > 1 - kLow) {
    const double q = std::sqrt(-2 * std::log(p < kLow ? p : 1 - p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    if (p > 1 - kLow) x = -x;
  } else {
    const double q = p - 0.5;
    const double r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  }
  // One Halley step on Phi(x) - p, Phi(x) = erfc(-x / sqrt 2) / 2.
  const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
  const double u = e * std::sqrt(2 * M_PI) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

double SampleStandardNormal(Rng& rng) { return NormalQuantile(SampleUniformOpen01(rng)); }

double SampleGamma(Rng& rng, double shape, double scale) {
  KVSIM_CHECK(shape > 0 && scale > 0) << shape << " " << scale;
  if (shape < 1) {
    const double g = SampleGamma(rng, shape + 1, scale);
    return g * std::pow(SampleUniformOpen01(rng), 1 / shape);
  }
  const double d = shape - 1.0 / 3;
  const double c = 1 / std::sqrt(9 * d);
  while (true) {
    const double x = SampleStandardNormal(rng);
    double v = 1 + c * x;
    if (v <= 0) continue;
    v = v * v * v;
    const double u = SampleUniformOpen01(rng);
    if (u < 1 - 0.0331 * (x * x) * (x * x)) return d * v * scale;
    if (std::log(u) < 0.5 * x * x + d * (1 - v + std::log(v))) return d * v * scale;
  }
}

DiscreteTable::DiscreteTable(const std::vector<double>& weights) {
  KVSIM_CHECK(!weights.empty());
  cumulative_.reserve(weights.size());
  double sum = 0;
  for (double w : weights) {
    KVSIM_CHECK(w >= 0 && std::isfinite(w)) << w;
    sum += w;
    cumulative_.push_back(sum);
  }
  KVSIM_CHECK(sum > 0);
}

DiscreteTable DiscreteTable::Zipf(int64_t n, double exponent) {
  KVSIM_CHECK(n >= 1) << n;
  std::vector<double> weights(n);
  for (int64_t j = 0; j < n; ++j) weights[j] = std::pow(static_cast<double>(j + 1), -exponent);
  return DiscreteTable(weights);
}

int64_t DiscreteTable::Sample(Rng& rng) const {
  const double target = SampleUniform01(rng) * cumulative_.back();
  // First j with cumulative_[j] > target, so zero-weight entries are never chosen. If rounding made
  // target equal to the total, take the last entry of positive weight.
  const auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), target);
  if (it != cumulative_.end()) return it - cumulative_.begin();
  return std::lower_bound(cumulative_.begin(), cumulative_.end(), cumulative_.back()) - cumulative_.begin();
}

}  // namespace kvsim
