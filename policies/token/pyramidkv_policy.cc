#include "policies/token/pyramidkv_policy.h"

#include <algorithm>
#include <cmath>

namespace kvsim {

int64_t PyramidLayerBudget(int64_t target, int64_t prompt_len, int64_t window, int layer, int num_layers, double beta) {
  const double t = static_cast<double>(target), n = static_cast<double>(prompt_len);
  const double w = static_cast<double>(window);
  double min_num = t / beta;
  double max_num = 2 * t - min_num;
  if (max_num >= n - w) {
    max_num = n - w;
    min_num = 2 * t - max_num;
  }
  if (num_layers < 2 || !(n >= max_num && max_num >= min_num && min_num >= w)) return target;
  const double steps = (max_num - min_num) / (num_layers - 1);
  return static_cast<int64_t>(std::llround(max_num - layer * steps));
}

std::vector<int64_t> PyramidKvPolicy::HeadBudgets(absl::Span<const HeadContext> heads,
                                                  const std::vector<std::vector<double>>& scores,
                                                  int64_t budget_tokens) {
  const HeadContext& h = heads[0];
  const int64_t window = std::min<int64_t>(kWindow, h.prompt_len - h.query_start);
  return std::vector<int64_t>(
      heads.size(), PyramidLayerBudget(budget_tokens, h.prompt_len, window, h.layer, h.num_model_layers, kBeta));
}

KVSIM_REGISTER_TOKEN_POLICY("pyramidkv", PyramidKvPolicy);

}  // namespace kvsim
