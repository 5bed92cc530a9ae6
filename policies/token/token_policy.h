// File: policies/token/token_policy.h
//
// TokenPolicy: a lossy KV-cache policy at token granularity, evaluated offline on an attention trace by
// sim/quality/quality_evaluator.h. For one layer of one sample at a time, the evaluator hands the policy the
// layer's kept KV heads (keys, values, queries, RoPE) as they stand after prefill, then walks the decode
// steps; at each step it passes the full attention rows of the step's queries ("scores so far" are the
// policy's own state) and asks which tokens the attention reads.
//
// Budget: `budget_tokens` is the number of tokens one KV head's attention may read at a decode step,
// the current token included (the cache capacity for eviction policies, the tokens read per step for
// selection policies). Policies whose published rule moves budget between layers or heads (PyramidKV,
// AdaKV) keep the same total and say so; Quest reads whole 16-token pages. The evaluator reports the mean
// number of tokens actually read.
//
// Kinds:
//   kFull      everything is kept (the reference).
//   kEvict     permanent: a token once dropped never comes back (kept sets only shrink, plus new tokens).
//   kSelect    per step: each step may read any subset of the cache; nothing is evicted.
//   kQuantize  keeps tokens but the attention reads dequantised keys/values (Kv()).
//
// Offline caveat, true of every policy here: the trace's later queries were computed by the model with a
// full cache, so the effect of a policy's earlier losses on later queries is not modelled.
//
// Registration: one line at the bottom of the policy's .cc, its cc_library alwayslink = True:
//   KVSIM_REGISTER_TOKEN_POLICY("h2o", H2oPolicy);
// Wrappers (a quantiser or AdaKV around another policy) register with KVSIM_REGISTER_TOKEN_POLICY_WRAPPER
// and are named "wrapper+inner", e.g. "kivi4+snapkv"; a wrapper named alone wraps "full".
// Parameters: a policy that takes parameters registers with KVSIM_REGISTER_TOKEN_POLICY_WITH_PARAMS and is
// named "name:key=value[:key=value...]" (e.g. "kvp:model=m.kvpm"); its factory checks the keys and values
// and may refuse them with a Status. A policy registered without parameters refuses any.
//
// Thread-safety: an instance is used by one thread at a time (not always the same one); instances run
// concurrently, sharing the read-only trace tensors and the thread-safe HeadContext::prompt_cache. A
// policy must not keep mutable state outside its instance.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TokenPolicy> policy, CreateTokenPolicy("snapkv", {.seed = 1}));
//   policy->BeginLayer(heads, /*budget_tokens=*/256);
//   policy->Step(step, &kept);   // kept[h].per_query[...] lists positions <= step.position
#ifndef KVSIM_POLICIES_TOKEN_TOKEN_POLICY_H_
#define KVSIM_POLICIES_TOKEN_TOKEN_POLICY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "traces/attention/attention_trace.h"
#include "util/registry.h"

namespace kvsim {

struct PromptAttentionCache;  // token_policy_util.h

// The exact attention of every decode step of one KV head's group, when the caller computed it before
// BeginLayer (sim/quality/quality_evaluator.cc does when the layer's steps fit in one block). Row j * steps + t
// holds member j's softmax at position prompt_len + t over keys 0..prompt_len + t (SoftmaxRow() of
// token_policy_util.h on its q.k logits), zeros after. probs == nullptr: not available.
struct DecodeAttention {
  const float* probs = nullptr;
  int64_t stride = 0;  // floats between rows
  int64_t steps = 0;
  const float* row(int j, int64_t t) const { return probs + (j * steps + t) * stride; }
};

// One kept (layer, KV head) of one sample, as policies see it. Pointers are into the sample's tensors
// (attention_trace.h layouts) and stay valid until the next BeginLayer().
struct HeadContext {
  int32_t layer = 0;             // model layer index
  int32_t num_model_layers = 1;  // layers of the model (PyramidKV's L)
  int32_t kv_head = 0;
  int32_t group_size = 1;
  int32_t head_dim = 0;
  int64_t prompt_len = 0;
  int64_t seq_len = 0;
  int64_t query_start = 0;
  const float* keys = nullptr;         // seq_len x head_dim
  const float* values = nullptr;       // seq_len x head_dim
  const float* queries = nullptr;      // group_size x (seq_len - query_start) x head_dim
  const float* column_sums = nullptr;  // group_size x prompt_len, or null
  RopeConfig rope;
  // Optional memo, owned by the caller and shared by the policies evaluated on this head (null: none):
  // PromptWindowAttention() computes the stored prompt queries' attention once into it.
  PromptAttentionCache* prompt_cache = nullptr;
  // Optional, owned by the caller: every decode step's exact attention (oracles that look ahead read it
  // instead of recomputing it).
  DecodeAttention decode_attention;

  const float* key(int64_t i) const { return keys + i * head_dim; }
  const float* value(int64_t i) const { return values + i * head_dim; }
  // Query of group member j at position p. REQUIRES: query_start <= p < seq_len.
  const float* query(int j, int64_t p) const {
    return queries + ((j * (seq_len - query_start)) + (p - query_start)) * head_dim;
  }
};

// The full (nothing evicted) attention of one decode step for one KV head.
struct HeadStep {
  const float* probs = nullptr;  // group_size rows of position + 1 probabilities (softmax over 0..position)
  int64_t stride = 0;            // floats between rows
  const float* row(int j) const { return probs + j * stride; }
};

struct LayerStep {
  int64_t position = 0;         // of the decode query; keys 0..position exist
  std::vector<HeadStep> heads;  // one per head given to BeginLayer, same order
};

// The tokens one KV head's attention reads at a step: one list shared by the group (per_query.size() == 1)
// or one per query head (size group_size). Positions are distinct, in [0, position], any order.
struct KeptSet {
  std::vector<std::vector<int32_t>> per_query;
};

// What a quantiser makes the attention read instead of the exact K/V (rows seq_len x head_dim).
struct KvOverride {
  const float* keys = nullptr;    // null: exact keys
  const float* values = nullptr;  // null: exact values
  int64_t keys_exact_from = 0;    // rows >= this are read exactly (full-precision residual)
  int64_t values_exact_from = 0;
};

struct TokenPolicyOptions {
  uint64_t seed = 0;  // for randomised policies
};

class TokenPolicy {
 public:
  enum class Kind { kFull, kEvict, kSelect, kQuantize };

  virtual ~TokenPolicy() = default;

  // The registered name (with the inner policy's for wrappers, e.g. "kivi4+h2o").
  virtual std::string Name() const = 0;
  virtual Kind kind() const = 0;

  // Starts one layer of one sample, right after its prefill. REQUIRES: heads non-empty, all of one layer
  // and one sample; budget_tokens >= 1. Resets all state from an earlier layer.
  virtual void BeginLayer(absl::Span<const HeadContext> heads, int64_t budget_tokens) = 0;

  // One decode step. REQUIRES: steps in increasing position order from prompt_len, step.heads matches
  // BeginLayer's heads. Fills (*kept)[h] for every head (kept is resized by the caller).
  virtual void Step(const LayerStep& step, std::vector<KeptSet>* kept) = 0;

  // For kQuantize: the K/V the attention of head h reads at `position`. Default: exact.
  virtual KvOverride Kv(int head, int64_t position) const { return {}; }

  // Whether the policy can run on a trace with this header (e.g. a learned policy whose model was
  // trained for another layout): InvalidArgument saying why, naming both. Called by the evaluator before
  // any sample. Default: OK.
  virtual absl::Status CheckTrace(const AttentionTraceHeader& header) const { return absl::OkStatus(); }
};

const char* TokenPolicyKindName(TokenPolicy::Kind kind);

using TokenPolicyFactory = std::function<std::unique_ptr<TokenPolicy>(const TokenPolicyOptions&)>;
using TokenPolicyWrapperFactory =
    std::function<std::unique_ptr<TokenPolicy>(const TokenPolicyOptions&, std::unique_ptr<TokenPolicy> inner)>;

// The key=value parameters of a spec "name:key=value:...", in the order given.
using TokenPolicyParams = std::vector<std::pair<std::string, std::string>>;
using TokenPolicyParamFactory =
    std::function<absl::StatusOr<std::unique_ptr<TokenPolicy>>(const TokenPolicyOptions&, const TokenPolicyParams&)>;

// The registries (util/registry.h) that KVSIM_REGISTER_TOKEN_POLICY, ..._WRAPPER and ..._WITH_PARAMS add to.
Registry<TokenPolicyFactory>& TokenPolicyRegistry();
Registry<TokenPolicyWrapperFactory>& TokenPolicyWrapperRegistry();
Registry<TokenPolicyParamFactory>& TokenPolicyParamRegistry();

// A new instance of "name", "name:key=value:..." or "wrapper+...+name". InvalidArgument listing the known
// names if unknown, for a malformed parameter (not key=value, a key given twice), parameters given to a
// policy that takes none, or if a wrapper or a parameterised policy's factory refuses (the message says why).
absl::StatusOr<std::unique_ptr<TokenPolicy>> CreateTokenPolicy(absl::string_view spec,
                                                               const TokenPolicyOptions& options = {});

// Registered names (policies and wrappers), sorted.
std::vector<std::string> TokenPolicyNames();

}  // namespace kvsim

#define KVSIM_REGISTER_TOKEN_POLICY(name, Class)                                                        \
  KVSIM_REGISTER(::kvsim::TokenPolicyRegistry(), name, [](const ::kvsim::TokenPolicyOptions& options) { \
    return std::unique_ptr<::kvsim::TokenPolicy>(new Class(options));                                   \
  })

#define KVSIM_REGISTER_TOKEN_POLICY_WITH_PARAMS(name, factory) \
  KVSIM_REGISTER(::kvsim::TokenPolicyParamRegistry(), name, factory)

#define KVSIM_REGISTER_TOKEN_POLICY_WRAPPER(name, factory) \
  KVSIM_REGISTER(::kvsim::TokenPolicyWrapperRegistry(), name, factory)

#endif  // KVSIM_POLICIES_TOKEN_TOKEN_POLICY_H_
