#include "cost_models/cost_model.h"

#include <algorithm>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "config/model_spec.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

// The registered name of the cost model `config` asks for; an unset kind (a config that was not resolved)
// means what ResolveExperimentConfig would make of it on the config's device.
std::string KindName(const proto::ExperimentConfig& config) {
  proto::CostModelKind kind = config.cost_model().kind();
  if (kind == proto::COST_MODEL_KIND_UNSPECIFIED) kind = DefaultCostModelKind(config.device());
  switch (kind) {
    case proto::COST_MODEL_KIND_ROOFLINE:
      return "roofline";
    case proto::COST_MODEL_KIND_TABLE:
      return "table";
    case proto::COST_MODEL_KIND_FITTED:
      return "fitted";
    default:
      return absl::StrCat("kind ", static_cast<int>(kind));
  }
}

// The default decode run: every iteration priced whole.
class StepwiseDecodeRun final : public DecodeRunPricer {
 public:
  explicit StepwiseDecodeRun(const CostModel* model) : model_(model) {}
  absl::StatusOr<int64_t> IterationTimeNs(int64_t /*step*/, const BatchShape& batch) override {
    return model_->IterationTimeNs(batch);
  }

 private:
  const CostModel* const model_;
};

}  // namespace

std::unique_ptr<DecodeRunPricer> CostModel::StartDecodeRun(const BatchShape& /*first*/) const {
  return std::make_unique<StepwiseDecodeRun>(this);
}

absl::StatusOr<CostBreakdown> CostModel::IterationBreakdown(const BatchShape& batch) const {
  absl::StatusOr<int64_t> total = IterationTimeNs(batch);
  if (!total.ok()) return total.status();
  CostBreakdown breakdown;
  breakdown.other_ns = *total;
  breakdown.total_ns = *total;
  return breakdown;
}

absl::StatusOr<CostBreakdown> CostModel::EstimateBreakdown(const BatchShape& batch) const {
  return IterationBreakdown(batch);
}

absl::StatusOr<int64_t> CostModel::RecomputeTimeNs(int64_t position, int64_t num_tokens) const {
  if (position < 0 || num_tokens <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("recompute needs position >= 0 and num_tokens > 0, got ", position, " and ", num_tokens));
  }
  BatchShape batch;
  SequenceWork piece;
  piece.context_tokens = position;
  piece.new_tokens = num_tokens;
  piece.samples_token = false;
  piece.recompute = true;
  batch.sequences.push_back(piece);
  absl::StatusOr<CostBreakdown> breakdown = EstimateBreakdown(batch);
  if (!breakdown.ok()) return breakdown.status();
  return breakdown->total_ns - breakdown->overhead_ns;
}

std::vector<int64_t> L2ResidentTokens(const BatchShape& batch, double kv_bytes_per_token, int64_t l2_bytes) {
  std::vector<int64_t> resident;
  bool any = false;
  for (const SequenceWork& s : batch.sequences) any = any || s.prefix_id != 0;
  if (!any) return resident;
  resident.assign(batch.sequences.size(), 0);
  std::map<uint64_t, int64_t> first_shared;  // prefix group -> shared tokens its first decode read
  for (size_t i = 0; i < batch.sequences.size(); ++i) {
    const SequenceWork& s = batch.sequences[i];
    if (s.prefix_id == 0 || s.new_tokens != 1 || s.shared_prefix_tokens <= 0) continue;
    const int64_t shared = std::min(s.shared_prefix_tokens, s.context_tokens);
    auto [it, inserted] = first_shared.emplace(s.prefix_id, shared);
    if (inserted) continue;
    const int64_t common = std::min(shared, it->second);
    if (common * kv_bytes_per_token <= static_cast<double>(l2_bytes)) resident[i] = common;
  }
  return resident;
}

Registry<CostModelFactory>& CostModelRegistry() {
  static auto* registry = new Registry<CostModelFactory>("cost model");
  return *registry;
}

absl::StatusOr<std::unique_ptr<CostModel>> CreateCostModel(const proto::ExperimentConfig& config) {
  const std::string name = KindName(config);
  KVSIM_ASSIGN_OR_RETURN(const CostModelFactory* factory, CostModelRegistry().Get(name));
  return (*factory)(config);
}

}  // namespace kvsim
