// File: policies/token/full_policy.h
//
// "full": the uncompressed cache, the reference every other policy is measured against. Keeps every
// token 0..p at every step, whatever the budget. Kind: kFull (nothing is evicted or skipped).
#ifndef KVSIM_POLICIES_TOKEN_FULL_POLICY_H_
#define KVSIM_POLICIES_TOKEN_FULL_POLICY_H_

#include "policies/token/token_policy.h"

namespace kvsim {

class FullPolicy final : public TokenPolicy {
 public:
  explicit FullPolicy(const TokenPolicyOptions&) {}
  std::string Name() const override { return "full"; }
  Kind kind() const override { return Kind::kFull; }
  void BeginLayer(absl::Span<const HeadContext> heads, int64_t budget_tokens) override;
  void Step(const LayerStep& step, std::vector<KeptSet>* kept) override;

 private:
  size_t num_heads_ = 0;
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_TOKEN_FULL_POLICY_H_
