// File: policies/token/h2o_policy.h
//
// "h2o" (Zhang et al. 2023, "H2O: Heavy-Hitter Oracle for Efficient Generative Inference"): per KV head,
// heavy-hitter scores hh_i = accumulated attention received by token i, summed over the group's query
// heads. Prefill seeds them with the trace's prefill column sums (or, if absent, with the attention of the
// stored prompt-window queries). The prompt is cut to B: the last B_r prompt tokens plus the B - B_r
// others with the largest hh (B_r = max(1, B / 2), the paper's equal heavy/recent split). At each decode
// step at position p: token p enters; if the cache then exceeds B, the token with the smallest hh outside
// the recent window (positions > p - B_r) is evicted (ties: lower position); the query attends to the
// cache; hh_i += a_{p,i} renormalised over the cache, per group member. Kind: kEvict (permanent).
#ifndef KVSIM_POLICIES_TOKEN_H2O_POLICY_H_
#define KVSIM_POLICIES_TOKEN_H2O_POLICY_H_

#include "policies/token/token_policy.h"

namespace kvsim {

class H2oPolicy final : public TokenPolicy {
 public:
  explicit H2oPolicy(const TokenPolicyOptions&) {}
  std::string Name() const override { return "h2o"; }
  Kind kind() const override { return Kind::kEvict; }
  void BeginLayer(absl::Span<const HeadContext> heads, int64_t budget_tokens) override;
  void Step(const LayerStep& step, std::vector<KeptSet>* kept) override;

 private:
  struct HeadState {
    std::vector<double> hh;      // seq_len scores
    std::vector<int32_t> cache;  // resident positions, any order
    int group_size = 1;
  };
  int64_t budget_ = 0;
  int64_t recent_ = 0;
  std::vector<HeadState> heads_;
  std::vector<float> gathered_;  // Step() scratch
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_TOKEN_H2O_POLICY_H_
