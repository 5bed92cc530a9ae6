// File: policies/token/testing/token_policy_testing.h
//
// Test support for token policies (testonly): heads built from a hand-written logit matrix, and a plain
// reference loop that feeds a policy every decode step with attention rows computed directly in double
// precision. Independent of sim/quality_evaluator so that policy tests do not trust the evaluator.
//
// Example:
//   // 6 positions, prompt 4, queries stored from position 2; logits[t][i] for t = 2..5.
//   TestHead head = TestHead::FromLogits(/*prompt_len=*/4, /*query_start=*/2, {{...}, ...});
//   auto kept = RunPolicy(*policy, {&head}, /*budget=*/3);   // kept[step][head] = sorted positions
#ifndef KVSIM_POLICIES_TOKEN_TESTING_TOKEN_POLICY_TESTING_H_
#define KVSIM_POLICIES_TOKEN_TESTING_TOKEN_POLICY_TESTING_H_

#include <cstdint>
#include <vector>

#include "policies/token/token_policy.h"

namespace kvsim {

// A KV head that owns its tensors.
struct TestHead {
  int group_size = 1;
  int head_dim = 0;
  int64_t prompt_len = 0, seq_len = 0, query_start = 0;
  int32_t layer = 0, num_model_layers = 1, kv_head = 0;
  std::vector<float> keys, values, queries, column_sums;

  // Keys are sqrt(d) * e_i (d = seq_len channels, one per position), so a query equal to a logit row
  // gives exactly those logits: q.k_i / sqrt(d) = logits[i]. logits[j][t - query_start] is the row of group
  // member j at position t (entries beyond t are ignored). Values: v_i = e_i (d channels) unless set.
  static TestHead FromLogits(int64_t prompt_len, int64_t query_start,
                             const std::vector<std::vector<std::vector<double>>>& logits);
  HeadContext context() const;
};

// Softmax of q_t . k_i / sqrt(d) over i = 0..t for member j, in double precision.
std::vector<double> ReferenceRow(const TestHead& head, int j, int64_t t);

// Runs `policy` over every decode step of `heads` (one layer) with budget `budget`; returns, per step,
// per head, per query head of the group, the sorted kept positions (a shared set is repeated).
std::vector<std::vector<std::vector<std::vector<int32_t>>>> RunPolicy(TokenPolicy& policy,
                                                                      const std::vector<const TestHead*>& heads,
                                                                      int64_t budget);

}  // namespace kvsim

#endif  // KVSIM_POLICIES_TOKEN_TESTING_TOKEN_POLICY_TESTING_H_
