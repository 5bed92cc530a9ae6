// File: policies/token/kvquant_policy.h
//
// "kvquant2", "kvquant3", "kvquant4", "kvquant8", and with 1% dense-and-sparse outliers "kvquant2-1pct" ..
// "kvquant8-1pct" (Hooper et al. 2024, "KVQuant: Towards 10 Million Context Length LLM Inference with KV
// Cache Quantization"): non-uniform b-bit quantisation of the keys per channel BEFORE the rotary embedding and
// of the values per token, the largest magnitudes optionally kept exact. A wrapper, as KIVI: "kvquant4" alone
// keeps every token; "kvquant4+h2o" quantises what H2O keeps. Kind: kQuantize.
//
// The rule, for one layer of one sample (the heads given to BeginLayer), with P = prompt_len, d = head_dim,
// f = the outlier share (0.01 for the -1pct names, 0 otherwise):
//  1. Pre-RoPE keys. HeadContext keys are post-RoPE (trace and closed loop alike), so row t is rotated back
//     by -t with the head's RopeConfig (RopeTable, policies/token/rope.h). Only configs that give the rotation
//     exactly are accepted (RopeConfigIsExact: no scaling or linear; CheckTrace refuses the others, naming
//     the scaling); the un-rotation matches the model's own rotation to float rounding of its angles (rope.h).
//  2. Dense ranges. Keys per channel c of each head, calibrated on the prompt: among the P prompt rows'
//     pre-RoPE values of c, the n = floor(f * P) largest magnitudes are outliers: the threshold tau_c is the
//     (n + 1)-th largest magnitude (n = 0: no threshold), the outliers the entries above it (fewer than n on
//     ties), and [lo_c, hi_c] the range of the others. Every row, decode rows included, uses the prompt's
//     lo_c, hi_c, tau_c (KVQuant fixes its per-channel key scaling ahead of time too). Values per token t,
//     online: the same over the token's own d entries, n = floor(f * d).
//  3. Normalisation: x' = (x - m) / h with m = (lo + hi) / 2, h = (hi - lo) / 2: the calibration's dense
//     entries lie in [-1, 1]. A channel or token with h = 0 dequantises to m.
//  4. Non-uniform datatype (NuqCodebook): one codebook of 2^b levels for the layer's keys and one for its
//     values, by 1-D k-means (Lloyd) over the normalised dense entries of the prompt rows of every head
//     given (those with h = 0 left out): the levels start uniform at -1 + (2i + 1) / 2^b, then at most
//     kLloydIterations rounds (fewer when a round moves no level) give each level the mean of the samples
//     nearest to it (a level with none stays).
//  5. Quantisation: an outlier (|x| > tau) is kept exact; any other entry becomes m + h * (the level nearest
//     to x'). x' outside [-1, 1] (a decode key beyond the prompt's range that is no outlier) takes an end
//     level.
//  6. The dequantised keys are rotated forward again at their positions: the post-RoPE keys attention reads.
// Every token is read quantised, the newest included (Kv: exact_from = position + 1; no full-precision
// residual, unlike KIVI). The closed loop (sim/eval/llama_session.h) therefore begins its requantiser again
// at each decode step; the calibration (the key ranges of step 2 and the codebooks of step 4) reads only
// prompt rows, so it comes out the same each time and the earlier rows keep their quantised values. So that
// a step costs one row, not the whole cache, an instance keeps a copy of the rows it was last given (as much
// memory again as its dequantised copies): the calibration is reused while the prompt rows, shapes and RoPE
// config are identical, and a row is quantised again only when its key or value bits changed (a row's
// quantisation depends only on the row, its position and the calibration: the same result, by construction).
//
// Where KVQuant differs: its codebooks are fitted offline on a calibration set by k-means weighted by Fisher
// information (each activation's effect on the loss), and its per-channel key scaling and outlier thresholds
// are calibrated offline as well; here the prompt is the calibration set and the k-means is unweighted. Its
// later versions also keep the first token (the attention sink) in fp16, and it can correct the dequantised
// distribution's mean and spread (Q-Norm); neither is done here. A candidate's group_size (proto/select.proto)
// is not applied: key ranges are per channel over the prompt and value ranges per token over the whole
// vector. At head_dim < 100 a 1% share leaves no value outliers (floor(0.01 d) = 0): only keys have them.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TokenPolicy> q, CreateTokenPolicy("kvquant3-1pct+snapkv"));
//   KVSIM_RETURN_IF_ERROR(q->CheckTrace(header));  // refuses RoPE scalings it cannot undo
//   q->BeginLayer(heads, 256);
//   KvOverride kv = q->Kv(0, position);  // dequantised post-RoPE keys and values, rows <= position
//
// Thread-compatible: one thread at a time per instance.
#ifndef KVSIM_POLICIES_TOKEN_KVQUANT_POLICY_H_
#define KVSIM_POLICIES_TOKEN_KVQUANT_POLICY_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "policies/token/rope.h"
#include "policies/token/token_policy.h"

namespace kvsim {

// Step 4's codebook: `levels` ascending values and the bounds between them.
class NuqCodebook {
 public:
  static constexpr int kLloydIterations = 32;

  // Lloyd's 1-D k-means over `samples` (any order; reordered) as in step 4. No samples: the uniform start.
  // REQUIRES: levels >= 1.
  static NuqCodebook Fit(std::vector<float> samples, int levels);

  const std::vector<float>& levels() const { return levels_; }
  // The nearest level to x: the first level whose upper bound (the float midpoint (l_i + l_{i+1}) / 2)
  // is >= x, so a tie goes to the lower level; the last level past the last bound.
  float Snap(float x) const;

 private:
  std::vector<float> levels_, bounds_;  // bounds_[i] = (levels_[i] + levels_[i + 1]) / 2
};

// Step 2 for `count` entries x[0], x[stride], ..., x[(count - 1) * stride] with `outliers` = n.
struct NuqRange {
  float mid = 0;   // m
  float half = 0;  // h
  float outlier_above = std::numeric_limits<float>::infinity();  // tau: |x| > tau is kept exact
};
NuqRange DenseRange(const float* x, int64_t count, int64_t stride, int64_t outliers);

// Step 5 for one entry.
inline float NuqDequantize(float x, const NuqRange& r, const NuqCodebook& codebook) {
  if (std::abs(x) > r.outlier_above) return x;
  if (!(r.half > 0)) return r.mid;
  return r.mid + r.half * codebook.Snap((x - r.mid) / r.half);
}

class KvQuantPolicy final : public TokenPolicy {
 public:
  // REQUIRES: bits in 1..8, outlier_fraction in [0, 1).
  KvQuantPolicy(int bits, double outlier_fraction, std::unique_ptr<TokenPolicy> inner);
  std::string Name() const override;
  Kind kind() const override { return Kind::kQuantize; }
  // REQUIRES (besides TokenPolicy's): head_dim even, prompt_len >= 1.
  void BeginLayer(absl::Span<const HeadContext> heads, int64_t budget_tokens) override;
  void Step(const LayerStep& step, std::vector<KeptSet>* kept) override { inner_->Step(step, kept); }
  KvOverride Kv(int head, int64_t position) const override;
  // InvalidArgument for a RoPE scaling RopeConfigIsExact refuses or an odd head_dim; then the inner policy's.
  absl::Status CheckTrace(const AttentionTraceHeader& header) const override;

 private:
  // One head's calibration inputs and outputs, the rows it was last given and their quantisation.
  struct HeadState {
    int64_t prompt_len = 0;
    int head_dim = 0;
    RopeConfig rope;
    int64_t seq_len = -1;                          // of the rows below; -1: none yet
    std::vector<float> source_keys, source_values;  // seq_len x head_dim, as last given (keys post-RoPE)
    std::vector<float> keys, values;                // dequantised, keys post-RoPE
    std::vector<NuqRange> key_ranges;               // per channel (step 2)
  };
  // Whether the calibration in hand was computed from exactly these heads' prompt rows and shapes.
  bool CalibratedOn(absl::Span<const HeadContext> heads) const;
  // Steps 1-2 for the keys' ranges and step 4 on the prompt rows; every row is then quantised again.
  void Calibrate(absl::Span<const HeadContext> heads);
  int64_t ValueOutliers(int d) const { return static_cast<int64_t>(std::floor(outlier_fraction_ * d)); }

  int bits_;
  double outlier_fraction_;
  std::unique_ptr<TokenPolicy> inner_;
  RopeTable rope_;
  std::vector<HeadState> heads_;
  NuqCodebook key_book_, value_book_;
  bool calibrated_ = false;
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_TOKEN_KVQUANT_POLICY_H_
