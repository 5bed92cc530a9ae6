#include "policies/token/kvp_policy.h"

#include <limits>
#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "util/check.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

// Models already loaded, by path: the evaluator creates one policy per budget, all from one file. Holds
// weak references, so a model lives as long as a policy uses it.
absl::StatusOr<std::shared_ptr<const KvpModel>> SharedModel(const std::string& path) {
  static std::mutex mutex;
  static auto* loaded = new std::map<std::string, std::weak_ptr<const KvpModel>>();
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = loaded->find(path); it != loaded->end()) {
    if (std::shared_ptr<const KvpModel> model = it->second.lock()) return model;
  }
  KVSIM_ASSIGN_OR_RETURN(KvpModel model, LoadKvpModel(path));
  auto shared = std::make_shared<const KvpModel>(std::move(model));
  (*loaded)[path] = shared;
  return shared;
}

}  // namespace

KvpPolicy::KvpPolicy(std::shared_ptr<const KvpModel> model, std::string model_path)
    : model_(std::move(model)), model_path_(std::move(model_path)) {
  KVSIM_CHECK(model_ != nullptr);
}

absl::StatusOr<std::unique_ptr<TokenPolicy>> KvpPolicy::Create(const TokenPolicyOptions& options,
                                                               const TokenPolicyParams& params) {
  std::string path;
  for (const auto& [key, value] : params) {
    if (key != "model") {
      return absl::InvalidArgumentError(
          absl::StrCat("token policy kvp: unknown parameter '", key, "' (it takes model=FILE)"));
    }
    path = value;
  }
  if (path.empty()) {
    return absl::InvalidArgumentError("token policy kvp needs its model file: kvp:model=FILE (`kvsim train` writes one)");
  }
  KVSIM_ASSIGN_OR_RETURN(std::shared_ptr<const KvpModel> model, SharedModel(path));
  return std::unique_ptr<TokenPolicy>(new KvpPolicy(std::move(model), path));
}

absl::Status KvpPolicy::CheckTrace(const AttentionTraceHeader& header) const {
  return CheckKvpLayout(*model_, model_path_, header, "");
}

std::vector<double> KvpScores(const KvpMlp& agent, const float* keys, const float* values, int64_t n, int head_dim,
                              KvpMatrix* scratch) {
  KvpFeatures(keys, values, n, head_dim, scratch);
  Eigen::VectorXf scores;
  agent.Forward(*scratch, &scores);
  return std::vector<double>(scores.data(), scores.data() + n);
}

std::vector<double> KvpPolicy::ScorePrompt(absl::Span<const HeadContext> heads, int h) {
  const HeadContext& head = heads[h];
  const KvpMlp* agent = model_->Agent(head.layer, head.kv_head);
  KVSIM_CHECK(agent != nullptr && agent->dim() == KvpInputDim(head.head_dim))
      << "KVP model " << model_path_ << " has no agent for layer " << head.layer << ", KV head " << head.kv_head
      << " of head_dim " << head.head_dim << " (CheckTrace() was not called)";
  std::vector<double> scores = KvpScores(*agent, head.keys, head.values, head.prompt_len, head.head_dim, &features_);
  const double kProtected = std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < head.prompt_len; ++i) {
    if (i < kSinkTokens || i >= head.prompt_len - kRecentTokens) scores[i] = kProtected;
  }
  return scores;
}

KVSIM_REGISTER_TOKEN_POLICY_WITH_PARAMS("kvp", KvpPolicy::Create);

}  // namespace kvsim
