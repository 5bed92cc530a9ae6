// File: sim/train/kvp_target.h
//
// KVP's training target (arXiv 2602.10238): the future importance of each cached token. For one kept
// (layer, KV head) of a sample, with the cache cut at n tokens (positions 0..n-1) and the next f queries
// at positions n..n+f-1, I_i = sum_{j=n}^{n+f-1} max_{g in the GQA group} a_{g,j}(i), where a_{g,j} is
// query head g's causal softmax at position j over keys 0..j (scale 1/sqrt(head_dim)), recomputed from
// the trace's queries and keys with the softmax the quality evaluator uses (SoftmaxRow of
// policies/token/token_policy_util.h; the logits come from an Eigen product, so they may differ from the
// evaluator's SIMD GEMM in the last bits).
//
// Pure functions; thread-safe.
#ifndef KVSIM_SIM_TRAIN_KVP_TARGET_H_
#define KVSIM_SIM_TRAIN_KVP_TARGET_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "traces/attention/attention_trace.h"

namespace kvsim {

// I_0..I_{n-1} of head record `head` of `sample` (header's group size and head_dim) with n = split and
// f = future queries. InvalidArgument when the queries n..n+f-1 are not all stored (n < query_start or
// n + f > seq_len), n < 1 or f < 1.
absl::StatusOr<std::vector<double>> FutureImportance(const AttentionTraceHeader& header, const AttentionSample& sample,
                                                     const HeadTensors& head, int64_t split, int64_t future_queries);

}  // namespace kvsim

#endif  // KVSIM_SIM_TRAIN_KVP_TARGET_H_
