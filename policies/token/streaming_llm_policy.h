// File: policies/token/streaming_llm_policy.h
//
// "streaming_llm" (Xiao et al. 2023, "Efficient Streaming Language Models with Attention Sinks"): at
// every decode step at position p keep the S = min(4, B - 1) attention sinks 0..S-1 plus the most recent
// B - S tokens p-B+S+1..p (the paper's rolling window; one set for all heads). Positions are not
// re-assigned inside the cache (the trace's keys carry their original RoPE). Kind: kEvict (permanent: a
// token leaving the window never returns).
#ifndef KVSIM_POLICIES_TOKEN_STREAMING_LLM_POLICY_H_
#define KVSIM_POLICIES_TOKEN_STREAMING_LLM_POLICY_H_

#include "policies/token/token_policy.h"

namespace kvsim {

class StreamingLlmPolicy final : public TokenPolicy {
 public:
  static constexpr int64_t kNumSinks = 4;
  explicit StreamingLlmPolicy(const TokenPolicyOptions&) {}
  std::string Name() const override { return "streaming_llm"; }
  Kind kind() const override { return Kind::kEvict; }
  void BeginLayer(absl::Span<const HeadContext> heads, int64_t budget_tokens) override;
  void Step(const LayerStep& step, std::vector<KeptSet>* kept) override;

 private:
  size_t num_heads_ = 0;
  int64_t budget_ = 0;
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_TOKEN_STREAMING_LLM_POLICY_H_
