#include "policies/token/oracle_evict_policy.h"

#include <algorithm>
#include <cmath>

#include "policies/token/token_policy_util.h"
#include "util/float_gemm.h"
#include "util/huge_pages.h"

namespace kvsim {

std::vector<double> OracleEvictPolicy::ScorePrompt(absl::Span<const HeadContext> heads, int h) {
  const HeadContext& head = heads[h];
  const int64_t n = head.seq_len, steps = head.seq_len - head.prompt_len;
  std::vector<double> scores(head.prompt_len, 0.0);
  if (steps == 0) return scores;
  // Each member's sum runs over the steps in order, in double; the members' sums are added in member
  // order at the end. The rows are the caller's when it has them (the same bits: SoftmaxRow of the same
  // GEMM's logits), else computed here.
  const int g = head.group_size;
  member_sums_.assign(static_cast<size_t>(g) * head.prompt_len, 0.0);
  const auto add_row = [&](int j, const float* row) {
    AddToDoubles(row, head.prompt_len, &member_sums_[j * head.prompt_len]);
  };
  const DecodeAttention& given = head.decode_attention;
  if (given.probs != nullptr && given.steps == steps) {
    for (int j = 0; j < g; ++j) {
      for (int64_t t = 0; t < steps; ++t) add_row(j, given.row(j, t));
    }
  } else {
    // In blocks of steps, the group's queries as one matrix: one GEMM (one packing of the keys) per
    // block, with bounded scratch reused from layer to layer.
    const int d = head.head_dim;
    Eigen::Map<const RowMatrixXf> keys(head.keys, n, d);
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    const int64_t block = std::min(kStepBlock, steps);
    if (logits_.rows() != g * block || logits_.cols() != n) {
      logits_.resize(g * block, n);  // kept while the size repeats
      AdviseHugePages(logits_.data(), logits_.size() * sizeof(float));
    }
    queries_.resize(g * block, d);
    for (int64_t s0 = 0; s0 < steps; s0 += block) {
      const int64_t count = std::min(block, steps - s0);
      for (int j = 0; j < g; ++j) {
        queries_.middleRows(j * count, count) =
            Eigen::Map<const RowMatrixXf>(head.query(j, head.prompt_len + s0), count, d);
      }
      GemmABt(queries_.data(), d, keys.data(), d, g * count, n, d, logits_.data(), n);
      for (int j = 0; j < g; ++j) {
        for (int64_t t = 0; t < count; ++t) {
          float* row = logits_.row(j * count + t).data();
          SoftmaxRow(row, head.prompt_len + s0 + t + 1, scale);  // causal: up to the step's own position
          add_row(j, row);
        }
      }
    }
  }
  for (int j = 0; j < g; ++j) {
    for (int64_t i = 0; i < head.prompt_len; ++i) scores[i] += member_sums_[j * head.prompt_len + i];
  }
  return scores;
}

KVSIM_REGISTER_TOKEN_POLICY("oracle_evict", OracleEvictPolicy);

}  // namespace kvsim
