// File: policies/token/kivi_policy.h
//
// "kivi2", "kivi3", "kivi4", "kivi8" (Liu et al. 2024, "KIVI: A Tuning-Free Asymmetric 2bit Quantization for KV
// Cache"): asymmetric min/max quantisation at b bits, x^ = min + s * round((x - min) / s) with
// s = (max - min) / (2^b - 1) (x^ = min when max = min):
//   keys per channel: groups of G = 32 consecutive tokens share each channel's min and max;
//   values per token: groups of G = 32 consecutive channels share each token's min and max.
// The recent tokens stay in full precision: at position p, keys are quantised only in complete groups
// of R = 32 flushed tokens (positions < floor((p + 1) / R) * R), values for every token older than the
// last R (positions < p + 1 - R).
// A wrapper: "kivi4" alone keeps every token; "kivi4+h2o" quantises what H2O keeps. Kind: kQuantize.
#ifndef KVSIM_POLICIES_TOKEN_KIVI_POLICY_H_
#define KVSIM_POLICIES_TOKEN_KIVI_POLICY_H_

#include <memory>

#include "policies/token/token_policy.h"

namespace kvsim {

class KiviPolicy final : public TokenPolicy {
 public:
  static constexpr int64_t kGroup = 32;     // G
  static constexpr int64_t kResidual = 32;  // R
  KiviPolicy(int bits, std::unique_ptr<TokenPolicy> inner);
  std::string Name() const override;
  Kind kind() const override { return Kind::kQuantize; }
  void BeginLayer(absl::Span<const HeadContext> heads, int64_t budget_tokens) override;
  void Step(const LayerStep& step, std::vector<KeptSet>* kept) override { inner_->Step(step, kept); }
  KvOverride Kv(int head, int64_t position) const override;
  absl::Status CheckTrace(const AttentionTraceHeader& header) const override { return inner_->CheckTrace(header); }

 private:
  int bits_;
  std::unique_ptr<TokenPolicy> inner_;
  std::vector<std::vector<float>> keys_, values_;  // dequantised, per head
};

// Quantises `count` contiguous values as one group with `bits` bits, KIVI's rule: out[i] is in[i]
// dequantised. out may be in (in place).
void QuantizeGroup(const float* in, int64_t count, int bits, float* out);

// Dequantised copies: keys per channel in token groups of `group`, values per token in channel groups.
std::vector<float> QuantizeKeysPerChannel(const float* keys, int64_t tokens, int dim, int64_t group, int bits);
std::vector<float> QuantizeValuesPerToken(const float* values, int64_t tokens, int dim, int64_t group, int bits);
// The same into *out, reusing its storage.
void QuantizeKeysPerChannelInto(const float* keys, int64_t tokens, int dim, int64_t group, int bits,
                                std::vector<float>* out);
void QuantizeValuesPerTokenInto(const float* values, int64_t tokens, int dim, int64_t group, int bits,
                                std::vector<float>* out);

}  // namespace kvsim

#endif  // KVSIM_POLICIES_TOKEN_KIVI_POLICY_H_
