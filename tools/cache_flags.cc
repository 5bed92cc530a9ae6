#include "tools/cache_flags.h"

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "policies/policy_factory.h"
#include "tools/common_flags.h"
#include "util/status_macros.h"

namespace kvsim {

absl::StatusOr<CacheReplayOptions> CacheReplayOptionsFromFlags() {
  CacheReplayOptions options;
  const int32_t block_tokens = absl::GetFlag(FLAGS_block_tokens);
  if (block_tokens < 0) return absl::InvalidArgumentError("--block_tokens must be >= 0 (0 = 16)");
  options.block_tokens = block_tokens > 0 ? block_tokens : 16;
  const std::string restore = absl::GetFlag(FLAGS_restore_cost);
  if (restore == "uniform") {
    options.restore_cost = RestoreCost::kUniform;
  } else if (restore == "position") {
    options.restore_cost = RestoreCost::kPosition;
  } else if (restore == "auto") {
    options.restore_cost = RestoreCost::kAuto;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--restore_cost: '", restore, "' is not one of: auto, uniform, position"));
  }
  KVSIM_ASSIGN_OR_RETURN(options.num_threads, ThreadsFromFlag());
  return options;
}

absl::StatusOr<std::vector<proto::EvictionPolicyConfig>> PoliciesFromFlag() {
  std::vector<proto::EvictionPolicyConfig> policies;
  for (absl::string_view spec : absl::StrSplit(absl::GetFlag(FLAGS_policy), ',')) {
    auto config = ParsePolicySpec(spec);
    if (!config.ok()) return absl::InvalidArgumentError(absl::StrCat("--policy: ", config.status().message()));
    KVSIM_RETURN_IF_ERROR(CreateEvictionPolicyFromConfig(*config).status());  // unknown names fail here
    policies.push_back(*config);
  }
  return policies;
}

absl::StatusOr<std::unique_ptr<TraceReader>> OpenTraceFromFlags() {
  const std::string path = absl::GetFlag(FLAGS_trace);
  if (path.empty()) return absl::InvalidArgumentError("--trace is required");
  KVSIM_ASSIGN_OR_RETURN(TraceOptions options, CheckedTraceOptionsFromFlags());
  return OpenTrace(path, options);
}

}  // namespace kvsim
