#include "policies/eviction_policy.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kvsim {
namespace {

std::map<std::string, EvictionPolicyFactory>& Registry() {
  static auto* registry = new std::map<std::string, EvictionPolicyFactory>();
  return *registry;
}

}  // namespace

bool RegisterEvictionPolicy(absl::string_view name, EvictionPolicyFactory factory) {
  Registry()[std::string(name)] = std::move(factory);
  return true;
}

absl::StatusOr<std::unique_ptr<EvictionPolicy>> CreateEvictionPolicy(absl::string_view name) {
  auto it = Registry().find(std::string(name));
  if (it == Registry().end()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown eviction policy '", name,
                                                   "'; known: ", absl::StrJoin(EvictionPolicyNames(), ", ")));
  }
  return it->second();
}

absl::Status EvictionPolicy::Configure(const proto::EvictionPolicyConfig& config) {
  if (config.params_case() != proto::EvictionPolicyConfig::PARAMS_NOT_SET) {
    return absl::InvalidArgumentError(absl::StrCat("eviction policy '", Name(),
                                                   "' takes no parameters; got eviction.",
                                                   config.GetDescriptor()->FindFieldByNumber(
                                                       config.params_case())->name()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<EvictionPolicy>> CreateConfiguredEvictionPolicy(
    absl::string_view name, const proto::EvictionPolicyConfig& config) {
  auto policy = CreateEvictionPolicy(name);
  if (!policy.ok()) return policy.status();
  absl::Status status = (*policy)->Configure(config);
  if (!status.ok()) return status;
  return policy;
}

std::vector<std::string> EvictionPolicyNames() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : Registry()) names.push_back(name);
  return names;
}

}  // namespace kvsim
