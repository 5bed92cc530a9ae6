#include "policies/token/random_policy.h"

#include <random>

namespace kvsim {

std::vector<double> RandomPolicy::ScorePrompt(absl::Span<const HeadContext> heads, int h) {
  const HeadContext& head = heads[h];
  std::mt19937_64 rng(seed_ * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(head.layer) * 1000003ull +
                      static_cast<uint64_t>(head.kv_head));
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<double> scores(head.prompt_len);
  for (double& s : scores) s = uniform(rng);
  return scores;
}

KVSIM_REGISTER_TOKEN_POLICY("random", RandomPolicy);

}  // namespace kvsim
