// The name lists help texts cite ({eviction_policies}, {token_policies}, ...), each read from its registry
// when help is printed, so no help text or README keeps a list by hand. `kvsim help names` prints them.
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "cost_models/cost_model.h"
#include "policies/eviction_policy.h"
#include "policies/token/token_policy.h"
#include "sim/sweep/sweep.h"
#include "tools/command.h"
#include "traces/trace_format.h"

namespace kvsim {
namespace {

std::string Spaced(const std::vector<std::string>& names) { return absl::StrJoin(names, " "); }

KVSIM_REGISTER(HelpListRegistry(), "eviction_policies", [] { return Spaced(EvictionPolicyNames()); });
KVSIM_REGISTER(HelpListRegistry(), "token_policies", [] { return Spaced(TokenPolicyRegistry().Names()); });
KVSIM_REGISTER(HelpListRegistry(), "token_policy_wrappers",
               [] { return Spaced(TokenPolicyWrapperRegistry().Names()); });
KVSIM_REGISTER(HelpListRegistry(), "token_policies_with_params",
               [] { return Spaced(TokenPolicyParamRegistry().Names()); });
KVSIM_REGISTER(HelpListRegistry(), "trace_formats", [] { return Spaced(TraceFormatRegistry().Names()); });
KVSIM_REGISTER(HelpListRegistry(), "cost_models", [] { return Spaced(CostModelRegistry().Names()); });
KVSIM_REGISTER(HelpListRegistry(), "sweep_modes", [] { return Spaced(SweepModeRegistry().Names()); });
KVSIM_REGISTER(HelpListRegistry(), "sweep_axes", [] { return Spaced(SweepAxisRegistry().Names()); });

}  // namespace
}  // namespace kvsim
