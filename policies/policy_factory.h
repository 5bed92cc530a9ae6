// File: policies/policy_factory.h
//
// Builds an eviction policy from its configuration: the registered policy `name` with its parameters,
// wrapped in the prefix-tree constraint (`leaf_first`) and then in TTL pinning (`ttl_pin`) when asked.
// Also parses the compact spec the command line uses: "NAME[+leaf_first][+ttl]", e.g. "s3fifo+leaf_first".
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(proto::EvictionPolicyConfig config, ParsePolicySpec("lru+ttl"));
//   KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<EvictionPolicy> policy, CreateEvictionPolicyFromConfig(config));
//
// Thread-safety: the functions are thread-safe (registration happens before main).
#ifndef KVSIM_POLICIES_POLICY_FACTORY_H_
#define KVSIM_POLICIES_POLICY_FACTORY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "policies/eviction_policy.h"
#include "proto/config.pb.h"

namespace kvsim {

// The configured policy; name "" means "lru". InvalidArgument for an unknown name (listing the known
// ones), parameters of another policy, or out-of-range parameters (naming the field).
absl::StatusOr<std::unique_ptr<EvictionPolicy>> CreateEvictionPolicyFromConfig(
    const proto::EvictionPolicyConfig& config);

// As CreateEvictionPolicyFromConfig, for a cache that does not know future accesses (the serving
// simulator: requests arrive, are scheduled and finish over time, so no block's next use is known when a
// victim is chosen). Oracle policies (PolicyNeedsOracle: belady) are refused with InvalidArgument naming
// the field and where they can run (cache replay: `kvsim cache`, `kvsim mrc`, `kvsim sweep --mode=cache`).
absl::StatusOr<std::unique_ptr<EvictionPolicy>> CreateServingEvictionPolicy(const proto::EvictionPolicyConfig& config);

// "NAME[+leaf_first][+ttl]" -> config (ttl with default parameters). InvalidArgument for an empty name or
// an unknown modifier. The name is checked by CreateEvictionPolicyFromConfig, not here.
absl::StatusOr<proto::EvictionPolicyConfig> ParsePolicySpec(absl::string_view spec);

// The inverse, for result tables: "NAME[+leaf_first][+ttl]".
std::string PolicyLabel(const proto::EvictionPolicyConfig& config);

// Whether the policy needs AccessInfo::next_access_clock (the Belady oracle).
bool PolicyNeedsOracle(const proto::EvictionPolicyConfig& config);

}  // namespace kvsim

#endif  // KVSIM_POLICIES_POLICY_FACTORY_H_
