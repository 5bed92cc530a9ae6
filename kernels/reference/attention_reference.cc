#include "kernels/reference/attention_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_format.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

absl::Status CheckShapes(const PagedKvLayout& layout, const SegmentTable& table, int num_q_heads, int64_t rows,
                         const std::vector<float>& q, const std::vector<float>& k_pool,
                         const std::vector<float>& v_pool) {
  KVSIM_RETURN_IF_ERROR(ValidateSegmentTable(table, layout));
  if (num_q_heads <= 0 || num_q_heads % layout.num_kv_heads != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "num_q_heads (%d) must be a positive multiple of num_kv_heads (%d)", num_q_heads, layout.num_kv_heads));
  }
  if (static_cast<int64_t>(q.size()) != rows * num_q_heads * layout.head_dim) {
    return absl::InvalidArgumentError(absl::StrFormat("q has %d values; expected %d rows x %d heads x %d", q.size(),
                                                      rows, num_q_heads, layout.head_dim));
  }
  if (static_cast<int64_t>(k_pool.size()) != layout.NumElements() ||
      static_cast<int64_t>(v_pool.size()) != layout.NumElements()) {
    return absl::InvalidArgumentError(absl::StrFormat("K/V pools have %d/%d values; the layout needs %d", k_pool.size(),
                                                      v_pool.size(), layout.NumElements()));
  }
  return absl::OkStatus();
}

// Merged state of query row `row`, head `h` over request r's segments; `visible_end` is the number of
// context tokens the query may see.
AttentionState AttendRequest(const PagedKvLayout& layout, const SegmentTable& table, int num_q_heads, int r,
                             const std::vector<float>& q, int64_t row, int h, int64_t visible_end,
                             const std::vector<float>& k_pool, const std::vector<float>& v_pool, double scale) {
  const int d = layout.head_dim;
  std::vector<double> qd(d);
  for (int i = 0; i < d; ++i) qd[i] = q[(row * num_q_heads + h) * d + i];
  const int kv_head = h / (num_q_heads / layout.num_kv_heads);
  std::vector<AttentionState> states;
  int64_t position = 0;
  for (int s = table.segment_begin[r]; s < table.segment_begin[r + 1]; ++s) {
    const KvSegment& seg = table.segments[s];
    const int64_t visible = std::max<int64_t>(0, std::min<int64_t>(seg.num_tokens, visible_end - position));
    states.push_back(
        AttendSegment(qd.data(), table, seg, layout, k_pool, v_pool, kv_head, scale, static_cast<int>(visible)));
    position += seg.num_tokens;
  }
  return MergeStates(states, d);
}

void Store(const AttentionState& state, int64_t row, int h, int num_q_heads, int d, AttentionOutput* out) {
  std::copy(state.o.begin(), state.o.end(), out->o.begin() + (row * num_q_heads + h) * d);
  out->lse[row * num_q_heads + h] = state.lse;
}

}  // namespace

AttentionState AttendSegment(const double* q, const SegmentTable& table, const KvSegment& segment,
                             const PagedKvLayout& layout, const std::vector<float>& k_pool,
                             const std::vector<float>& v_pool, int kv_head, double scale, int num_visible) {
  const int d = layout.head_dim;
  AttentionState state{std::vector<double>(d, 0.0), kNegInf};
  const int n = std::min(num_visible, segment.num_tokens);
  if (n <= 0) return state;
  std::vector<double> scores(n);
  std::vector<int64_t> rows(n);
  double max_score = kNegInf;
  for (int t = 0; t < n; ++t) {
    int32_t page;
    int slot;
    LocateToken(table, segment, t, layout.page_size, &page, &slot);
    rows[t] = layout.RowOffset(page, slot, kv_head);
    double dot = 0;
    for (int i = 0; i < d; ++i) dot += q[i] * static_cast<double>(k_pool[rows[t] + i]);
    scores[t] = dot * scale;
    max_score = std::max(max_score, scores[t]);
  }
  double sum = 0;
  for (int t = 0; t < n; ++t) {
    const double p = std::exp(scores[t] - max_score);
    sum += p;
    for (int i = 0; i < d; ++i) state.o[i] += p * static_cast<double>(v_pool[rows[t] + i]);
  }
  for (double& x : state.o) x /= sum;
  state.lse = max_score + std::log(sum);
  return state;
}

AttentionState MergeStates(const std::vector<AttentionState>& states, int head_dim) {
  AttentionState merged{std::vector<double>(head_dim, 0.0), kNegInf};
  double max_lse = kNegInf;
  for (const AttentionState& s : states) max_lse = std::max(max_lse, s.lse);
  if (max_lse == kNegInf) return merged;  // all empty: guard against exp(-inf - -inf) = NaN
  double weight_sum = 0;
  for (const AttentionState& s : states) {
    if (s.lse == kNegInf) continue;
    const double w = std::exp(s.lse - max_lse);
    weight_sum += w;
    for (int i = 0; i < head_dim; ++i) merged.o[i] += w * s.o[i];
  }
  for (double& x : merged.o) x /= weight_sum;
  merged.lse = max_lse + std::log(weight_sum);
  return merged;
}

absl::StatusOr<AttentionOutput> DecodeReference(const PagedKvLayout& layout, const SegmentTable& table, int num_q_heads,
                                                const std::vector<float>& q, const std::vector<float>& k_pool,
                                                const std::vector<float>& v_pool, double scale) {
  const int num_requests = table.num_requests();
  KVSIM_RETURN_IF_ERROR(CheckShapes(layout, table, num_q_heads, num_requests, q, k_pool, v_pool));
  const int d = layout.head_dim;
  AttentionOutput out{std::vector<double>(int64_t{num_requests} * num_q_heads * d),
                      std::vector<double>(int64_t{num_requests} * num_q_heads)};
  for (int r = 0; r < num_requests; ++r) {
    const int64_t tokens = table.RequestTokens(r);
    for (int h = 0; h < num_q_heads; ++h) {
      Store(AttendRequest(layout, table, num_q_heads, r, q, r, h, tokens, k_pool, v_pool, scale), r, h, num_q_heads, d,
            &out);
    }
  }
  return out;
}

absl::StatusOr<AttentionOutput> PrefillReference(const PagedKvLayout& layout, const SegmentTable& table,
                                                 int num_q_heads, const std::vector<int32_t>& query_begin,
                                                 const std::vector<float>& q, const std::vector<float>& k_pool,
                                                 const std::vector<float>& v_pool, double scale) {
  const int num_requests = table.num_requests();
  if (static_cast<int>(query_begin.size()) != num_requests + 1 || query_begin[0] != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("query_begin must have num_requests + 1 = %d entries starting at 0", num_requests + 1));
  }
  for (int r = 0; r < num_requests; ++r) {
    const int64_t n = query_begin[r + 1] - query_begin[r];
    if (n < 0 || n > table.RequestTokens(r)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("request %d: %d queries but %d context tokens (the chunk must be in the context)", r, n,
                          table.RequestTokens(r)));
    }
  }
  const int64_t rows = query_begin[num_requests];
  KVSIM_RETURN_IF_ERROR(CheckShapes(layout, table, num_q_heads, rows, q, k_pool, v_pool));
  const int d = layout.head_dim;
  AttentionOutput out{std::vector<double>(rows * num_q_heads * d), std::vector<double>(rows * num_q_heads)};
  for (int r = 0; r < num_requests; ++r) {
    const int64_t prefix = table.RequestTokens(r) - (query_begin[r + 1] - query_begin[r]);
    for (int64_t row = query_begin[r]; row < query_begin[r + 1]; ++row) {
      const int64_t visible_end = prefix + (row - query_begin[r]) + 1;
      for (int h = 0; h < num_q_heads; ++h) {
        Store(AttendRequest(layout, table, num_q_heads, r, q, row, h, visible_end, k_pool, v_pool, scale), row, h,
              num_q_heads, d, &out);
      }
    }
  }
  return out;
}

}  // namespace kvsim
