// File: policies/token/internal/adakv_budgets.h
//
// AdaKV's budget rule alone (policies/token/adakv_policy.h describes it), for the policy and its tests;
// not part of the token-policy interface.
#ifndef KVSIM_POLICIES_TOKEN_INTERNAL_ADAKV_BUDGETS_H_
#define KVSIM_POLICIES_TOKEN_INTERNAL_ADAKV_BUDGETS_H_

#include <cstdint>
#include <vector>

namespace kvsim {

// The per-head budgets of the rule in adakv_policy.h for the prompt scores of a layer's heads (scores[h][i]
// of token i at head h), a mean budget of `budget` tokens per head and a safeguard share `safeguard`.
std::vector<int64_t> AdaKvBudgets(const std::vector<std::vector<double>>& scores, int64_t budget, double safeguard);

}  // namespace kvsim

#endif  // KVSIM_POLICIES_TOKEN_INTERNAL_ADAKV_BUDGETS_H_
