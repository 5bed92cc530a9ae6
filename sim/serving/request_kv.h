// File: sim/serving/request_kv.h
//
// Per-request KV configurations in a serving replay: each request may store its KV in its own format and
// keep only a budget of it after prefill (per-prompt selection, sim/select/serving_kv.h, assigns them).
//
// RequestKv is what one request runs at:
// - format: its KV storage format; nullptr = the replica's (model.kv_dtype, cost_model.kv_quant_*). Every
//   prefill and decode piece of the request is priced at it (SequenceWork::kv_format).
// - block_factor k >= 1: one KV block of the pool (block_bytes at the replica's format) holds k trace blocks
//   of this format, k = floor(replica's KvBytesPerToken / this format's) (config/kv_format.h, the one bytes
//   per token definition). Whole trace blocks, so block hashes stay at block boundaries; the rest of a
//   block is unused. RegroupBlocks makes the request's blocks k trace blocks long; its generated-token
//   blocks hold k x block_tokens tokens.
// - hash_salt: cached blocks are shared only between requests of the same format: every block hash of a
//   request with a non-zero salt is mixed with it (0 = unchanged, the replica's format).
// - Budget (token policies; each -1 = none). With I input tokens and c KV tokens (prompt and generated):
//     kept prompt    P    = min(I, prompt_keep_tokens)   the prompt's KV is cut to P tokens when prefill ends
//     resident       R(c) = min(P + c - I, hold_cap_tokens)  generated tokens add; beyond a hold cap they evict
//     read           D(c) = min(R(c), read_cap_tokens)   the context of each decode's attention
//   H2O-like eviction at budget B: prompt_keep = hold_cap = B. RocketKV: prompt_keep = kMemoryFactor x B,
//   read_cap = B. Quest-like selection: read_cap = B only. These are CandidateCostModel's shapes
//   (sim/select/candidate_cost.h); sim/select/serving_kv_test.cc checks that they agree step by step.
//   A request with prompt_keep_tokens >= 0 shares no block (its KV after prefill is not its prompt's):
//   the engine marks it unique_blocks. Its blocks after the cut: NumBlocks(P, k x block_tokens) for the
//   prompt and NumBlocks(R(c) - P, k x block_tokens) for the generated tokens.
// The default RequestKv is the replica's format without budget: every function below is the identity.
//
// Pure value types and functions; thread-safe.
#ifndef KVSIM_SIM_SERVING_REQUEST_KV_H_
#define KVSIM_SIM_SERVING_REQUEST_KV_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "config/kv_format.h"
#include "traces/request.h"

namespace kvsim {

struct RequestKv {
  int32_t config = -1;               // index of the configuration in RequestKvAssigner::names(); -1 = none
  const KvFormat* format = nullptr;  // not owned (the assigner's)
  int32_t block_factor = 1;
  uint64_t hash_salt = 0;
  int64_t prompt_keep_tokens = -1;
  int64_t hold_cap_tokens = -1;
  int64_t read_cap_tokens = -1;

  bool has_budget() const { return prompt_keep_tokens >= 0 || hold_cap_tokens >= 0 || read_cap_tokens >= 0; }
};

// P above.
inline int64_t KeptPromptTokens(const RequestKv& kv, int64_t input_tokens) {
  return kv.prompt_keep_tokens < 0 ? input_tokens : std::min(input_tokens, kv.prompt_keep_tokens);
}

// R(c) above, for c >= input_tokens (prefill done).
inline int64_t ResidentKvTokens(const RequestKv& kv, int64_t input_tokens, int64_t kv_tokens) {
  if (!kv.has_budget()) return kv_tokens;
  const int64_t resident = KeptPromptTokens(kv, input_tokens) + kv_tokens - input_tokens;
  return kv.hold_cap_tokens < 0 ? resident : std::min(resident, kv.hold_cap_tokens);
}

// D(c) above.
inline int64_t ReadKvTokens(const RequestKv& kv, int64_t input_tokens, int64_t kv_tokens) {
  if (!kv.has_budget()) return kv_tokens;
  const int64_t resident = ResidentKvTokens(kv, input_tokens, kv_tokens);
  return kv.read_cap_tokens < 0 ? resident : std::min(resident, kv.read_cap_tokens);
}

// The KV tokens BlockManager::Grow is asked for at c: the input tokens plus the generated tokens resident
// beside the kept prompt, I + max(0, R(c) - P) (c itself without a budget).
inline int64_t GrowKvTokens(const RequestKv& kv, int64_t input_tokens, int64_t kv_tokens) {
  if (!kv.has_budget()) return kv_tokens;
  return input_tokens +
         std::max<int64_t>(0, ResidentKvTokens(kv, input_tokens, kv_tokens) - KeptPromptTokens(kv, input_tokens));
}

// Makes `request`'s blocks `block_factor` trace blocks long (the last may be shorter) and mixes every
// hash with `hash_salt` when it is non-zero. A block's new hash is the mixed hash of its last trace block
// (prefix-chained, so it names the whole prefix). Blocks longer than one trace block become variable
// blocks (block_token_counts). REQUIRES: the request's blocks checked (Engine) and block_factor >= 1.
void RegroupBlocks(int32_t block_factor, uint64_t hash_salt, int32_t block_tokens, Request* request);

// Where requests get their configurations from. Implementations are immutable during a run.
class RequestKvAssigner {
 public:
  virtual ~RequestKvAssigner() = default;
  // The configuration of `request` (a trace request, blocks checked). InvalidArgument naming the request
  // when there is none for it.
  virtual absl::StatusOr<RequestKv> Assign(const Request& request) const = 0;
  // Configuration names, indexed by RequestKv::config.
  virtual const std::vector<std::string>& names() const = 0;
};

}  // namespace kvsim

#endif  // KVSIM_SIM_SERVING_REQUEST_KV_H_
