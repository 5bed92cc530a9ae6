// File: policies/token/scissorhands_policy.h
//
// "scissorhands" (Liu et al. 2023, "Scissorhands: Exploiting the Persistence of Importance Hypothesis for
// LLM KV Cache Compression at Test Time"), per KV head. A token is "unimportant" at a step when its
// attention (renormalised over the cache, averaged over the group's query heads) is below the uniform
// share 1 / |cache|. Each token's count of unimportant steps is kept over a history of the last w = 32
// steps. When the cache exceeds B, a batch is dropped: the tokens with the highest counts (ties: older
// first) outside the recent r = max(1, B / 8) tokens, until m = max(1, B / 16) slots are free (drops come
// in batches, so the cache sits between B - m and B). After prefill the counts come from the stored
// prompt-window queries and the prompt is cut to B - m the same way. At each decode step token p enters,
// a batch is dropped if needed, then the query attends to the cache. The history, threshold, r and m are
// this implementation's reading of the paper (its values are not fixed there). Kind: kEvict (permanent).
#ifndef KVSIM_POLICIES_TOKEN_SCISSORHANDS_POLICY_H_
#define KVSIM_POLICIES_TOKEN_SCISSORHANDS_POLICY_H_

#include <deque>

#include "policies/token/token_policy.h"

namespace kvsim {

class ScissorhandsPolicy final : public TokenPolicy {
 public:
  static constexpr int kHistory = 32;
  explicit ScissorhandsPolicy(const TokenPolicyOptions&) {}
  std::string Name() const override { return "scissorhands"; }
  Kind kind() const override { return Kind::kEvict; }
  void BeginLayer(absl::Span<const HeadContext> heads, int64_t budget_tokens) override;
  void Step(const LayerStep& step, std::vector<KeptSet>* kept) override;

 private:
  struct HeadState {
    std::vector<int32_t> cache;
    std::vector<int32_t> counts;               // per position
    std::deque<std::vector<int32_t>> history;  // per recorded step: the positions found unimportant
    int group_size = 1;
  };
  // Records one step: each cached token's attention from `rows` (num_rows group members' rows, indexed
  // by position), renormalised over the cache and averaged over the rows, against the uniform share.
  // `prefix`: the cache is exactly positions 0..size-1 in order (the prompt, before any eviction).
  void Record(HeadState& state, const float* const* rows, int num_rows, bool prefix);
  std::vector<double> share_, values_;  // Record() scratch, per cached token
  std::vector<int32_t> low_;            // Record() scratch: the positions found unimportant
  std::vector<const float*> rows_;      // Step()'s rows for Record()
  void DropBatch(HeadState& state, int64_t position);

  int64_t budget_ = 0, recent_ = 1, batch_ = 1;
  std::vector<HeadState> heads_;
};

}  // namespace kvsim

#endif  // KVSIM_POLICIES_TOKEN_SCISSORHANDS_POLICY_H_
