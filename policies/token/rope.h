// File: policies/token/rope.h
//
// Rotary position embedding as the policies undo or redo it on a trace's post-RoPE keys and queries, from
// the trace's RopeConfig (traces/attention/attention_trace.h): Hugging Face's rotate_half convention, channel
// pairs (c, c + d/2) for c < d/2, pair c turning by theta_c = base^(-2c/d) per position, positions divided
// by the factor under linear scaling. RopeConfig holds base, scaling type and factor only, so it describes
// the rotation exactly for no scaling and linear scaling (RopeConfigIsExact); other types (dynamic, yarn,
// llama3) need parameters it does not carry, and ApplyRope treats them as unscaled (an approximation).
//
// Precision: the angles are computed in double (position * theta_c). The model's own pass
// (sim/eval/llama_session.cc) rounds its angles to float, so un-rotating its keys leaves a residual rotation
// of at most a few float roundings of the angle: about 2^-23 * position * theta_c radians (6e-5 rad at
// position 512 for theta_c = 1).
//
// Example:
//   RopeTable table;
//   table.Reset(rope, /*head_dim=*/128, /*positions=*/seq_len);
//   table.Apply(t, /*inverse=*/true, key_row);  // post-RoPE -> pre-RoPE
//
// Thread-safety: functions are pure; a RopeTable is read-only after Reset().
#ifndef KVSIM_POLICIES_TOKEN_ROPE_H_
#define KVSIM_POLICIES_TOKEN_ROPE_H_

#include <cstdint>
#include <vector>

#include "traces/attention/attention_trace.h"

namespace kvsim {

// theta_c = base^(-2c/d): radians per (scaled) position of channel pair c.
double RopeTheta(const RopeConfig& rope, int c, int d);

// The position the rotation uses: position / factor under linear scaling, else position.
double RopeScaledPosition(const RopeConfig& rope, int64_t position);

// "none", "linear", "dynamic", "yarn", "llama3" or "other" (Hugging Face's rope_type names).
const char* RopeScalingName(RopeScaling scaling);

// Whether `rope` gives the model's rotation exactly: no scaling, or linear scaling with a factor > 0.
bool RopeConfigIsExact(const RopeConfig& rope);

// Rotates x (d values, d even) by RoPE at `position` (inverse = true: by -position), in place.
void ApplyRope(const RopeConfig& rope, int64_t position, bool inverse, float* x, int d);

// The cosines and sines of positions [0, positions) for head_dim d, so that rows can be rotated without
// transcendental functions. Apply() gives the same bits as ApplyRope.
class RopeTable {
 public:
  // Fills the table (a no-op when rope, d and positions are those of the last call). REQUIRES: d even.
  void Reset(const RopeConfig& rope, int d, int64_t positions);
  // ApplyRope(rope, position, inverse, x, d). REQUIRES: 0 <= position < positions.
  void Apply(int64_t position, bool inverse, float* x) const;

 private:
  RopeConfig rope_;
  int d_ = 0;
  int64_t positions_ = -1;
  std::vector<double> cos_, sin_;  // positions x d/2
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_TOKEN_ROPE_H_
