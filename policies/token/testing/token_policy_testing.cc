#include "policies/token/testing/token_policy_testing.h"

#include <algorithm>
#include <cmath>

#include "util/check.h"

namespace kvsim {

TestHead TestHead::FromLogits(int64_t prompt_len, int64_t query_start,
                              const std::vector<std::vector<std::vector<double>>>& logits) {
  TestHead h;
  h.group_size = static_cast<int>(logits.size());
  KVSIM_CHECK(h.group_size > 0);
  const int64_t num_queries = static_cast<int64_t>(logits[0].size());
  h.prompt_len = prompt_len;
  h.query_start = query_start;
  h.seq_len = query_start + num_queries;
  const int64_t n = h.seq_len;
  h.head_dim = static_cast<int>(n);
  const float sqrt_d = std::sqrt(static_cast<float>(n));
  h.keys.assign(n * n, 0.0f);
  h.values.assign(n * n, 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    h.keys[i * n + i] = sqrt_d;
    h.values[i * n + i] = 1.0f;
  }
  h.queries.assign(h.group_size * num_queries * n, 0.0f);
  for (int j = 0; j < h.group_size; ++j) {
    KVSIM_CHECK(static_cast<int64_t>(logits[j].size()) == num_queries);
    for (int64_t r = 0; r < num_queries; ++r) {
      for (int64_t i = 0; i < n && i < static_cast<int64_t>(logits[j][r].size()); ++i) {
        h.queries[(j * num_queries + r) * n + i] = static_cast<float>(logits[j][r][i]);
      }
    }
  }
  return h;
}

HeadContext TestHead::context() const {
  HeadContext c;
  c.layer = layer;
  c.num_model_layers = num_model_layers;
  c.kv_head = kv_head;
  c.group_size = group_size;
  c.head_dim = head_dim;
  c.prompt_len = prompt_len;
  c.seq_len = seq_len;
  c.query_start = query_start;
  c.keys = keys.data();
  c.values = values.data();
  c.queries = queries.data();
  c.column_sums = column_sums.empty() ? nullptr : column_sums.data();
  return c;
}

std::vector<double> ReferenceRow(const TestHead& head, int j, int64_t t) {
  const HeadContext c = head.context();
  const float* q = c.query(j, t);
  std::vector<double> row(t + 1);
  double max_logit = -1e300;
  for (int64_t i = 0; i <= t; ++i) {
    double dot = 0;
    for (int k = 0; k < c.head_dim; ++k) dot += static_cast<double>(q[k]) * c.key(i)[k];
    row[i] = dot / std::sqrt(static_cast<double>(c.head_dim));
    max_logit = std::max(max_logit, row[i]);
  }
  double total = 0;
  for (double& x : row) total += (x = std::exp(x - max_logit));
  for (double& x : row) x /= total;
  return row;
}

std::vector<std::vector<std::vector<std::vector<int32_t>>>> RunPolicy(TokenPolicy& policy,
                                                                      const std::vector<const TestHead*>& heads,
                                                                      int64_t budget) {
  std::vector<HeadContext> contexts;
  for (const TestHead* h : heads) contexts.push_back(h->context());
  policy.BeginLayer(contexts, budget);
  std::vector<std::vector<std::vector<std::vector<int32_t>>>> result;
  const TestHead& first = *heads[0];
  for (int64_t p = first.prompt_len; p < first.seq_len; ++p) {
    std::vector<std::vector<float>> rows(heads.size());
    LayerStep step;
    step.position = p;
    for (size_t h = 0; h < heads.size(); ++h) {
      for (int j = 0; j < heads[h]->group_size; ++j) {
        for (double x : ReferenceRow(*heads[h], j, p)) rows[h].push_back(static_cast<float>(x));
      }
      step.heads.push_back(HeadStep{rows[h].data(), p + 1});
    }
    std::vector<KeptSet> kept(heads.size());
    policy.Step(step, &kept);
    std::vector<std::vector<std::vector<int32_t>>> per_head;
    for (size_t h = 0; h < heads.size(); ++h) {
      std::vector<std::vector<int32_t>> per_query;
      for (int j = 0; j < heads[h]->group_size; ++j) {
        const auto& sets = kept[h].per_query;
        KVSIM_CHECK(sets.size() == 1 || static_cast<int>(sets.size()) == heads[h]->group_size);
        std::vector<int32_t> set = sets.size() == 1 ? sets[0] : sets[j];
        std::sort(set.begin(), set.end());
        per_query.push_back(set);
      }
      per_head.push_back(per_query);
    }
    result.push_back(per_head);
  }
  return result;
}

}  // namespace kvsim
