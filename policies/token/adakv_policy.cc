#include "policies/token/adakv_policy.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "policies/token/internal/adakv_budgets.h"
#include "policies/token/token_policy_util.h"

namespace kvsim {

std::vector<int64_t> AdaKvPolicy::HeadBudgets(absl::Span<const HeadContext> heads,
                                              const std::vector<std::vector<double>>& scores, int64_t budget_tokens) {
  return AdaKvBudgets(scores, budget_tokens, kSafeguard);
}

KVSIM_REGISTER_TOKEN_POLICY_WRAPPER("adakv",
                                    [](const TokenPolicyOptions&,
                                       std::unique_ptr<TokenPolicy> inner) -> std::unique_ptr<TokenPolicy> {
                                      auto* scored = dynamic_cast<PromptScorePolicy*>(inner.get());
                                      if (scored == nullptr) return nullptr;
                                      inner.release();
                                      return std::make_unique<AdaKvPolicy>(std::unique_ptr<PromptScorePolicy>(scored));
                                    });

}  // namespace kvsim
