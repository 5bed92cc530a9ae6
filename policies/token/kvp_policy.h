// File: policies/token/kvp_policy.h
//
// "kvp" (KV Policy, "Learning to Evict from Key-Value Cache", arXiv 2602.10238): eviction as ranking by a
// learned per-(layer, KV head) MLP over each token's key, value and position (kvp_model.h; trained by
// `kvsim train`, sim/train/). As in the paper's inference: the prompt is compressed once after prefill,
// its first kSinkTokens and last kRecentTokens tokens are always kept (they rank first), and the budget is
// uniform over heads and layers; the rest of the prompt is ranked by the agent's score.
//
// At the decode step at position p each head keeps exactly min(B, p + 1) tokens, the first of this order:
// the current token p; the protected prompt tokens (first 4, then the last 16 from the newest); the earlier
// decode tokens from the newest; the other prompt tokens by score (ties: lower position). So the protected
// tokens stay whenever B > 20, decode tokens displace the lowest-ranked prompt tokens one per step, and
// once the prompt's ranked tokens are gone the oldest decode tokens go (a sink + window cache). Every
// token's rank only falls as p grows, so eviction is permanent. Kind: kEvict.
//
// Spec: "kvp:model=FILE". The model is loaded when the policy is created (InvalidArgument or NotFound
// naming the file); CheckTrace() refuses a trace whose layout the model was not trained for, naming both.
//
// Thread-safety: as TokenPolicy (the loaded model is shared read-only between instances of one file).
#ifndef KVSIM_POLICIES_TOKEN_KVP_POLICY_H_
#define KVSIM_POLICIES_TOKEN_KVP_POLICY_H_

#include <memory>
#include <string>
#include <vector>

#include "policies/token/kvp_model.h"
#include "policies/token/token_policy.h"

namespace kvsim {

class KvpPolicy final : public TokenPolicy {
 public:
  static constexpr int64_t kSinkTokens = 4;
  static constexpr int64_t kRecentTokens = 16;

  // REQUIRES: model != null.
  KvpPolicy(std::shared_ptr<const KvpModel> model, std::string model_path);

  // From the spec's parameters: model=FILE (required; no others).
  static absl::StatusOr<std::unique_ptr<TokenPolicy>> Create(const TokenPolicyOptions& options,
                                                             const TokenPolicyParams& params);

  // "kvp:model=FILE" as given, so that two models evaluated side by side are told apart.
  std::string Name() const override { return "kvp:model=" + model_path_; }
  Kind kind() const override { return Kind::kEvict; }
  absl::Status CheckTrace(const AttentionTraceHeader& header) const override;
  // REQUIRES: CheckTrace() accepted the trace of `heads` (a head without an agent is a fatal error).
  void BeginLayer(absl::Span<const HeadContext> heads, int64_t budget_tokens) override;
  void Step(const LayerStep& step, std::vector<KeptSet>* kept) override;

 private:
  std::shared_ptr<const KvpModel> model_;
  std::string model_path_;
  KvpMatrix features_;  // reused between heads
  int64_t prompt_len_ = 0, budget_ = 0;
  std::vector<int32_t> protected_;            // in priority order
  std::vector<std::vector<int32_t>> ranked_;  // per head: its best unprotected prompt tokens, best first
};

// The agent's raw scores of tokens 0..n-1 of a cache holding `keys`/`values` (n x head_dim), in double.
std::vector<double> KvpScores(const KvpMlp& agent, const float* keys, const float* values, int64_t n, int head_dim,
                              KvpMatrix* scratch);

}  // namespace kvsim

#endif  // KVSIM_POLICIES_TOKEN_KVP_POLICY_H_
