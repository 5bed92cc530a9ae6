// File: policies/token/tova_policy.h
//
// "tova" (Oren et al. 2024, "Transformers are Multi-State RNNs"): one cache per layer, shared by its
// heads. At each decode step at position p the query attends to the cache plus token p (B tokens at most);
// then, if that is more than B - 1 tokens, the token with the lowest attention of this query, averaged
// over the layer's query heads (each head's row renormalised over the attended set), is evicted (ties:
// lower position). After prefill the prompt is cut to B - 1 the same way using the last prompt query (as
// kvpress TOVAPress does); without stored prompt queries the last B - 1 prompt tokens are kept. Averages
// run over the layer's heads present in the trace. Kind: kEvict (permanent).
#ifndef KVSIM_POLICIES_TOKEN_TOVA_POLICY_H_
#define KVSIM_POLICIES_TOKEN_TOVA_POLICY_H_

#include "policies/token/token_policy.h"

namespace kvsim {

class TovaPolicy final : public TokenPolicy {
 public:
  explicit TovaPolicy(const TokenPolicyOptions&) {}
  std::string Name() const override { return "tova"; }
  Kind kind() const override { return Kind::kEvict; }
  void BeginLayer(absl::Span<const HeadContext> heads, int64_t budget_tokens) override;
  void Step(const LayerStep& step, std::vector<KeptSet>* kept) override;

 private:
  int64_t budget_ = 0;
  std::vector<int> group_sizes_;
  std::vector<int32_t> cache_;
  std::vector<double> score_;  // scratch, seq_len
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_TOKEN_TOVA_POLICY_H_
