#include "traces/generators/sampler.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "util/check.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

absl::Status Invalid(const std::string& field, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

// OK if `value` is finite and > 0 (or >= 0 when `allow_zero`).
absl::Status CheckPositive(double value, bool allow_zero, const std::string& field) {
  if (!std::isfinite(value) || value < 0 || (!allow_zero && value == 0)) {
    return Invalid(field, absl::StrFormat("must be a finite number %s 0, got %g", allow_zero ? ">=" : ">", value));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> ReadTraceField(const proto::ValueDistribution::Resample& spec,
                                                    const std::string& field, const TraceOpener& open_trace) {
  if (spec.trace_path().empty()) return Invalid(field + ".trace_path", "must name a trace file");
  if (spec.field() == proto::ValueDistribution::Resample::FIELD_UNSPECIFIED) {
    return Invalid(field + ".field", "must be FIELD_INPUT_TOKENS or FIELD_OUTPUT_TOKENS");
  }
  if (!open_trace) {
    return Invalid(field + ".trace_path", "traces cannot be opened here (no trace opener given)");
  }
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, open_trace(spec.trace_path()));
  std::vector<int64_t> values;
  Request request;
  const bool input = spec.field() == proto::ValueDistribution::Resample::FIELD_INPUT_TOKENS;
  while (reader->Next(&request)) values.push_back(input ? request.input_tokens : request.output_tokens);
  KVSIM_RETURN_IF_ERROR(reader->status());
  if (values.empty()) return Invalid(field + ".trace_path", "trace " + spec.trace_path() + " has no records");
  return values;
}

}  // namespace

absl::StatusOr<Sampler> Sampler::Create(const proto::ValueDistribution& spec, const std::string& field, SampleUnit unit,
                                        const TraceOpener& open_trace) {
  Sampler s;
  s.unit_ = unit;
  const bool tokens = unit == SampleUnit::kTokens;
  switch (spec.kind_case()) {
    case proto::ValueDistribution::kFixed:
      s.kind_ = Kind::kFixed;
      s.a_ = spec.fixed().value();
      KVSIM_RETURN_IF_ERROR(CheckPositive(s.a_, true, field + ".fixed.value"));
      if (tokens && s.a_ > kMaxSampleTokens) {
        return Invalid(field + ".fixed.value",
                       absl::StrFormat("must be at most %d tokens, got %g", kMaxSampleTokens, s.a_));
      }
      break;
    case proto::ValueDistribution::kUniform:
      s.kind_ = Kind::kUniform;
      s.a_ = spec.uniform().min();
      s.b_ = spec.uniform().max();
      KVSIM_RETURN_IF_ERROR(CheckPositive(s.a_, true, field + ".uniform.min"));
      KVSIM_RETURN_IF_ERROR(CheckPositive(s.b_, true, field + ".uniform.max"));
      if (s.b_ < s.a_ || (tokens && std::ceil(s.a_) > std::floor(s.b_))) {
        return Invalid(field + ".uniform.max",
                       absl::StrFormat("must be >= min%s (min %g, max %g)",
                                       tokens ? " and [min, max] must hold an integer" : "", s.a_, s.b_));
      }
      if (tokens) {
        s.a_ = std::min<double>(std::ceil(s.a_), kMaxSampleTokens);
        s.b_ = std::min<double>(std::floor(s.b_), kMaxSampleTokens);
      }
      break;
    case proto::ValueDistribution::kExponential:
      s.kind_ = Kind::kExponential;
      s.a_ = spec.exponential().mean();
      KVSIM_RETURN_IF_ERROR(CheckPositive(s.a_, false, field + ".exponential.mean"));
      break;
    case proto::ValueDistribution::kLognormal:
      s.kind_ = Kind::kLogNormal;
      s.a_ = spec.lognormal().median();
      s.b_ = spec.lognormal().sigma();
      KVSIM_RETURN_IF_ERROR(CheckPositive(s.a_, false, field + ".lognormal.median"));
      KVSIM_RETURN_IF_ERROR(CheckPositive(s.b_, false, field + ".lognormal.sigma"));
      if (s.b_ > kMaxLogNormalSigma) {
        return Invalid(field + ".lognormal.sigma",
                       absl::StrFormat("must be at most %g, got %g", kMaxLogNormalSigma, s.b_));
      }
      break;
    case proto::ValueDistribution::kGamma:
      s.kind_ = Kind::kGamma;
      s.a_ = spec.gamma().mean();
      s.b_ = spec.gamma().cv();
      KVSIM_RETURN_IF_ERROR(CheckPositive(s.a_, false, field + ".gamma.mean"));
      if (!(s.b_ >= kMinGammaCv && s.b_ <= kMaxGammaCv)) {
        return Invalid(field + ".gamma.cv",
                       absl::StrFormat("must be in [%g, %g] (what the gamma sampler represents), got %g", kMinGammaCv,
                                       kMaxGammaCv, s.b_));
      }
      break;
    case proto::ValueDistribution::kZipf: {
      s.kind_ = Kind::kZipf;
      const proto::ValueDistribution::Zipf& z = spec.zipf();
      if (z.min() < 0) return Invalid(field + ".zipf.min", absl::StrCat("must be >= 0, got ", z.min()));
      if (z.max() < z.min() || z.max() - z.min() >= kMaxZipfValues) {
        return Invalid(field + ".zipf.max", absl::StrCat("must be in [min, min + ", kMaxZipfValues - 1, "], got ",
                                                         z.max(), " with min ", z.min()));
      }
      KVSIM_RETURN_IF_ERROR(CheckPositive(z.exponent(), true, field + ".zipf.exponent"));
      s.a_ = static_cast<double>(z.min());
      s.zipf_ = std::make_shared<const DiscreteTable>(DiscreteTable::Zipf(z.max() - z.min() + 1, z.exponent()));
      break;
    }
    case proto::ValueDistribution::kResample: {
      if (!tokens) return Invalid(field + ".resample", "only token distributions can be resampled");
      s.kind_ = Kind::kResample;
      KVSIM_ASSIGN_OR_RETURN(std::vector<int64_t> values,
                             ReadTraceField(spec.resample(), field + ".resample", open_trace));
      s.values_ = std::make_shared<const std::vector<int64_t>>(std::move(values));
      break;
    }
    case proto::ValueDistribution::KIND_NOT_SET:
      return Invalid(field,
                     "no distribution set (expected one of fixed, uniform, exponential, lognormal, "
                     "gamma, zipf, resample)");
  }
  if (spec.has_min_value()) {
    KVSIM_RETURN_IF_ERROR(CheckPositive(spec.min_value(), true, field + ".min_value"));
    s.min_ = tokens ? std::ceil(spec.min_value()) : spec.min_value();
  }
  if (spec.has_max_value()) {
    if (std::isnan(spec.max_value())) return Invalid(field + ".max_value", "must be a number");
    s.max_ = tokens ? std::floor(spec.max_value()) : spec.max_value();
    if (s.max_ < s.min_) {
      return Invalid(field + ".max_value", absl::StrFormat("must be >= min_value%s (got %g)",
                                                           tokens ? " after rounding" : "", spec.max_value()));
    }
  }
  s.max_ = std::min(s.max_, tokens ? static_cast<double>(kMaxSampleTokens) : kMaxSampleSeconds);
  s.min_ = std::min(s.min_, s.max_);
  return s;
}

absl::StatusOr<Sampler> Sampler::CreateOptional(bool has_field, const proto::ValueDistribution& spec,
                                                const std::string& field, SampleUnit unit,
                                                const TraceOpener& open_trace) {
  if (has_field) return Create(spec, field, unit, open_trace);
  Sampler zero;
  zero.unit_ = unit;
  return zero;  // kFixed with value 0
}

double Sampler::SampleReal(Rng& rng) const {
  switch (kind_) {
    case Kind::kFixed:
      return a_;
    case Kind::kUniform:
      if (unit_ == SampleUnit::kTokens) {
        return static_cast<double>(SampleUniformInt(rng, static_cast<int64_t>(a_), static_cast<int64_t>(b_)));
      }
      return a_ + (b_ - a_) * SampleUniform01(rng);
    case Kind::kExponential:
      return SampleExponential(rng, a_);
    case Kind::kLogNormal:
      return a_ * std::exp(b_ * SampleStandardNormal(rng));
    case Kind::kGamma:
      return SampleGamma(rng, 1 / (b_ * b_), a_ * b_ * b_);
    case Kind::kZipf:
      return a_ + static_cast<double>(zipf_->Sample(rng));
    case Kind::kResample:
      return static_cast<double>((*values_)[SampleUniformInt(rng, 0, static_cast<int64_t>(values_->size()) - 1)]);
  }
  return 0;
}

int64_t Sampler::SampleTokens(Rng& rng) const {
  KVSIM_CHECK(unit_ == SampleUnit::kTokens);
  // Rounded first, then clamped: min_ and max_ are integers for token samplers. NaN cannot occur
  // (every kind yields a finite or +inf value), and +inf clamps to max_.
  const double x = std::clamp(std::round(SampleReal(rng)), min_, max_);
  return static_cast<int64_t>(x);
}

double Sampler::SampleSeconds(Rng& rng) const {
  KVSIM_CHECK(unit_ == SampleUnit::kSeconds);
  return std::clamp(SampleReal(rng), min_, max_);
}

}  // namespace kvsim
