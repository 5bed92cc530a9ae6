#include "sim/eval/trace_recorder.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "sim/eval/llama_session.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

absl::StatusOr<std::vector<int32_t>> Indices(const std::vector<int32_t>& given, int32_t count, const char* what) {
  std::vector<int32_t> out = given;
  if (out.empty()) {
    for (int32_t i = 0; i < count; ++i) out.push_back(i);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] < 0 || out[i] >= count || (i > 0 && out[i] <= out[i - 1])) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " must be ascending, distinct and in [0, ", count, "), got ", out[i]));
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<AttentionTraceHeader> TraceHeaderFor(const LlamaModel& model, const TraceRecordOptions& options) {
  const LlamaConfig& c = model.config;
  AttentionTraceHeader header = TraceLayout(c);
  header.model = model.source;
  header.dtype = options.dtype;
  KVSIM_ASSIGN_OR_RETURN(header.kept_layers, Indices(options.layers, c.num_layers, "layers"));
  KVSIM_ASSIGN_OR_RETURN(header.kept_kv_heads, Indices(options.kv_heads, c.num_kv_heads, "kv_heads"));
  KVSIM_RETURN_IF_ERROR(ValidateHeader(header));
  return header;
}

absl::StatusOr<AttentionSample> RecordAttentionSample(const LlamaModel& model, absl::Span<const int32_t> prompt,
                                                      const TraceRecordOptions& options) {
  if (options.decode_steps < 0) return absl::InvalidArgumentError("decode_steps must be >= 0");
  if (options.query_window < 0) return absl::InvalidArgumentError("query_window must be >= 0");
  KVSIM_ASSIGN_OR_RETURN(AttentionTraceHeader header, TraceHeaderFor(model, options));
  const int64_t p = prompt.size(), steps = options.decode_steps, n = p + steps;
  LlamaSession session(model, std::max<int64_t>(1, n), options.query_window);
  KVSIM_ASSIGN_OR_RETURN(std::vector<float> logits, session.Prefill(prompt));
  AttentionSample sample;
  sample.prompt_len = p;
  sample.num_decode_steps = steps;
  sample.query_start = session.query_start();
  sample.token_ids.assign(prompt.begin(), prompt.end());
  sample.boundaries = {0};  // the prompt is one turn (tools/record_attention.py's default for a prompt)
  for (int64_t s = 0; s < steps; ++s) {
    const int32_t next = ArgMax(logits);
    sample.token_ids.push_back(next);
    KVSIM_ASSIGN_OR_RETURN(logits, session.Decode(next));
  }
  const int d = model.config.head_dim, g = model.config.group_size();
  for (int32_t layer : header.kept_layers) {
    for (int32_t c : header.kept_kv_heads) {
      HeadTensors t;
      t.layer = layer;
      t.kv_head = c;
      t.keys.assign(session.keys(layer, c), session.keys(layer, c) + n * d);
      t.values.assign(session.values(layer, c), session.values(layer, c) + n * d);
      const float* q = session.queries(layer, c);  // g x (n - query_start) x d: the trace's layout
      t.queries.assign(q, q + static_cast<int64_t>(g) * (n - sample.query_start) * d);
      t.column_sums = session.column_sums(layer, c);
      sample.heads.push_back(std::move(t));
    }
  }
  KVSIM_RETURN_IF_ERROR(ValidateSample(header, sample));
  return sample;
}

}  // namespace kvsim
