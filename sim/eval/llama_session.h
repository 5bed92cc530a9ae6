// File: sim/eval/llama_session.h
//
// LlamaSession: one sequence's generation on CPU with a LlamaModel (sim/eval/llama_model.h): a prefill
// of the prompt with full causal attention, then one decode step per token, with a KV cache that a token
// policy (policies/token/token_policy.h) may control after the prefill: closed-loop evaluation.
//
// The forward pass follows transformers' LlamaForCausalLM / Qwen2ForCausalLM in float32: RMSNorm
// x * rsqrt(mean(x^2) + eps) * w, rotary embeddings in the rotate_half convention (first and second
// half of head_dim) with the config's scaling, grouped-query attention softmax(q k^T / sqrt(d)) v,
// SwiGLU MLP down(silu(gate(x)) * up(x)), tied or untied output projection, q/k/v biases where the config
// has them (Llama's attention_bias also biases o_proj), Mistral's sliding window (a query sees the last
// sliding_window keys; under a policy, the kept set is cut to the window). Matrix products are
// util/float_gemm.h's GemmABt; each pass is single-threaded in a fixed order, so the same inputs give the
// same bits (run independent sessions on different threads).
//
// The cache: keys (post-rotary), values and queries of every (layer, KV head) for capacity_tokens
// positions are allocated up front, so the HeadContext pointers the policies keep stay valid; rows are
// filled as the sequence grows (unfilled rows are zero). Queries are kept from query_start = prompt_len -
// query_window (0 when query_window is 0: every prompt query) on; the prefill attention itself uses them all.
// column_sums (H2O's seed) are the prompt attention's column sums from the prefill.
//
// Policies (AttachPolicy, after Prefill): one instance per layer gets BeginLayer(that layer's KV heads,
// budget); at every decode step, after the step's keys, values and queries are stored, each layer's
// instance gets Step() with the step's full attention rows (softmax over every position so far, computed
// from the cache's exact keys, as the open-loop evaluator gives them), and that step's attention output
// reads only the kept set: softmax renormalised over the kept tokens. A kQuantize policy's attention
// reads its dequantised keys and values (Kv()) below the full-precision residual. Because a policy's
// BeginLayer sees only the rows filled by then, Kv() is taken from a second instance of the same spec
// that is begun again on the cache as it stands whenever the rows it would read quantised run past the
// rows filled at its last BeginLayer (KIVI quantises the whole cache in BeginLayer); its Kv() must depend
// only on the keys and values, not on Step() (true of the registered quantisers). Refused: policies that
// need the future (oracle_evict, which reads later steps' attention or queries): FailedPrecondition.
// Every other registered policy reads only rows up to the current step (Quest bounds a page completed
// during decode when a step first reads it).
//
// Without a policy every step reads every token; with policy "full" the results are the same bits (the
// kept set is sorted, so any policy that keeps everything gives the same bits too).
//
// Thread-compatible: one thread at a time per session.
//
// Example:
//   LlamaSession session(*model, prompt.size() + max_new_tokens);
//   KVSIM_ASSIGN_OR_RETURN(std::vector<float> logits, session.Prefill(prompt));
//   KVSIM_RETURN_IF_ERROR(session.AttachPolicy("snapkv", /*budget_tokens=*/128, /*seed=*/1, nullptr));
//   int32_t next = ArgMax(logits);
//   KVSIM_ASSIGN_OR_RETURN(logits, session.Decode(next));
#ifndef KVSIM_SIM_EVAL_LLAMA_SESSION_H_
#define KVSIM_SIM_EVAL_LLAMA_SESSION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "policies/token/token_policy.h"
#include "policies/token/token_policy_util.h"
#include "sim/eval/llama_model.h"

namespace kvsim {

// Prompt-attention memos of one prompt, one per (layer, KV head), shared by the sessions cloned from one
// prefill (their prompt rows are identical). Thread-safe as PromptAttentionCache is.
class PromptCaches {
 public:
  PromptCaches(int num_layers, int num_kv_heads);
  PromptAttentionCache* at(int layer, int kv_head) { return caches_[layer * num_kv_heads_ + kv_head].get(); }

 private:
  int num_kv_heads_;
  std::vector<std::unique_ptr<PromptAttentionCache>> caches_;
};

// OK unless `spec` names a policy that cannot run closed-loop (see the file comment).
absl::Status CheckClosedLoopPolicy(const std::string& spec);

// OK unless `policy` (created from `spec`) refuses `model`'s layout: TokenPolicy::CheckTrace against
// TraceLayout(model.config), every layer and KV head, since a closed-loop policy runs on all of them (a
// KVP model trained for another model, or on a trace of fewer layers or heads). InvalidArgument naming
// the policy and the model folder, then the policy's reason.
absl::Status CheckPolicyFitsModel(const TokenPolicy& policy, const std::string& spec, const LlamaModel& model);

class LlamaSession {
 public:
  // REQUIRES: `model` outlives the session; capacity_tokens >= 1. query_window: prompt queries kept for
  // the policies (the last N; 0 = all).
  LlamaSession(const LlamaModel& model, int64_t capacity_tokens, int64_t query_window = 0);
  ~LlamaSession();
  LlamaSession(const LlamaSession&) = delete;
  LlamaSession& operator=(const LlamaSession&) = delete;

  // A copy of the cache and position (no policy attached): a prefill shared by several runs.
  std::unique_ptr<LlamaSession> Clone() const;

  // Runs `ids` from position 0. Returns the logits of the last position (vocab floats), or of every
  // position (ids.size() x vocab, row-major) when all_logits. InvalidArgument for an empty prompt, an id
  // outside the vocabulary or more ids than capacity; FailedPrecondition if called twice.
  absl::StatusOr<std::vector<float>> Prefill(absl::Span<const int32_t> ids, bool all_logits = false);

  // Creates the policy `spec` (registered name or wrapper+name) for every layer and begins it at
  // `budget_tokens`. `caches`: shared prompt memos (null: the session's own). REQUIRES: after Prefill,
  // before any Decode. InvalidArgument for an unknown policy, budget < 1 or a policy refused by
  // CheckPolicyFitsModel; FailedPrecondition for a policy refused by CheckClosedLoopPolicy.
  absl::Status AttachPolicy(const std::string& spec, int64_t budget_tokens, uint64_t seed, PromptCaches* caches);

  // Feeds `id` at the next position and returns its logits. InvalidArgument for a bad id or a full cache;
  // Internal if the policy returns positions outside [0, position] or twice.
  absl::StatusOr<std::vector<float>> Decode(int32_t id);

  int64_t length() const { return length_; }
  int64_t capacity() const { return capacity_; }
  // Tokens the attention read per (decode step, layer, query head), averaged; 0 before any decode step.
  double mean_tokens_read() const { return reads_ > 0 ? static_cast<double>(read_tokens_) / reads_ : 0.0; }
  int64_t decode_steps() const { return decode_steps_; }

  // The cached key / value / query rows (for recording traces): layer l, KV head c (query member j).
  const float* keys(int l, int c) const { return keys_[l * kv_heads_ + c].data(); }
  const float* values(int l, int c) const { return values_[l * kv_heads_ + c].data(); }
  // g x (capacity - query_start) x d: member j's query at position p >= query_start is row
  // j * (capacity - query_start) + p - query_start.
  const float* queries(int l, int c) const { return queries_[l * kv_heads_ + c].data(); }
  int64_t query_start() const { return query_start_; }
  const std::vector<float>& column_sums(int l, int c) const { return column_sums_[l * kv_heads_ + c]; }

 private:
  struct Scratch;
  absl::Status CheckIds(absl::Span<const int32_t> ids) const;
  // Runs positions [pos0, pos0 + rows) through the model; `x` holds their embeddings (rows x hidden) and
  // ends as the final-norm hidden states.
  absl::Status Forward(int64_t pos0, int64_t rows, std::vector<float>* x);
  // q: the rows x (heads * d) rotated queries of the prompt.
  void PrefillAttention(int layer, int64_t rows, const float* q, float* out);
  absl::Status DecodeAttention(int layer, int64_t p, const float* q, float* out);
  std::vector<float> Logits(const float* hidden, int64_t rows) const;
  // The first key position the query at p may see (the sliding window; 0 without one).
  int64_t WindowStart(int64_t p) const {
    return config_.sliding_window > 0 ? std::max<int64_t>(0, p - config_.sliding_window + 1) : 0;
  }

  const LlamaModel& model_;
  const LlamaConfig& config_;
  int64_t capacity_;
  int kv_heads_, group_, d_;
  int64_t length_ = 0;
  int64_t prompt_len_ = 0;
  int64_t query_window_ = 0, query_start_ = 0;
  std::vector<std::vector<float>> keys_, values_, queries_, column_sums_;  // per layer x KV head
  // Policy state, per layer.
  std::string spec_;
  int64_t budget_ = 0;
  std::vector<std::unique_ptr<TokenPolicy>> policies_, requantisers_;
  std::vector<int64_t> requantised_rows_;
  std::vector<std::vector<HeadContext>> heads_;
  std::unique_ptr<PromptCaches> own_caches_;
  int64_t read_tokens_ = 0, reads_ = 0, decode_steps_ = 0;
  std::unique_ptr<Scratch> scratch_;
};

// The index of the largest value (the lowest index among equals). REQUIRES: non-empty.
int32_t ArgMax(absl::Span<const float> logits);

// -log softmax(logits)[id], in double.
double NegativeLogLikelihood(absl::Span<const float> logits, int32_t id);

}  // namespace kvsim

#endif  // KVSIM_SIM_EVAL_LLAMA_SESSION_H_
