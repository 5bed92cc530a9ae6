#include "policies/token/token_policy_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <mutex>
#include <numeric>

#include "util/check.h"
#include "util/float_gemm.h"
#include "util/huge_pages.h"

namespace kvsim {
namespace {

struct ByScore {
  const std::vector<double>* scores;
  bool operator()(int32_t a, int32_t b) const {
    const double sa = (*scores)[a], sb = (*scores)[b];
    return sa > sb || (sa == sb && a < b);
  }
};

}  // namespace

Eigen::VectorXf ColumnSums(const float* rows, int64_t count, int64_t cols) {
  Eigen::VectorXf sums = Eigen::VectorXf::Zero(cols);
  for (int64_t r = 0; r < count; ++r) sums += Eigen::Map<const Eigen::VectorXf>(rows + r * cols, cols);
  return sums;
}

std::vector<int32_t> TopKIndices(const std::vector<double>& scores, int64_t k) {
  const int64_t n = static_cast<int64_t>(scores.size());
  k = std::max<int64_t>(0, std::min(k, n));
  std::vector<int32_t> index(n);
  std::iota(index.begin(), index.end(), 0);
  ByScore by{&scores};
  if (k < n) std::nth_element(index.begin(), index.begin() + k, index.end(), by);
  index.resize(k);
  std::sort(index.begin(), index.end(), by);
  return index;
}

namespace {

// An order-preserving unsigned key of a float: a > b iff key(a) > key(b), equal values (-0 and +0
// included) have equal keys. NaN is not expected.
inline uint32_t OrderKey(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  if (bits == 0x80000000u) bits = 0;  // -0 as +0
  return (bits & 0x80000000u) != 0 ? ~bits : (bits | 0x80000000u);
}

// KthLargest for larger k: one histogram pass over the top bits of the keys, then a selection among the
// values of the bucket that holds the k-th largest only; `above` from the bucket counts.
float KthLargestByHistogram(const float* values, int64_t n, int64_t k, std::vector<float>* scratch, int64_t* above) {
  constexpr int kShift = 21;  // 2^11 buckets
  uint32_t counts[1u << (32 - kShift)] = {};
  for (int64_t i = 0; i < n; ++i) ++counts[OrderKey(values[i]) >> kShift];
  int64_t higher = 0;  // values in buckets above `bucket`
  uint32_t bucket = (1u << (32 - kShift)) - 1;
  while (higher + counts[bucket] < k) higher += counts[bucket--];
  scratch->clear();
  for (int64_t i = 0; i < n; ++i) {
    if ((OrderKey(values[i]) >> kShift) == bucket) scratch->push_back(values[i]);
  }
  const int64_t rank = k - higher;  // 1-based rank of the k-th largest within the bucket
  std::nth_element(scratch->begin(), scratch->begin() + (rank - 1), scratch->end(), std::greater<float>());
  const float threshold = (*scratch)[rank - 1];
  if (above != nullptr) {
    *above = higher;
    for (float x : *scratch) *above += x > threshold ? 1 : 0;
  }
  return threshold;
}

// KthLargest for small k: a k-entry min-heap, offered only the values above its minimum (FirstAbove skips
// the others sixteen at a time).
float KthLargestByHeap(const float* x, int64_t n, int64_t k, std::vector<float>* heap, int64_t* above) {
  heap->assign(x, x + k);
  std::make_heap(heap->begin(), heap->end(), std::greater<float>());
  auto offer = [heap](float value) {
    if (value <= heap->front()) return;
    std::pop_heap(heap->begin(), heap->end(), std::greater<float>());
    heap->back() = value;
    std::push_heap(heap->begin(), heap->end(), std::greater<float>());
  };
  // Straight to the next value that enters the heap: the same offers that change it, in the same order.
  for (int64_t i = FirstAbove(x, k, n, heap->front()); i < n; i = FirstAbove(x, i + 1, n, heap->front())) {
    offer(x[i]);
  }
  const float threshold = heap->front();
  if (above != nullptr) *above = (Eigen::Map<const Eigen::ArrayXf>(x, n) > threshold).count();
  return threshold;
}

// TopKSet for k much smaller than n: a threshold t from a strided sample that about 2k values reach,
// one filter pass keeping the indices of the values >= t, then the exact k-th largest among those.
// Returns false, with `out` untouched, when fewer than k values reach t (the sample misled); otherwise
// the result equals TopKSet's.
bool TopKSetBySample(const float* values, int64_t n, int64_t k, TopKScratch* scratch, std::vector<int32_t>* out) {
  constexpr int64_t kStride = 32;
  const int64_t samples = n / kStride;
  const int64_t rank = std::min(samples, 2 * k / kStride);  // about 2k of the n values reach it
  if (rank < 1) return false;
  if (static_cast<int64_t>(scratch->values.size()) < n) scratch->values.resize(n);
  if (static_cast<int64_t>(scratch->index.size()) < n + 16) scratch->index.resize(n + 16);
  float* sample = scratch->values.data();
  for (int64_t i = 0; i < samples; ++i) sample[i] = values[i * kStride];
  std::nth_element(sample, sample + (rank - 1), sample + samples, std::greater<float>());
  const int32_t* index = scratch->index.data();
  const int64_t count = IndicesAtLeast(values, n, sample[rank - 1], scratch->index.data());
  if (count < k) return false;
  float* kept = scratch->values.data();
  for (int64_t c = 0; c < count; ++c) kept[c] = values[index[c]];
  int64_t above = 0;
  const float threshold = KthLargest(kept, count, k, &scratch->bucket, &above);
  int64_t ties = k - above;  // entries equal to the threshold still to take, lowest index first
  out->clear();
  for (int64_t c = 0; c < count; ++c) {
    const float v = values[index[c]];
    if (v > threshold || (v == threshold && ties-- > 0)) out->push_back(index[c]);
  }
  return true;
}

}  // namespace

float KthLargest(const float* values, int64_t n, int64_t k, std::vector<float>* scratch, int64_t* above) {
  return k <= kHeapMaxK ? KthLargestByHeap(values, n, k, scratch, above)
                        : KthLargestByHistogram(values, n, k, scratch, above);
}

void TopKSet(const float* values, int64_t n, int64_t k, TopKScratch* scratch, std::vector<int32_t>* out) {
  k = std::max<int64_t>(0, std::min(k, n));
  out->clear();
  if (k == 0) return;
  if (8 * k <= n && TopKSetBySample(values, n, k, scratch, out)) return;
  int64_t above = 0;
  const float threshold = KthLargest(values, n, k, &scratch->bucket, &above);
  int64_t ties = k - above;  // entries equal to the threshold still to take, lowest index first
  for (int64_t i = 0; i < n; ++i) {
    if (values[i] > threshold || (values[i] == threshold && ties-- > 0)) out->push_back(static_cast<int32_t>(i));
  }
}

namespace {

// Rows for member j at prompt positions first..first+count-1 (all stored): causal softmax over the prompt.
// In place: rows row0..row0+count-1 of *probs hold the logits (q.k) of positions first..first+count-1;
// each becomes the causal softmax over the prompt (0 beyond its position).
void SoftmaxRows(int64_t first, int64_t count, int d, RowMatrixXf* probs, int64_t row0) {
  const int64_t n = probs->cols();
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (int64_t r = 0; r < count; ++r) {
    const int64_t position = first + r;
    auto row = probs->row(row0 + r);
    row.tail(n - position - 1).setZero();
    const double sum = ExpRow(row.data(), position + 1, scale);
    row.head(position + 1).array() *= static_cast<float>(1.0 / sum);
  }
}

// Rows for member j at prompt positions first..first+count-1 (all stored): causal softmax over the prompt.
void AttentionRows(const HeadContext& head, int j, int64_t first, int64_t count, RowMatrixXf* probs, int64_t row0) {
  const int64_t n = head.prompt_len;
  const int d = head.head_dim;
  Eigen::Map<const RowMatrixXf> keys(head.keys, n, d);
  Eigen::Map<const RowMatrixXf> queries(head.query(j, first), count, d);
  GemmABt(queries.data(), d, keys.data(), d, count, n, d, probs->row(row0).data(), probs->cols());
  SoftmaxRows(first, count, d, probs, row0);
}

// The last w prompt queries of every member: one GEMM for the group (the keys packed once).
void ComputeWindow(const HeadContext& head, int64_t w, RowMatrixXf* probs) {
  const int64_t n = head.prompt_len;
  const int d = head.head_dim;
  probs->resize(head.group_size * w, n);
  AdviseHugePages(probs->data(), probs->size() * sizeof(float));  // before the GEMM first touches it
  if (w == 0) return;
  RowMatrixXf queries(head.group_size * w, d);
  for (int j = 0; j < head.group_size; ++j) {
    queries.middleRows(j * w, w) = Eigen::Map<const RowMatrixXf>(head.query(j, n - w), w, d);
  }
  GemmABt(queries.data(), d, head.keys, d, head.group_size * w, n, d, probs->data(), n);
  for (int j = 0; j < head.group_size; ++j) SoftmaxRows(n - w, w, d, probs, j * w);
}

}  // namespace

PromptWindowRows PromptWindowAttentionRows(const HeadContext& head, int64_t window, RowMatrixXf* scratch) {
  const int64_t stored = head.prompt_len - head.query_start;
  const int64_t w = std::min(window, stored);
  KVSIM_CHECK(w >= 0);
  PromptWindowRows rows;
  rows.window = w;
  rows.cols = head.prompt_len;
  PromptAttentionCache* cache = head.prompt_cache;
  if (cache == nullptr || w > PromptAttentionCache::kMaxWindow) {
    ComputeWindow(head, w, scratch);
    rows.data = scratch->data();
    rows.member_rows = w;
    return rows;
  }
  const int64_t cached = std::min(stored, PromptAttentionCache::kMaxWindow);
  std::lock_guard<std::mutex> lock(cache->window_mutex);
  if (cache->window != cached) {
    ComputeWindow(head, cached, &cache->probs);
    cache->window = cached;
  }
  rows.data = cache->probs.data();
  rows.member_rows = cached;
  rows.first_row = cached - w;
  return rows;
}

RowMatrixXf PromptWindowAttention(const HeadContext& head, int64_t window) {
  RowMatrixXf scratch;
  const PromptWindowRows rows = PromptWindowAttentionRows(head, window, &scratch);
  RowMatrixXf probs(head.group_size * rows.window, rows.cols);
  for (int j = 0; j < head.group_size; ++j) {
    for (int64_t r = 0; r < rows.window; ++r) {
      probs.row(j * rows.window + r) = Eigen::Map<const Eigen::RowVectorXf>(rows.row(j, r), rows.cols);
    }
  }
  return probs;
}

std::vector<double> PromptAttentionColumnSums(const HeadContext& head) {
  constexpr int64_t kRows = 128;
  const int64_t n = head.prompt_len;
  std::vector<double> sums(n, 0.0);
  if (head.prompt_cache != nullptr && n - head.query_start <= PromptAttentionCache::kMaxWindow) {
    RowMatrixXf scratch;  // every stored query fits the shared cache: sum its rows, in member-major order
    const PromptWindowRows rows = PromptWindowAttentionRows(head, n - head.query_start, &scratch);
    Eigen::VectorXf column = Eigen::VectorXf::Zero(n);
    for (int j = 0; j < head.group_size; ++j) {
      for (int64_t r = 0; r < rows.window; ++r) column += Eigen::Map<const Eigen::VectorXf>(rows.row(j, r), n);
    }
    for (int64_t i = 0; i < n; ++i) sums[i] = column(i);
    return sums;
  }
  RowMatrixXf probs(kRows, n);
  for (int j = 0; j < head.group_size; ++j) {
    for (int64_t first = head.query_start; first < n; first += kRows) {
      const int64_t count = std::min(kRows, n - first);
      AttentionRows(head, j, first, count, &probs, 0);
      const Eigen::VectorXf column = ColumnSums(probs.data(), count, probs.cols());
      for (int64_t i = 0; i < n; ++i) sums[i] += column(i);
    }
  }
  return sums;
}

double ExpRow(float* row, int64_t length, float scale) {
  const float max_logit = MaxValue(row, length) * scale;
  return ExpScaledLaneSum(row, length, scale, max_logit);
}

double SoftmaxRow(float* row, int64_t length, float scale) {
  return ScaleLaneSum(row, length, static_cast<float>(1.0 / ExpRow(row, length, scale)));
}

void KeepRankedPlusRange(const std::vector<int32_t>& ranking, int64_t count, int64_t from, int64_t to,
                         std::vector<int32_t>* kept) {
  count = std::max<int64_t>(0, std::min<int64_t>(count, ranking.size()));
  kept->assign(ranking.begin(), ranking.begin() + count);
  for (int64_t i = from; i <= to; ++i) kept->push_back(static_cast<int32_t>(i));
}

}  // namespace kvsim
