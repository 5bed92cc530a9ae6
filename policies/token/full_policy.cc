#include "policies/token/full_policy.h"

namespace kvsim {

void FullPolicy::BeginLayer(absl::Span<const HeadContext> heads, int64_t) { num_heads_ = heads.size(); }

void FullPolicy::Step(const LayerStep& step, std::vector<KeptSet>* kept) {
  for (size_t h = 0; h < num_heads_; ++h) {
    (*kept)[h].per_query.resize(1);
    auto& set = (*kept)[h].per_query[0];
    set.resize(step.position + 1);
    for (int64_t i = 0; i <= step.position; ++i) set[i] = static_cast<int32_t>(i);
  }
}

KVSIM_REGISTER_TOKEN_POLICY("full", FullPolicy);

}  // namespace kvsim
