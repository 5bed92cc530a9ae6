#include "policies/token/oracle_evict_policy.h"

#include <algorithm>
#include <cmath>

#include "policies/token/token_policy_util.h"
#include "util/huge_pages.h"

namespace kvsim {

std::vector<double> OracleEvictPolicy::ScorePrompt(absl::Span<const HeadContext> heads, int h) {
  const HeadContext& head = heads[h];
  const int64_t n = head.seq_len, steps = head.seq_len - head.prompt_len;
  std::vector<double> scores(head.prompt_len, 0.0);
  if (steps == 0) return scores;
  const int d = head.head_dim;
  Eigen::Map<const RowMatrixXf> keys(head.keys, n, d);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  // Member-major, steps in order (the summation order of one pass over all steps), in blocks of steps
  // so the logits scratch stays bounded and is reused instead of allocated per member.
  if (logits_.rows() != std::min(kStepBlock, steps) || logits_.cols() != n) {
    logits_.resize(std::min(kStepBlock, steps), n);  // kept while the size repeats
    AdviseHugePages(logits_.data(), logits_.size() * sizeof(float));
  }
  for (int j = 0; j < head.group_size; ++j) {
    for (int64_t s0 = 0; s0 < steps; s0 += kStepBlock) {
      const int64_t count = std::min(kStepBlock, steps - s0);
      Eigen::Map<const RowMatrixXf> queries(head.query(j, head.prompt_len + s0), count, d);
      logits_.topRows(count).noalias() = queries * keys.transpose();
      for (int64_t s = 0; s < count; ++s) {
        const int64_t position = head.prompt_len + s0 + s;
        auto visible = logits_.row(s).head(position + 1).array();
        const float max_logit = visible.maxCoeff() * scale;
        visible = (visible * scale - max_logit).exp();
        const double inv = 1.0 / visible.cast<double>().sum();
        const float* r = logits_.row(s).data();
        for (int64_t i = 0; i < head.prompt_len; ++i) scores[i] += r[i] * inv;
      }
    }
  }
  return scores;
}

KVSIM_REGISTER_TOKEN_POLICY("oracle_evict", OracleEvictPolicy);

}  // namespace kvsim
