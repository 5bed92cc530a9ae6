// File: policies/token/token_policy_util.h
//
// Helpers shared by token policies: deterministic top-k, attention of the stored prompt queries, and the
// GQA conventions. Pure functions, thread-safe (a shared PromptAttentionCache included).
//
// Example:
//   std::vector<int32_t> best = TopKIndices(scores, 16);   // highest first; ties to the lower position
//   Eigen::MatrixXf a = PromptWindowAttention(head, 64);  // (group x 64) rows over the prompt keys
#ifndef KVSIM_POLICIES_TOKEN_TOKEN_POLICY_UTIL_H_
#define KVSIM_POLICIES_TOKEN_TOKEN_POLICY_UTIL_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "policies/token/token_policy.h"

namespace kvsim {

using RowMatrixXf = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// The attention of the last `window` stored prompt queries of each group member, rows as in
// PromptWindowAttention(); filled on first use (see HeadContext::prompt_cache). Thread-safe: policies on
// several threads may share one (the first to need an entry computes it while the others wait; entries
// never change once filled, until Reset()).
struct PromptAttentionCache {
  static constexpr int64_t kMaxWindow = 128;  // larger windows are computed without the cache
  std::mutex window_mutex;                    // guards window and probs
  int64_t window = 0;                         // 0 = empty
  RowMatrixXf probs;
  // Prompt scores derived from the window, by rule and parameters (e.g. "snapkv/64/5"), for the policies
  // that apply the same rule to the same head (SnapKV, PyramidKV, AdaKV around either). Held while an
  // entry is computed (which may take window_mutex: always in that order).
  std::mutex scores_mutex;
  std::map<std::string, std::vector<double>> scores;

  // Empties the cache for another layer or sample (the window's storage is kept). REQUIRES: no other
  // thread uses the cache.
  void Reset() {
    window = 0;
    scores.clear();
  }
};

// The column sums of `count` consecutive rows of `cols` floats starting at `rows`, in float, added one row
// at a time in row order: contiguous vector additions (a colwise() sum of a row-major matrix walks each
// column with a stride of a whole row). count = 0 gives zeros.
Eigen::VectorXf ColumnSums(const float* rows, int64_t count, int64_t cols);

// The indices of the k largest scores (k clamped to scores.size()), in decreasing score order; equal
// scores are ordered by increasing index. Deterministic.
std::vector<int32_t> TopKIndices(const std::vector<double>& scores, int64_t k);

// The k-th largest of values[0..n) (REQUIRES: 1 <= k <= n), and in *above, when not null, how many values
// are strictly greater. k up to kHeapMaxK: a k-entry min-heap (blocks of 16 values below it skipped after
// one vector maximum); larger k: one histogram pass over the values' top bits, then a selection within the
// bucket that holds the k-th largest. `scratch` is reused between calls. NaN is not expected.
constexpr int64_t kHeapMaxK = 64;
float KthLargest(const float* values, int64_t n, int64_t k, std::vector<float>* scratch, int64_t* above = nullptr);

// Buffers of TopKSet, kept between calls (they only grow).
struct TopKScratch {
  std::vector<float> values, bucket;
  std::vector<int32_t> index;
};

// The same set as TopKIndices(values[0..n), k) (ties to the lower index), in increasing index order,
// written to `out`. O(n), no allocation once the scratch buffers have grown.
void TopKSet(const float* values, int64_t n, int64_t k, TopKScratch* scratch, std::vector<int32_t>* out);

// Attention probabilities of the last `window` prompt queries of every group member over the prompt keys:
// a (group_size * w) x prompt_len matrix, row j * w + r for member j and query position prompt_len - w + r,
// with w = min(window, prompt_len - query_start). Causal: row entries beyond the query's position are 0.
// Uses head.prompt_cache when set and w <= PromptAttentionCache::kMaxWindow.
RowMatrixXf PromptWindowAttention(const HeadContext& head, int64_t window);

// Rows of PromptWindowAttention(head, window) without copying them out of the cache when it holds them
// (a wider cached window included): row(j, r) is member j's row for query position prompt_len - w + r.
// Otherwise they are computed into *scratch. Valid until the cache or *scratch changes.
struct PromptWindowRows {
  int64_t window = 0;  // w
  const float* data = nullptr;
  int64_t member_rows = 0;  // rows per member in `data`
  int64_t first_row = 0;    // of the window within each member's rows
  int64_t cols = 0;         // prompt_len
  const float* row(int j, int64_t r) const { return data + (j * member_rows + first_row + r) * cols; }
};
PromptWindowRows PromptWindowAttentionRows(const HeadContext& head, int64_t window, RowMatrixXf* scratch);

// Sum over every stored prompt query of every group member of its attention over the prompt keys
// (prompt_len values), computed in blocks of rows (bounded memory even when all prompt queries are stored).
std::vector<double> PromptAttentionColumnSums(const HeadContext& head);

// The unnormalised causal softmax of a row of attention logits (q.k): row[0..length) becomes
// exp(scale * logit - scale * its largest logit) in place (ExpScaled of util/float_gemm.h); returns its
// double sum (LaneSum, in that function's fixed order). Dividing the row by the sum gives the softmax.
// REQUIRES: length >= 1.
double ExpRow(float* row, int64_t length, float scale);

// The causal softmax of a row of attention logits in place: ExpRow(), then each entry times the float
// reciprocal of the sum (ScaleLaneSum). Returns the double sum of the resulting probabilities (~1).
// The evaluator's exact rows and every policy that recomputes them use it, so they agree to the bit.
// REQUIRES: length >= 1.
double SoftmaxRow(float* row, int64_t length, float scale);

// Fills `kept` with the shared set {first `count` entries of ranking} + [from, to] (inclusive).
void KeepRankedPlusRange(const std::vector<int32_t>& ranking, int64_t count, int64_t from, int64_t to,
                         std::vector<int32_t>* kept);

}  // namespace kvsim

#endif  // KVSIM_POLICIES_TOKEN_TOKEN_POLICY_UTIL_H_
