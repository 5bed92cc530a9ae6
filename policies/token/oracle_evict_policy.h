// File: policies/token/oracle_evict_policy.h
//
// "oracle_evict": the eviction bound, with hindsight. After prefill each prompt token of a KV head is
// scored by the attention mass it will receive from all future decode queries of the group,
// score_i = sum over decode steps t and group members j of a_{t,i} (true attention, full cache), and the
// prompt is evicted by that score (PromptScorePolicy; decode tokens are always kept). This is the best
// permanent eviction of the prompt for total future attention mass; it needs the future, so it is a
// bound, not a policy one can deploy. Kind: kEvict. The attention rows are read from the head's
// DecodeAttention when the caller has it (no second pass over the keys), else recomputed.
#ifndef KVSIM_POLICIES_TOKEN_ORACLE_EVICT_POLICY_H_
#define KVSIM_POLICIES_TOKEN_ORACLE_EVICT_POLICY_H_

#include "policies/token/prompt_score_policy.h"
#include "policies/token/token_policy_util.h"

namespace kvsim {

class OracleEvictPolicy final : public PromptScorePolicy {
 public:
  explicit OracleEvictPolicy(const TokenPolicyOptions&) {}
  std::string Name() const override { return "oracle_evict"; }
  std::vector<double> ScorePrompt(absl::Span<const HeadContext> heads, int h) override;

 private:
  static constexpr int64_t kStepBlock = 64;  // decode steps per GEMM: bounded scratch, reused per layer
  RowMatrixXf queries_;                      // (group_size * kStepBlock) x head_dim at most
  RowMatrixXf logits_;                       // (group_size * kStepBlock) x seq_len at most
  std::vector<double> member_sums_;          // group_size x prompt_len
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_TOKEN_ORACLE_EVICT_POLICY_H_
