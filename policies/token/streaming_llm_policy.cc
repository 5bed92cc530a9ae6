#include "policies/token/streaming_llm_policy.h"

#include <algorithm>

namespace kvsim {

void StreamingLlmPolicy::BeginLayer(absl::Span<const HeadContext> heads, int64_t budget_tokens) {
  num_heads_ = heads.size();
  budget_ = budget_tokens;
}

void StreamingLlmPolicy::Step(const LayerStep& step, std::vector<KeptSet>* kept) {
  const int64_t n = step.position + 1;
  std::vector<int32_t> set;
  if (n <= budget_) {
    for (int64_t i = 0; i < n; ++i) set.push_back(static_cast<int32_t>(i));
  } else {
    const int64_t sinks = std::min(kNumSinks, budget_ - 1);
    for (int64_t i = 0; i < sinks; ++i) set.push_back(static_cast<int32_t>(i));
    for (int64_t i = n - (budget_ - sinks); i < n; ++i) set.push_back(static_cast<int32_t>(i));
  }
  for (size_t h = 0; h < num_heads_; ++h) (*kept)[h].per_query.assign(1, set);
}

KVSIM_REGISTER_TOKEN_POLICY("streaming_llm", StreamingLlmPolicy);

}  // namespace kvsim
