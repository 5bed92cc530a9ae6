#include "cost_models/cost_model.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kvsim {
namespace {

std::map<std::string, CostModelFactory>& Registry() {
  static auto* registry = new std::map<std::string, CostModelFactory>();
  return *registry;
}

std::string KindName(proto::CostModelKind kind) {
  switch (kind) {
    case proto::COST_MODEL_KIND_UNSPECIFIED:
    case proto::COST_MODEL_KIND_ROOFLINE:
      return "roofline";
    case proto::COST_MODEL_KIND_TABLE:
      return "table";
    default:
      return absl::StrCat("kind ", static_cast<int>(kind));
  }
}

}  // namespace

absl::StatusOr<CostBreakdown> CostModel::IterationBreakdown(const BatchShape& batch) const {
  absl::StatusOr<int64_t> total = IterationTimeNs(batch);
  if (!total.ok()) return total.status();
  CostBreakdown breakdown;
  breakdown.other_ns = *total;
  breakdown.total_ns = *total;
  return breakdown;
}

absl::StatusOr<int64_t> CostModel::RecomputeTimeNs(int64_t position, int64_t num_tokens) const {
  if (position < 0 || num_tokens <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("recompute needs position >= 0 and num_tokens > 0, got ",
                                                   position, " and ", num_tokens));
  }
  BatchShape batch;
  SequenceWork piece;
  piece.context_tokens = position;
  piece.new_tokens = num_tokens;
  piece.samples_token = false;
  piece.recompute = true;
  batch.sequences.push_back(piece);
  absl::StatusOr<CostBreakdown> breakdown = IterationBreakdown(batch);
  if (!breakdown.ok()) return breakdown.status();
  return breakdown->total_ns - breakdown->overhead_ns;
}

bool RegisterCostModel(absl::string_view name, CostModelFactory factory) {
  Registry()[std::string(name)] = std::move(factory);
  return true;
}

absl::StatusOr<std::unique_ptr<CostModel>> CreateCostModel(const proto::ExperimentConfig& config) {
  const std::string name = KindName(config.cost_model().kind());
  auto it = Registry().find(name);
  if (it == Registry().end()) {
    std::vector<std::string> known;
    for (const auto& [n, f] : Registry()) known.push_back(n);
    return absl::InvalidArgumentError(absl::StrCat("cost model '", name, "' is not built into this binary; known: ",
                                                   absl::StrJoin(known, ", ")));
  }
  return it->second(config);
}

}  // namespace kvsim
