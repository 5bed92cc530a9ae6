// File: traces/attention/attention_trace.h
//
// In-memory form of an attention trace: what a model computed for a set of prompts, enough to recompute
// every attention row offline (queries and keys) and every attention output (values), for the kept
// layers and KV heads. The quality evaluator (sim/quality/quality_evaluator.h) and the token-level policies
// (policies/token/) read it; traces/attention/attention_trace_io.h stores it on disk; synthetic_trace.h
// generates it.
//
// Positions: a sample of `seq_len() = prompt_len + num_decode_steps` tokens. Position p < prompt_len is a
// prompt token; decode step s is position prompt_len + s. The query at position p attends causally to the
// keys 0..p (its own key included). Queries are stored for positions query_start..seq_len()-1: the last
// W prompt positions (W = prompt_len - query_start; all of the prompt when query_start = 0) and every
// decode step.
//
// Tensors are float32 in memory whatever the file's payload dtype, row-major:
//   keys, values   seq_len x head_dim                   (keys post-RoPE, as the attention kernel saw them)
//   queries        group_size x (seq_len - query_start) x head_dim, post-RoPE; query head j of the group
//                  is model query head kv_head * group_size + j (the Hugging Face GQA layout)
//   column_sums    empty, or group_size x prompt_len: sum over prompt queries t of a_{t,i} (H2O's seed)
// Plain structs: copyable, no invariants beyond ValidateSample().
//
// Example:
//   AttentionSample sample = ...;
//   KVSIM_RETURN_IF_ERROR(ValidateSample(header, sample));
//   const HeadTensors& head = sample.heads[0];   // kept_layers[0], kept_kv_heads[0]
#ifndef KVSIM_TRACES_ATTENTION_ATTENTION_TRACE_H_
#define KVSIM_TRACES_ATTENTION_ATTENTION_TRACE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace kvsim {

// Payload element type in the file.
enum class AttentionDType : uint32_t { kFloat16 = 1, kBFloat16 = 2, kFloat32 = 3 };

// RoPE scaling as the model config names it (Hugging Face `rope_scaling.rope_type`).
enum class RopeScaling : uint32_t { kNone = 0, kLinear = 1, kDynamic = 2, kYarn = 3, kLlama3 = 4, kOther = 5 };

struct RopeConfig {
  double base = 10000.0;  // rope_theta
  RopeScaling scaling = RopeScaling::kNone;
  double scaling_factor = 1.0;  // rope_scaling.factor; 1 = none
};

struct AttentionTraceHeader {
  std::string model;            // free text, e.g. "meta-llama/Llama-3.1-8B" or "synthetic"
  int32_t num_layers = 0;       // of the model
  int32_t num_query_heads = 0;  // per layer
  int32_t num_kv_heads = 0;     // per layer; divides num_query_heads
  int32_t head_dim = 0;
  RopeConfig rope;
  AttentionDType dtype = AttentionDType::kFloat16;
  std::vector<int32_t> kept_layers;    // ascending model layer indices
  std::vector<int32_t> kept_kv_heads;  // ascending KV head indices, the same in every kept layer
  bool synthetic = false;              // generated, not recorded from a model: results are labelled so

  int32_t group_size() const { return num_kv_heads > 0 ? num_query_heads / num_kv_heads : 0; }
  int num_kept_heads() const { return static_cast<int>(kept_layers.size() * kept_kv_heads.size()); }
};

// One kept (layer, KV head) of one sample.
struct HeadTensors {
  int32_t layer = 0;    // model layer index
  int32_t kv_head = 0;  // model KV head index
  std::vector<float> keys;
  std::vector<float> values;
  std::vector<float> queries;
  std::vector<float> column_sums;
};

struct AttentionSample {
  std::vector<int32_t> token_ids;  // empty, or seq_len() ids
  int64_t prompt_len = 0;
  int64_t num_decode_steps = 0;
  int64_t query_start = 0;          // first position with a stored query; <= prompt_len
  std::vector<int64_t> boundaries;  // ascending positions where a question or turn starts (may be empty)
  // kept_layers.size() x kept_kv_heads.size(), layer-major: heads[l * kept_kv_heads.size() + h].
  std::vector<HeadTensors> heads;

  int64_t seq_len() const { return prompt_len + num_decode_steps; }
  int64_t num_queries() const { return seq_len() - query_start; }
};

// OK if the header is self-consistent (positive sizes, GQA divisibility, kept indices ascending and in
// range, known dtype); InvalidArgument naming the field otherwise.
absl::Status ValidateHeader(const AttentionTraceHeader& header);

// OK if `sample` matches `header`: head order and count, every tensor's size, token ids, boundaries.
// InvalidArgument naming the offending head and field otherwise.
absl::Status ValidateSample(const AttentionTraceHeader& header, const AttentionSample& sample);

// OK if every stored value of `sample` (keys, values, queries at header.dtype; column sums as float32)
// is finite and stays finite at that dtype (fp16 holds magnitudes below 65520, bf16 below about 3.4e38).
// InvalidArgument naming the first offending head record, tensor, entry, position and value otherwise:
// attention over an infinite or NaN key gives NaN metrics for every policy. REQUIRES: ValidateSample().
absl::Status ValidateSampleValues(const AttentionTraceHeader& header, const AttentionSample& sample);
// The same for head record `h` alone. REQUIRES: ValidateSample(); h < sample.heads.size().
absl::Status ValidateHeadValues(const AttentionTraceHeader& header, const AttentionSample& sample, size_t h);

}  // namespace kvsim

#endif  // KVSIM_TRACES_ATTENTION_ATTENTION_TRACE_H_
