// File: traces/generators/sampler.h
//
// Sampler: a validated, ready-to-draw form of a proto::ValueDistribution (fixed, uniform, exponential,
// lognormal, gamma, Zipf, or resampled from a trace). All draws go through portable_random.h, so the same
// engine state gives the same sample everywhere.
//
// Units: a Sampler is built for token counts (samples rounded to the nearest integer; uniform and Zipf
// draw integers exactly) or for seconds. Samples are clamped to the spec's [min_value, max_value], and
// always to [0, kMaxSampleTokens] tokens or [0, kMaxSampleSeconds] seconds so that sums and nanosecond
// conversions cannot overflow and a request's blocks fit in memory. A fixed token count above the limit,
// or a lognormal sigma above kMaxLogNormalSigma (half its draws would be clamped), is refused.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(Sampler think, Sampler::Create(spec.think_time_s(), "chat.think_time_s",
//                                                         SampleUnit::kSeconds, /*open_trace=*/nullptr));
//   double gap_s = think.SampleSeconds(rng);
//
// Ownership and thread-safety: a Sampler is a small value; copies share immutable tables. Drawing
// advances only the caller's engine, so one Sampler may serve several threads with their own engines.
#ifndef KVSIM_TRACES_GENERATORS_SAMPLER_H_
#define KVSIM_TRACES_GENERATORS_SAMPLER_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/workload.pb.h"
#include "traces/generators/portable_random.h"
#include "traces/generators/trace_opener.h"

namespace kvsim {

enum class SampleUnit { kTokens, kSeconds };

// 16M tokens: beyond any model's context, and a request's block hashes stay a few MB.
inline constexpr int64_t kMaxSampleTokens = int64_t{1} << 24;
inline constexpr double kMaxSampleSeconds = 1e9;
inline constexpr double kMaxLogNormalSigma = 10;
// Zipf distributions span at most this many values (their table holds one double per value).
inline constexpr int64_t kMaxZipfValues = int64_t{1} << 22;

class Sampler {
 public:
  // Validates `spec` and builds the sampler. `field` is the spec path used in errors, e.g.
  // "classes[0].chat.input_tokens"; an error reads "<field>.<subfield>: <what was expected>" with code
  // InvalidArgument (or the trace's own error for resample). `open_trace` is needed only for resample.
  static absl::StatusOr<Sampler> Create(const proto::ValueDistribution& spec, const std::string& field, SampleUnit unit,
                                        const TraceOpener& open_trace);

  // Create() when `has_field`, else a sampler that always returns 0 (for optional distributions).
  static absl::StatusOr<Sampler> CreateOptional(bool has_field, const proto::ValueDistribution& spec,
                                                const std::string& field, SampleUnit unit,
                                                const TraceOpener& open_trace);

  // A draw in tokens. REQUIRES: built with SampleUnit::kTokens.
  int64_t SampleTokens(Rng& rng) const;
  // A draw in seconds. REQUIRES: built with SampleUnit::kSeconds.
  double SampleSeconds(Rng& rng) const;

 private:
  enum class Kind { kFixed, kUniform, kExponential, kLogNormal, kGamma, kZipf, kResample };
  Sampler() = default;
  double SampleReal(Rng& rng) const;  // unclamped, unrounded (Zipf/resample: an integer)

  SampleUnit unit_ = SampleUnit::kSeconds;
  Kind kind_ = Kind::kFixed;
  double a_ = 0;  // fixed value, uniform min, mean, median
  double b_ = 0;  // uniform max, sigma, cv
  double min_ = 0;
  double max_ = std::numeric_limits<double>::infinity();
  std::shared_ptr<const DiscreteTable> zipf_;           // Zipf ranks; value = a_ + rank
  std::shared_ptr<const std::vector<int64_t>> values_;  // resample
};

}  // namespace kvsim

#endif  // KVSIM_TRACES_GENERATORS_SAMPLER_H_
