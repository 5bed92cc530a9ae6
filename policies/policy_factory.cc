#include "policies/policy_factory.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "policies/leaf_first_policy.h"
#include "policies/ttl_pin_policy.h"
#include "util/status_macros.h"

namespace kvsim {

namespace {

// The registered name a config means: its name in lower case (any case is accepted, in specs and in config
// files alike), "lru" when empty.
std::string RegisteredName(const proto::EvictionPolicyConfig& config) {
  return config.name().empty() ? "lru" : absl::AsciiStrToLower(config.name());
}

}  // namespace

absl::StatusOr<std::unique_ptr<EvictionPolicy>> CreateEvictionPolicyFromConfig(
    const proto::EvictionPolicyConfig& config) {
  const std::string name = RegisteredName(config);
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<EvictionPolicy> policy, CreateConfiguredEvictionPolicy(name, config));
  if (config.leaf_first()) policy = std::make_unique<LeafFirstPolicy>(std::move(policy));
  if (config.has_ttl_pin()) {
    KVSIM_RETURN_IF_ERROR(TtlPinPolicy::ValidateTtlPinParams(config.ttl_pin()));
    policy = std::make_unique<TtlPinPolicy>(std::move(policy), config.ttl_pin());
  }
  return policy;
}

absl::StatusOr<std::unique_ptr<EvictionPolicy>> CreateServingEvictionPolicy(const proto::EvictionPolicyConfig& config) {
  if (PolicyNeedsOracle(config)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "field eviction.name: '", config.name(), "' needs each block's next access, which only cache replay knows ",
        "(kvsim cache, kvsim mrc, kvsim sweep --mode=cache); the serving replay cannot run it"));
  }
  return CreateEvictionPolicyFromConfig(config);
}

absl::StatusOr<proto::EvictionPolicyConfig> ParsePolicySpec(absl::string_view spec) {
  std::vector<absl::string_view> parts = absl::StrSplit(spec, '+');
  proto::EvictionPolicyConfig config;
  if (parts[0].empty()) {
    return absl::InvalidArgumentError(absl::StrCat("policy spec '", spec, "': empty policy name"));
  }
  config.set_name(absl::AsciiStrToLower(parts[0]));  // registered names are lower case; any case is accepted
  for (size_t i = 1; i < parts.size(); ++i) {
    if (absl::EqualsIgnoreCase(parts[i], "leaf_first")) {
      config.set_leaf_first(true);
    } else if (absl::EqualsIgnoreCase(parts[i], "ttl")) {
      config.mutable_ttl_pin();
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("policy spec '", spec, "': unknown modifier '", parts[i], "'; known: leaf_first, ttl"));
    }
  }
  return config;
}

std::string PolicyLabel(const proto::EvictionPolicyConfig& config) {
  std::string label = RegisteredName(config);
  if (config.leaf_first()) absl::StrAppend(&label, "+leaf_first");
  if (config.has_ttl_pin()) absl::StrAppend(&label, "+ttl");
  return label;
}

bool PolicyNeedsOracle(const proto::EvictionPolicyConfig& config) { return RegisteredName(config) == "belady"; }

}  // namespace kvsim
