// File: traces/generators/portable_random.h
//
// Random variates that are the same on every platform for the same seed. std::mt19937_64's output
// sequence is fixed by the C++ standard, but std::*_distribution algorithms are implementation-defined
// (libstdc++ and libc++ give different samples), so workload generators never use them: every variate
// here is built from the engine's raw 64-bit output, mostly by inverse-transform sampling on a uniform
// double with 53 random bits. Besides IEEE arithmetic (exact and the same everywhere) only the C math
// library's log, log1p, exp, pow, erfc and sqrt are involved. sqrt is exactly rounded by IEEE 754; the
// others are accurate to about half an ulp but not guaranteed correctly rounded, so results are bit for
// bit identical on every machine with the same math library (e.g. a given glibc version), and another
// library can differ in the last bit of a double, which changes a rounded token count or nanosecond
// only in the rare case where the value sits on a rounding boundary.
//
// Example:
//   Rng rng(SeedFor(seed, /*stream=*/1));
//   double gap_s = SampleExponential(rng, /*mean=*/0.1);
//   int64_t tokens = SampleUniformInt(rng, 10, 20);
//
// Thread-safety: functions are pure apart from advancing the caller's engine; ZipfTable is immutable
// after construction and may be shared between threads.
#ifndef KVSIM_TRACES_GENERATORS_PORTABLE_RANDOM_H_
#define KVSIM_TRACES_GENERATORS_PORTABLE_RANDOM_H_

#include <cstdint>
#include <random>
#include <vector>

namespace kvsim {

using Rng = std::mt19937_64;

// Seed of an independent stream `stream` derived from the user's `seed`.
uint64_t SeedFor(uint64_t seed, uint64_t stream);

// Uniform on [0, 1): the top 53 bits of one engine output times 2^-53.
double SampleUniform01(Rng& rng);

// Uniform on (0, 1): (top 53 bits + 0.5) * 2^-53; never 0 or 1 (for log and inverse CDFs).
double SampleUniformOpen01(Rng& rng);

// Every integer in [lo, hi] equally likely, exactly (Lemire's multiply-and-reject). REQUIRES: lo <= hi.
int64_t SampleUniformInt(Rng& rng, int64_t lo, int64_t hi);

// Exponential with mean `mean`: -mean * ln(1 - U). REQUIRES: mean > 0.
double SampleExponential(Rng& rng, double mean);

// Quantile function of the standard normal (Acklam's rational approximation refined by one Halley step
// with erfc; relative error below 1e-15 in practice). REQUIRES: 0 < p < 1.
double NormalQuantile(double p);

// Standard normal by inversion: NormalQuantile(SampleUniformOpen01).
double SampleStandardNormal(Rng& rng);

// Gamma with shape k and scale theta (mean k * theta). The Gamma quantile has no closed form, so this is
// Marsaglia and Tsang's rejection method (ACM TOMS 26(3), 2000) driven by the normal and uniform
// variates above (portable for the same reason); shape < 1 uses Gamma(k + 1) * U^(1/k).
// REQUIRES: shape > 0, scale > 0.
double SampleGamma(Rng& rng, double shape, double scale);

// Coefficients of variation a gamma distribution given by (mean, cv) may have: shape 1 / cv^2 then lies
// in [1e-4, 1e4], where the sampler above neither divides by an underflowed scale nor draws only zeros.
inline constexpr double kMinGammaCv = 0.01;
inline constexpr double kMaxGammaCv = 100;

// A discrete distribution over 0..n-1 with P(j) proportional to weights[j], sampled by inverting the
// cumulative sum with a binary search (one engine output per sample).
class DiscreteTable {
 public:
  // REQUIRES: weights non-empty, each >= 0 and finite, and their sum > 0.
  explicit DiscreteTable(const std::vector<double>& weights);

  // Zipf over ranks: P(j) proportional to (j + 1)^-exponent for j in [0, n). REQUIRES: n >= 1.
  static DiscreteTable Zipf(int64_t n, double exponent);

  int64_t Sample(Rng& rng) const;
  int64_t size() const { return static_cast<int64_t>(cumulative_.size()); }

 private:
  std::vector<double> cumulative_;  // cumulative_[j] = weights[0] + ... + weights[j]
};

}  // namespace kvsim

#endif  // KVSIM_TRACES_GENERATORS_PORTABLE_RANDOM_H_
