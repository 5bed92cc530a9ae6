// File: policies/token/oracle_select_policy.h
//
// "oracle_select": the selection bound. At every decode step each query head reads the B tokens with the
// largest true attention a_{t,i} (ties: lower position first). No policy that reads at most B tokens per
// query head can have a higher attention-mass recall at that step. Kind: kSelect (nothing is evicted).
#ifndef KVSIM_POLICIES_TOKEN_ORACLE_SELECT_POLICY_H_
#define KVSIM_POLICIES_TOKEN_ORACLE_SELECT_POLICY_H_

#include "policies/token/token_policy.h"
#include "policies/token/token_policy_util.h"

namespace kvsim {

class OracleSelectPolicy final : public TokenPolicy {
 public:
  explicit OracleSelectPolicy(const TokenPolicyOptions&) {}
  std::string Name() const override { return "oracle_select"; }
  Kind kind() const override { return Kind::kSelect; }
  void BeginLayer(absl::Span<const HeadContext> heads, int64_t budget_tokens) override;
  void Step(const LayerStep& step, std::vector<KeptSet>* kept) override;

 private:
  std::vector<int> group_sizes_;
  int64_t budget_ = 0;
  TopKScratch scratch_;
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_TOKEN_ORACLE_SELECT_POLICY_H_
