#include "policies/eviction_policy.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "util/check.h"
#include "util/status_macros.h"

namespace kvsim {

Registry<EvictionPolicyFactory>& EvictionPolicyRegistry() {
  static auto* registry = new Registry<EvictionPolicyFactory>("eviction policy");
  return *registry;
}

absl::StatusOr<std::unique_ptr<EvictionPolicy>> CreateEvictionPolicy(absl::string_view name) {
  KVSIM_ASSIGN_OR_RETURN(const EvictionPolicyFactory* factory, EvictionPolicyRegistry().Get(name));
  return (*factory)();
}

RequestEndInfo MakeRequestEndInfo(const Request& request, int64_t time_ns) {
  RequestEndInfo end;
  end.request_id = request.request_id;
  end.session_id = request.session_id;
  end.time_ns = time_ns;
  if (!request.tool_calls.empty()) {
    end.ends_in_tool_call = true;
    end.tool_name = request.tool_calls.front().name;
    end.tool_duration_ns = 0;
    for (const ToolCall& call : request.tool_calls) end.tool_duration_ns += std::max<int64_t>(call.duration_ns, 0);
  }
  return end;
}

BlockId EvictionPolicy::SelectVictim(VictimFilter evictable) {
  absl::optional<BlockId> victim = TrySelectVictim(evictable);
  KVSIM_CHECK(victim.has_value()) << Name() << ": no evictable block";
  return *victim;
}

absl::optional<BlockId> EvictionPolicy::TrySelectVictim(VictimFilter evictable) {
  absl::optional<BlockId> victim = ChooseVictim(evictable);
  KVSIM_CHECK(!victim.has_value() || evictable(*victim))
      << Name() << ": chose block " << *victim << ", which the cache may not evict";
  return victim;
}

ForwardingPolicy::ForwardingPolicy(std::unique_ptr<EvictionPolicy> inner) : inner_(std::move(inner)) {
  KVSIM_CHECK(inner_ != nullptr) << "a wrapper needs an inner policy";
}

absl::Status EvictionPolicy::Configure(const proto::EvictionPolicyConfig& config) {
  if (config.params_case() != proto::EvictionPolicyConfig::PARAMS_NOT_SET) {
    return absl::InvalidArgumentError(
        absl::StrCat("eviction policy '", Name(), "' takes no parameters; got eviction.",
                     config.GetDescriptor()->FindFieldByNumber(config.params_case())->name()));
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

std::vector<std::string> EvictionPolicyNames() { return EvictionPolicyRegistry().Names(); }

}  // namespace kvsim
