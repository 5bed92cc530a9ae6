// File: policies/token/random_policy.h
//
// "random" (kvpress RandomPress): after prefill, each KV head's prompt tokens get independent uniform
// random scores; the lowest are evicted (PromptScorePolicy). The engine is std::mt19937_64 seeded from
// the options' seed, the layer and the KV head, so a run is reproducible. Kind: kEvict (permanent).
#ifndef KVSIM_POLICIES_TOKEN_RANDOM_POLICY_H_
#define KVSIM_POLICIES_TOKEN_RANDOM_POLICY_H_

#include "policies/token/prompt_score_policy.h"

namespace kvsim {

class RandomPolicy final : public PromptScorePolicy {
 public:
  explicit RandomPolicy(const TokenPolicyOptions& options) : seed_(options.seed) {}
  std::string Name() const override { return "random"; }
  std::vector<double> ScorePrompt(absl::Span<const HeadContext> heads, int h) override;

 private:
  uint64_t seed_;
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_TOKEN_RANDOM_POLICY_H_
