// File: policies/token/pyramidkv_policy.h
//
// "pyramidkv" (Cai et al. 2024, "PyramidKV: Dynamic KV Cache Compression based on Pyramidal Information
// Funneling"; budget formula as in kvpress PyramidKVPress): SnapKV scores, with a per-layer budget that
// falls linearly from the first layer to the last. With target T = B, window W = 64, n = prompt_len,
// beta = 20, L = model layers, l = model layer:
//   min = T / beta;  max = 2T - min;  if max >= n - W: max = n - W, min = 2T - max;
//   if not (n >= max >= min >= W): B_l = T (falls back to SnapKV); else B_l = round(max - l (max - min)/(L-1)).
// Over all layers the budgets average to T. Kind: kEvict (permanent).
#ifndef KVSIM_POLICIES_TOKEN_PYRAMIDKV_POLICY_H_
#define KVSIM_POLICIES_TOKEN_PYRAMIDKV_POLICY_H_

#include "policies/token/snapkv_policy.h"

namespace kvsim {

class PyramidKvPolicy final : public SnapKvPolicy {
 public:
  static constexpr double kBeta = 20.0;
  explicit PyramidKvPolicy(const TokenPolicyOptions& options) : SnapKvPolicy(options) {}
  std::string Name() const override { return "pyramidkv"; }
  std::vector<int64_t> HeadBudgets(absl::Span<const HeadContext> heads, const std::vector<std::vector<double>>& scores,
                                   int64_t budget_tokens) override;
};

// B_l of the formula above.
int64_t PyramidLayerBudget(int64_t target, int64_t prompt_len, int64_t window, int layer, int num_layers, double beta);

}  // namespace kvsim

#endif  // KVSIM_POLICIES_TOKEN_PYRAMIDKV_POLICY_H_
