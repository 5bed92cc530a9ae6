#include "sim/train/kvp_target.h"

#include <algorithm>
#include <cmath>

#include "Eigen/Core"
#include "absl/strings/str_cat.h"
#include "policies/token/token_policy_util.h"

namespace kvsim {

absl::StatusOr<std::vector<double>> FutureImportance(const AttentionTraceHeader& header, const AttentionSample& sample,
                                                     const HeadTensors& head, int64_t split, int64_t future_queries) {
  const int64_t n = split, f = future_queries, seq_len = sample.seq_len();
  if (n < 1 || f < 1 || n < sample.query_start || n + f > seq_len) {
    return absl::InvalidArgumentError(
        absl::StrCat("future importance of layer ", head.layer, ", KV head ", head.kv_head, ": cache of ", n,
                     " tokens and ", f, " future queries need stored queries at positions ", n, "..", n + f - 1,
                     "; the sample stores ", sample.query_start, "..", seq_len - 1));
  }
  const int d = header.head_dim, group = header.group_size();
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const int64_t num_queries = sample.num_queries();
  using Keys = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
  const Keys keys(head.keys.data(), n + f, d);
  std::vector<double> importance(n, 0.0);
  std::vector<float> best(n);
  Eigen::VectorXf row(n + f);
  for (int64_t j = n; j < n + f; ++j) {
    std::fill(best.begin(), best.end(), 0.0f);
    for (int g = 0; g < group; ++g) {
      const Eigen::Map<const Eigen::VectorXf> q(head.queries.data() + (g * num_queries + (j - sample.query_start)) * d,
                                                d);
      row.head(j + 1).noalias() = keys.topRows(j + 1) * q;
      SoftmaxRow(row.data(), j + 1, scale);
      for (int64_t i = 0; i < n; ++i) best[i] = std::max(best[i], row[i]);
    }
    for (int64_t i = 0; i < n; ++i) importance[i] += best[i];
  }
  return importance;
}

}  // namespace kvsim
