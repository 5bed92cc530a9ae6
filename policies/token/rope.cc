#include "policies/token/rope.h"

#include <cmath>

namespace kvsim {
namespace {

// One rotation by the angle whose cosine and sine are cs, sn (inverse: by minus that angle), as
// ApplyRope computes it: in double, rounded to float once.
inline void RotatePair(double cs, double sn, float* a_out, float* b_out) {
  const double a = *a_out, b = *b_out;
  *a_out = static_cast<float>(a * cs - b * sn);
  *b_out = static_cast<float>(b * cs + a * sn);
}

}  // namespace

double RopeTheta(const RopeConfig& rope, int c, int d) { return std::pow(rope.base, -2.0 * c / d); }

double RopeScaledPosition(const RopeConfig& rope, int64_t position) {
  return rope.scaling == RopeScaling::kLinear && rope.scaling_factor > 0 ? position / rope.scaling_factor
                                                                         : static_cast<double>(position);
}

const char* RopeScalingName(RopeScaling scaling) {
  switch (scaling) {
    case RopeScaling::kNone:
      return "none";
    case RopeScaling::kLinear:
      return "linear";
    case RopeScaling::kDynamic:
      return "dynamic";
    case RopeScaling::kYarn:
      return "yarn";
    case RopeScaling::kLlama3:
      return "llama3";
    case RopeScaling::kOther:
      return "other";
  }
  return "other";
}

bool RopeConfigIsExact(const RopeConfig& rope) {
  return rope.scaling == RopeScaling::kNone || (rope.scaling == RopeScaling::kLinear && rope.scaling_factor > 0);
}

void ApplyRope(const RopeConfig& rope, int64_t position, bool inverse, float* x, int d) {
  const int half = d / 2;
  const double t = RopeScaledPosition(rope, position) * (inverse ? -1 : 1);
  for (int c = 0; c < half; ++c) {
    const double angle = t * RopeTheta(rope, c, d);
    RotatePair(std::cos(angle), std::sin(angle), &x[c], &x[c + half]);
  }
}

void RopeTable::Reset(const RopeConfig& rope, int d, int64_t positions) {
  if (positions == positions_ && d == d_ && rope.base == rope_.base && rope.scaling == rope_.scaling &&
      rope.scaling_factor == rope_.scaling_factor) {
    return;
  }
  rope_ = rope;
  d_ = d;
  positions_ = positions;
  const int half = d / 2;
  cos_.resize(positions * half);
  sin_.resize(positions * half);
  for (int64_t p = 0; p < positions; ++p) {
    const double t = RopeScaledPosition(rope, p);
    for (int c = 0; c < half; ++c) {
      const double angle = t * RopeTheta(rope, c, d);
      cos_[p * half + c] = std::cos(angle);
      sin_[p * half + c] = std::sin(angle);
    }
  }
}

void RopeTable::Apply(int64_t position, bool inverse, float* x) const {
  const int half = d_ / 2;
  const double* cs = &cos_[position * half];
  const double* sn = &sin_[position * half];
  // cos(-a) = cos(a) and sin(-a) = -sin(a) exactly (IEEE negation; the C library's cos and sin are even
  // and odd), so the inverse matches ApplyRope's rotation by -position bit for bit.
  for (int c = 0; c < half; ++c) RotatePair(cs[c], inverse ? -sn[c] : sn[c], &x[c], &x[c + half]);
}

}  // namespace kvsim
