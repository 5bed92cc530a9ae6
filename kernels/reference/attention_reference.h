// File: kernels/reference/attention_reference.h
//
// float64 CPU references for the attention kernels: attention of one query over one KV segment as an
// attention state (o, lse), the exact merge of states, and decode / chunked prefill over a segment table
// (kernels/layout/kv_layout.h) computed segment by segment and merged, the way the GPU kernels split the work.
//
// Math (FlashInfer's recursive attention): for scores s_i = scale * q.k_i over a segment S,
//   lse_S = ln sum_i exp(s_i),  o_S = sum_i exp(s_i - lse_S) v_i;
// states merge as  L = max_j lse_j, w_j = exp(lse_j - L), o = sum_j w_j o_j / sum_j w_j,
// lse = L + ln sum_j w_j, which is softmax attention over the union of the segments. An empty segment has
// lse = -inf and o = 0 and weighs nothing; merging only empty states gives lse = -inf and o = 0 (guarded,
// never NaN). lse is in natural log here and in every launcher's output.
//
// GQA: query head h reads KV head h / (num_q_heads / num_kv_heads).
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(AttentionOutput out,
//                          DecodeReference(layout, table, /*num_q_heads=*/32, q, k_pool, v_pool, scale));
//   double first = out.o[0];  // request 0, head 0, dim 0
//
// Thread-safety: pure functions.
#ifndef KVSIM_KERNELS_REFERENCE_ATTENTION_REFERENCE_H_
#define KVSIM_KERNELS_REFERENCE_ATTENTION_REFERENCE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "kernels/layout/kv_layout.h"

namespace kvsim {

// Softmax attention of one query over a set of keys, summarised.
struct AttentionState {
  std::vector<double> o;  // head_dim values; zeros when empty
  double lse = 0;         // natural log of the sum of exp(score); -infinity when empty
};

// State of query `q` (head_dim values) over the first `num_visible` tokens of `segment` (all of them when
// num_visible >= segment.num_tokens; none when <= 0), KV head `kv_head` of the float pools.
AttentionState AttendSegment(const double* q, const SegmentTable& table, const KvSegment& segment,
                             const PagedKvLayout& layout, const std::vector<float>& k_pool,
                             const std::vector<float>& v_pool, int kv_head, double scale, int num_visible);

// The exact merge of `states` (each with `head_dim` values); empty input or all-empty states give the
// empty state.
AttentionState MergeStates(const std::vector<AttentionState>& states, int head_dim);

// Outputs of one attention call: `o` is [rows][num_q_heads][head_dim], `lse` is [rows][num_q_heads].
struct AttentionOutput {
  std::vector<double> o;
  std::vector<double> lse;
};

// Decode: one query per request, q = [num_requests][num_q_heads][head_dim]; attends every token of the
// request's segments. InvalidArgument on a bad table, head counts (num_q_heads a positive multiple of
// num_kv_heads) or array sizes.
absl::StatusOr<AttentionOutput> DecodeReference(const PagedKvLayout& layout, const SegmentTable& table, int num_q_heads,
                                                const std::vector<float>& q, const std::vector<float>& k_pool,
                                                const std::vector<float>& v_pool, double scale);

// Chunked prefill: request r has query rows [query_begin[r], query_begin[r + 1]) of
// q = [rows][num_q_heads][head_dim]; its n_r queries are the last n_r tokens of its context (the chunk,
// whose KV is already in the pool), so query i sits at position P_r + i with P_r = tokens - n_r and sees
// positions 0 .. P_r + i: the prefix without a mask, causal within the chunk. REQUIRES n_r <= tokens.
absl::StatusOr<AttentionOutput> PrefillReference(const PagedKvLayout& layout, const SegmentTable& table,
                                                 int num_q_heads, const std::vector<int32_t>& query_begin,
                                                 const std::vector<float>& q, const std::vector<float>& k_pool,
                                                 const std::vector<float>& v_pool, double scale);

}  // namespace kvsim

#endif  // KVSIM_KERNELS_REFERENCE_ATTENTION_REFERENCE_H_
