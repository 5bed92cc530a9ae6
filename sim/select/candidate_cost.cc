#include "sim/select/candidate_cost.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "policies/token/rocketkv_policy.h"
#include "sim/select/candidates.h"
#include "util/status_macros.h"
#include "util/units.h"

namespace kvsim {

absl::StatusOr<std::unique_ptr<CandidateCostModel>> CandidateCostModel::Create(
    const proto::ExperimentConfig& base, const proto::SelectCandidate& candidate) {
  const proto::CostModelKind kind = base.cost_model().kind();
  if (kind != proto::COST_MODEL_KIND_UNSPECIFIED && kind != proto::COST_MODEL_KIND_ROOFLINE) {
    return absl::InvalidArgumentError(
        "cost_model.kind: per-prompt selection costs candidates with the roofline model only");
  }
  std::unique_ptr<CandidateCostModel> model(new CandidateCostModel());
  model->candidate_ = candidate;
  proto::ExperimentConfig config = base;
  if (candidate.kv_dtype() != proto::DTYPE_UNSPECIFIED) config.mutable_model()->set_kv_dtype(candidate.kv_dtype());
  if (candidate.has_quant()) {
    const proto::KvQuantSpec& q = candidate.quant();
    const int group = q.group_size() > 0 ? q.group_size() : config.model().head_dim();
    proto::CostModelConfig* cost = config.mutable_cost_model();
    cost->set_kv_quant_bits(q.bits());
    cost->set_kv_quant_group_size(group);
    const int outlier_bytes = static_cast<int>(std::ceil(q.outlier_fraction() * group * 6 - 1e-9));
    cost->set_kv_scale_bytes_per_group(4 + outlier_bytes);
  }
  config.mutable_scheduler()->set_max_num_seqs(1);
  model->config_ = config;
  absl::StatusOr<std::unique_ptr<RooflineCostModel>> roofline = RooflineCostModel::Create(config);
  if (!roofline.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("candidate '", candidate.name(), "': ", roofline.status().message()));
  }
  model->roofline_ = *std::move(roofline);
  if (candidate.has_token()) {
    const std::string& policy = candidate.token().policy();
    KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TokenPolicy> instance, CreateTokenPolicy(policy));
    const std::string base_name = policy.substr(policy.rfind('+') == std::string::npos ? 0 : policy.rfind('+') + 1);
    switch (instance->kind()) {
      case TokenPolicy::Kind::kEvict:
        model->shape_ = Shape::kEvict;
        break;
      case TokenPolicy::Kind::kSelect:
        model->shape_ = base_name == "rocketkv" ? Shape::kRocket : Shape::kSelect;
        break;
      default:
        model->shape_ = Shape::kAll;
        break;
    }
    if (base_name == "h2o" || base_name == "scissorhands") {
      model->overhead_ = Overhead::kFullPrompt;
    } else if (base_name == "snapkv" || base_name == "pyramidkv" || base_name == "rocketkv" ||
               absl::StrContains(policy, "adakv+")) {
      model->overhead_ = Overhead::kWindow;
    } else if (base_name == "tova") {
      model->overhead_ = Overhead::kLastQuery;
    }
  }
  return model;
}

RequestKv CandidateCostModel::Budget(int64_t input_tokens) const {
  RequestKv kv;
  if (shape_ == Shape::kAll) return kv;
  const int64_t budget = std::max<int64_t>(1, CandidateBudgetTokens(candidate_, input_tokens));
  switch (shape_) {
    case Shape::kEvict:
      kv.prompt_keep_tokens = kv.hold_cap_tokens = budget;
      break;
    case Shape::kRocket:
      kv.prompt_keep_tokens = RocketKvPolicy::kMemoryFactor * budget;
      kv.read_cap_tokens = budget;
      break;
    default:
      kv.read_cap_tokens = budget;
      break;
  }
  return kv;
}

int64_t CandidateCostModel::ReadTokens(int64_t input_tokens, int64_t step) const {
  return ReadKvTokens(Budget(input_tokens), input_tokens, input_tokens + step - 1);
}

int64_t CandidateCostModel::HeldTokens(int64_t input_tokens, int64_t step) const {
  return ResidentKvTokens(Budget(input_tokens), input_tokens, input_tokens + step - 1);
}

int64_t CandidateCostModel::PeakKvTokens(int64_t input_tokens, int64_t output_tokens) const {
  // Held at the last decode step plus the KV its own token writes.
  const int64_t last = std::max<int64_t>(1, output_tokens - 1);
  int64_t final_held = output_tokens > 1 ? HeldTokens(input_tokens, last) + 1 : 0;
  if (shape_ == Shape::kEvict) final_held = std::min(final_held, CandidateBudgetTokens(candidate_, input_tokens));
  int64_t prefill_peak = input_tokens;
  if (shape_ == Shape::kEvict || shape_ == Shape::kRocket) {
    const int64_t held = HeldTokens(input_tokens, 1);
    const int64_t layers = std::max<int64_t>(1, roofline_->params().num_layers);
    prefill_peak = held + (input_tokens - held + layers - 1) / layers;
  }
  return std::max(prefill_peak, final_held);
}

int64_t CandidateCostModel::OverheadQueries(int64_t input_tokens) const {
  switch (overhead_) {
    case Overhead::kFullPrompt:
      return input_tokens;
    case Overhead::kWindow:
      return std::min(input_tokens, kSelectScoreWindow);
    case Overhead::kLastQuery:
      return 1;
    default:
      return 0;
  }
}

proto::ExperimentConfig CandidateCostModel::ConfigFor(int64_t input_tokens) const {
  proto::ExperimentConfig config = config_;
  config.mutable_scheduler()->set_max_num_batched_tokens(
      static_cast<int32_t>(std::min<int64_t>(input_tokens, int64_t{1} << 30)));
  return config;
}

absl::StatusOr<CandidateCost> CandidateCostModel::Cost(int64_t input_tokens, int64_t output_tokens) const {
  if (input_tokens < 1 || output_tokens < 1 || input_tokens > kMaxCostInputTokens ||
      output_tokens > kMaxCostOutputTokens) {
    return absl::InvalidArgumentError(absl::StrCat("input_tokens (", input_tokens, ") must be in [1, ",
                                                   kMaxCostInputTokens, "] and output_tokens (", output_tokens,
                                                   ") in [1, ", kMaxCostOutputTokens, "]"));
  }
  CandidateCost cost;
  BatchShape prefill;
  prefill.sequences.push_back({.context_tokens = 0, .new_tokens = input_tokens});
  KVSIM_ASSIGN_OR_RETURN(cost.prefill_ns, roofline_->IterationTimeNs(prefill));
  const int64_t queries = OverheadQueries(input_tokens);
  if (queries > 0) {
    SequenceWork pass{.context_tokens = input_tokens - queries, .new_tokens = queries};
    const double seconds = roofline_->AttentionSeconds(pass) * roofline_->params().num_layers;
    cost.overhead_ns = SecondsToNs(seconds);
  }
  BatchShape decode;
  decode.sequences.push_back({.context_tokens = 0, .new_tokens = 1});
  for (int64_t step = 1; step < output_tokens; ++step) {
    decode.sequences[0].context_tokens = ReadTokens(input_tokens, step);
    KVSIM_ASSIGN_OR_RETURN(int64_t ns, roofline_->IterationTimeNs(decode));
    cost.decode_ns += ns;
  }
  cost.latency_ns = cost.prefill_ns + cost.overhead_ns + cost.decode_ns;
  cost.peak_kv_tokens = PeakKvTokens(input_tokens, output_tokens);
  KVSIM_ASSIGN_OR_RETURN(cost.memory, EstimatePeakMemory(ConfigFor(input_tokens), cost.peak_kv_tokens));
  cost.latency_ms = static_cast<double>(cost.latency_ns) / 1e6;
  cost.peak_memory_mb = static_cast<double>(cost.memory.total_bytes) / (1 << 20);
  return cost;
}

}  // namespace kvsim
