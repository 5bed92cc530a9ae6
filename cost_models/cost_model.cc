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
