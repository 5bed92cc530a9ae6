#include "policies/token/oracle_select_policy.h"

#include "policies/token/token_policy_util.h"

namespace kvsim {

void OracleSelectPolicy::BeginLayer(absl::Span<const HeadContext> heads, int64_t budget_tokens) {
  group_sizes_.clear();
  for (const HeadContext& h : heads) group_sizes_.push_back(h.group_size);
  budget_ = budget_tokens;
}

void OracleSelectPolicy::Step(const LayerStep& step, std::vector<KeptSet>* kept) {
  const int64_t n = step.position + 1;
  for (size_t h = 0; h < group_sizes_.size(); ++h) {
    (*kept)[h].per_query.resize(group_sizes_[h]);
    for (int j = 0; j < group_sizes_[h]; ++j) {
      TopKSet(step.heads[h].row(j), n, budget_, &scratch_, &(*kept)[h].per_query[j]);
    }
  }
}

KVSIM_REGISTER_TOKEN_POLICY("oracle_select", OracleSelectPolicy);

}  // namespace kvsim
