// File: traces/attention/synthetic_trace.h
//
// A seeded generator of synthetic attention traces whose heads have known attention patterns, for tests
// and benchmarks of the quality path. The header says `synthetic = true` and the model name "synthetic";
// results computed on these traces must be labelled synthetic.
//
// Each KV head gets a type (its query heads share it), built from planted features in the post-RoPE
// query and key vectors (logits are q.k / sqrt(d)):
//   kSink         the first 4 tokens carry a key feature that every query matches (logit about +8).
//   kLocal        RoPE-like rotations: q_t.k_i is large when t - i is small (a local window).
//   kHeavyHitter  about 2% of the tokens (random, fixed per head) carry a feature every query matches.
//   kNeedle       one prompt token (the "needle", position needle_position) carries a feature that only
//                 the decode queries match (logit about +10): retrieval at decode time.
//   kMixed        all of the above at once.
// Everything else is Gaussian noise. Values are standard Gaussian.
//
// Deterministic: the same options give bit-identical tensors (std::mt19937_64 seeded from `seed`, the
// sample, layer and head). Thread-safe (no shared state).
//
// Example:
//   SyntheticTraceOptions options;
//   options.prompt_len = 4096;
//   SyntheticTrace trace = GenerateSyntheticTrace(options);
//   // trace.header, trace.samples[0].heads[...]
#ifndef KVSIM_TRACES_ATTENTION_SYNTHETIC_TRACE_H_
#define KVSIM_TRACES_ATTENTION_SYNTHETIC_TRACE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "traces/attention/attention_trace.h"

namespace kvsim {

enum class SyntheticHeadType { kSink, kLocal, kHeavyHitter, kNeedle, kMixed };

// Parses "sink", "local", "heavy", "needle", "mixed".
absl::StatusOr<SyntheticHeadType> ParseSyntheticHeadType(absl::string_view name);

struct SyntheticTraceOptions {
  uint64_t seed = 1;
  int num_samples = 1;
  int num_layers = 2;    // all kept
  int num_kv_heads = 4;  // all kept
  int group_size = 2;    // query heads per KV head
  int head_dim = 64;     // >= 40 (features use the first 34 channels)
  int64_t prompt_len = 1024;
  int64_t decode_steps = 16;
  int64_t query_window = 64;  // prompt positions with stored queries (the last ones); clamped to prompt_len
  // Type of KV head h is head_types[h % size]; empty = {sink, local, heavy, needle}.
  std::vector<SyntheticHeadType> head_types;
  AttentionDType dtype = AttentionDType::kFloat16;  // the dtype the header declares for files
  bool column_sums = false;  // compute prefill column sums (O(prompt_len^2 * d): small prompts only)
};

struct SyntheticTrace {
  AttentionTraceHeader header;
  std::vector<AttentionSample> samples;
};

// Generates the trace. REQUIRES: options are positive where sizes are, head_dim >= 40.
SyntheticTrace GenerateSyntheticTrace(const SyntheticTraceOptions& options);

// The position of the planted needle in sample `sample` (the same for every needle head of the sample).
int64_t SyntheticNeedlePosition(const SyntheticTraceOptions& options, int sample);

}  // namespace kvsim

#endif  // KVSIM_TRACES_ATTENTION_SYNTHETIC_TRACE_H_
