// File: policies/token/token_policy_util.h
//
// Helpers shared by token policies: deterministic top-k, attention of the stored prompt queries, and the
// GQA conventions. Pure functions, thread-safe.
//
// Example:
//   std::vector<int32_t> best = TopKIndices(scores, 16);   // highest first; ties to the lower position
//   Eigen::MatrixXf a = PromptWindowAttention(head, 64);  // (group x 64) rows over the prompt keys
#ifndef KVSIM_POLICIES_TOKEN_TOKEN_POLICY_UTIL_H_
#define KVSIM_POLICIES_TOKEN_TOKEN_POLICY_UTIL_H_

#include <cstdint>
#include <vector>

#include "Eigen/Core"
#include "policies/token/token_policy.h"

namespace kvsim {

using RowMatrixXf = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// The indices of the k largest scores (k clamped to scores.size()), in decreasing score order; equal
// scores are ordered by increasing index. Deterministic.
std::vector<int32_t> TopKIndices(const std::vector<double>& scores, int64_t k);

// All indices ordered as TopKIndices would order them.
std::vector<int32_t> RankIndices(const std::vector<double>& scores);

// Attention probabilities of the last `window` prompt queries of every group member over the prompt keys:
// a (group_size * w) x prompt_len matrix, row j * w + r for member j and query position prompt_len - w + r,
// with w = min(window, prompt_len - query_start). Causal: row entries beyond the query's position are 0.
RowMatrixXf PromptWindowAttention(const HeadContext& head, int64_t window);

// Fills `kept` with the shared set {first `count` entries of ranking} + [from, to] (inclusive).
void KeepRankedPlusRange(const std::vector<int32_t>& ranking, int64_t count, int64_t from, int64_t to,
                         std::vector<int32_t>* kept);

}  // namespace kvsim

#endif  // KVSIM_POLICIES_TOKEN_TOKEN_POLICY_UTIL_H_
