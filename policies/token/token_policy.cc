#include "policies/token/token_policy.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kvsim {

Registry<TokenPolicyFactory>& TokenPolicyRegistry() {
  static auto* registry = new Registry<TokenPolicyFactory>("token policy");
  return *registry;
}

Registry<TokenPolicyWrapperFactory>& TokenPolicyWrapperRegistry() {
  static auto* registry = new Registry<TokenPolicyWrapperFactory>("token policy wrapper");
  return *registry;
}

const char* TokenPolicyKindName(TokenPolicy::Kind kind) {
  switch (kind) {
    case TokenPolicy::Kind::kFull:
      return "full";
    case TokenPolicy::Kind::kEvict:
      return "evict";
    case TokenPolicy::Kind::kSelect:
      return "select";
    case TokenPolicy::Kind::kQuantize:
      return "quantize";
  }
  return "?";
}

absl::StatusOr<std::unique_ptr<TokenPolicy>> CreateTokenPolicy(absl::string_view spec,
                                                               const TokenPolicyOptions& options) {
  const size_t plus = spec.find('+');
  const std::string head(spec.substr(0, plus));
  if (const TokenPolicyWrapperFactory* wrapper = TokenPolicyWrapperRegistry().Find(head)) {
    const bool alone = plus == absl::string_view::npos;
    if (!alone && plus + 1 == spec.size()) {
      return absl::InvalidArgumentError(absl::StrCat("token policy '", spec, "': nothing after '+' (wrappers ",
                                                     "combine as wrapper+policy, e.g. kivi4+h2o)"));
    }
    const absl::string_view inner_spec = alone ? "full" : spec.substr(plus + 1);
    auto inner = CreateTokenPolicy(inner_spec, options);
    if (!inner.ok()) return inner.status();
    std::unique_ptr<TokenPolicy> policy = (*wrapper)(options, std::move(*inner));
    if (policy == nullptr && alone) {
      return absl::InvalidArgumentError(absl::StrCat("token policy '", head, "' wraps another and cannot stand ",
                                                     "alone: write ", head, "+POLICY (see its documentation for ",
                                                     "the policies it accepts)"));
    }
    if (policy == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("token policy '", head, "' cannot wrap '", inner_spec,
                                                     "' (see its documentation for what it accepts)"));
    }
    return policy;
  }
  const TokenPolicyFactory* factory = TokenPolicyRegistry().Find(head);
  if (factory == nullptr || plus != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("unknown token policy '", spec,
                                                   "'; known: ", absl::StrJoin(TokenPolicyNames(), ", "),
                                                   " (wrappers combine as wrapper+policy)"));
  }
  return (*factory)(options);
}

std::vector<std::string> TokenPolicyNames() {
  std::vector<std::string> names = TokenPolicyRegistry().Names();
  for (const std::string& name : TokenPolicyWrapperRegistry().Names()) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace kvsim
