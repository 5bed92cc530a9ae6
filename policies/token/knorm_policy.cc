#include "policies/token/knorm_policy.h"

#include <cmath>

namespace kvsim {

std::vector<double> KnormPolicy::ScorePrompt(absl::Span<const HeadContext> heads, int h) {
  const HeadContext& head = heads[h];
  std::vector<double> scores(head.prompt_len);
  for (int64_t i = 0; i < head.prompt_len; ++i) {
    double sum = 0;
    for (int c = 0; c < head.head_dim; ++c) sum += static_cast<double>(head.key(i)[c]) * head.key(i)[c];
    scores[i] = -std::sqrt(sum);
  }
  return scores;
}

KVSIM_REGISTER_TOKEN_POLICY("knorm", KnormPolicy);

}  // namespace kvsim
