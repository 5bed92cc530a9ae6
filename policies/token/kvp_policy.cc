#include "policies/token/kvp_policy.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "policies/token/token_policy_util.h"
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
    return absl::InvalidArgumentError(
        "token policy kvp needs its model file: kvp:model=FILE (`kvsim train` writes one)");
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

void KvpPolicy::BeginLayer(absl::Span<const HeadContext> heads, int64_t budget_tokens) {
  KVSIM_CHECK(!heads.empty() && budget_tokens >= 1);
  prompt_len_ = heads[0].prompt_len;
  budget_ = budget_tokens;
  protected_.clear();
  for (int64_t i = 0; i < std::min(kSinkTokens, prompt_len_); ++i) protected_.push_back(static_cast<int32_t>(i));
  for (int64_t i = prompt_len_ - 1; i >= std::max(kSinkTokens, prompt_len_ - kRecentTokens); --i) {
    protected_.push_back(static_cast<int32_t>(i));
  }
  const int64_t first_ranked = kSinkTokens, end_ranked = prompt_len_ - kRecentTokens;
  ranked_.assign(heads.size(), {});
  for (size_t h = 0; h < heads.size(); ++h) {
    const HeadContext& head = heads[h];
    if (end_ranked <= first_ranked) continue;
    const KvpMlp* agent = model_->Agent(head.layer, head.kv_head);
    KVSIM_CHECK(agent != nullptr && agent->dim() == KvpInputDim(head.head_dim))
        << "KVP model " << model_path_ << " has no agent for layer " << head.layer << ", KV head " << head.kv_head
        << " of head_dim " << head.head_dim << " (CheckTrace() was not called)";
    const std::vector<double> all = KvpScores(*agent, head.keys, head.values, prompt_len_, head.head_dim, &features_);
    const std::vector<double> middle(all.begin() + first_ranked, all.begin() + end_ranked);
    ranked_[h] = TopKIndices(middle, budget_tokens);
    for (int32_t& i : ranked_[h]) i += static_cast<int32_t>(first_ranked);
  }
}

void KvpPolicy::Step(const LayerStep& step, std::vector<KeptSet>* kept) {
  const int64_t p = step.position;
  for (size_t h = 0; h < ranked_.size(); ++h) {
    (*kept)[h].per_query.resize(1);
    std::vector<int32_t>& set = (*kept)[h].per_query[0];
    set.clear();
    int64_t room = std::min(budget_, p + 1);
    auto take = [&](int32_t i) {
      if (room > 0) {
        set.push_back(i);
        --room;
      }
    };
    take(static_cast<int32_t>(p));
    for (int32_t i : protected_) take(i);
    for (int64_t i = p - 1; i >= prompt_len_ && room > 0; --i) take(static_cast<int32_t>(i));
    for (size_t r = 0; r < ranked_[h].size() && room > 0; ++r) take(ranked_[h][r]);
  }
}

KVSIM_REGISTER_TOKEN_POLICY_WITH_PARAMS("kvp", KvpPolicy::Create);

}  // namespace kvsim
