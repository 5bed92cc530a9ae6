// File: sim/eval/trace_recorder.h
//
// Attention traces (traces/attention/attention_trace.h) recorded from the closed-loop forward pass
// (sim/eval/llama_session.h), the same layout tools/record_attention.py writes from transformers: for each
// prompt a prefill and then `decode_steps` greedy decode steps with the full cache (the token chosen after
// position p is fed at position p + 1); for the chosen layers and KV heads the post-rotary keys and values
// of every position, the post-rotary queries of the decode steps and of the last `query_window` prompt
// positions (all of them when 0), and the prefill attention's column sums (H2O's seed), which the forward
// pass computes anyway. token_ids are the prompt and the tokens fed at the decode steps; boundaries are {0}
// (the prompt is one turn, as tools/record_attention.py records a prompt that names no boundaries).
//
// Thread-compatible; pure functions of the model and prompt.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(AttentionTraceHeader header, TraceHeaderFor(*model, options));
//   KVSIM_ASSIGN_OR_RETURN(AttentionSample sample, RecordAttentionSample(*model, prompt_ids, options));
#ifndef KVSIM_SIM_EVAL_TRACE_RECORDER_H_
#define KVSIM_SIM_EVAL_TRACE_RECORDER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sim/eval/llama_model.h"
#include "traces/attention/attention_trace.h"

namespace kvsim {

struct TraceRecordOptions {
  std::vector<int32_t> layers;    // ascending; empty = every layer
  std::vector<int32_t> kv_heads;  // ascending; empty = every KV head
  int64_t decode_steps = 32;
  int64_t query_window = 64;  // prompt queries kept (the last W); 0 = every prompt query
  AttentionDType dtype = AttentionDType::kFloat16;
};

// The header for `model` (InvalidArgument for layers or heads out of range, not ascending, or repeated).
absl::StatusOr<AttentionTraceHeader> TraceHeaderFor(const LlamaModel& model, const TraceRecordOptions& options);

// One sample. InvalidArgument as LlamaSession::Prefill for a bad prompt, or decode_steps < 0.
absl::StatusOr<AttentionSample> RecordAttentionSample(const LlamaModel& model, absl::Span<const int32_t> prompt,
                                                      const TraceRecordOptions& options);

}  // namespace kvsim

#endif  // KVSIM_SIM_EVAL_TRACE_RECORDER_H_
