#include "policies/token/token_policy.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kvsim {
namespace {

std::map<std::string, TokenPolicyFactory>& Policies() {
  static auto* registry = new std::map<std::string, TokenPolicyFactory>();
  return *registry;
}

std::map<std::string, TokenPolicyWrapperFactory>& Wrappers() {
  static auto* registry = new std::map<std::string, TokenPolicyWrapperFactory>();
  return *registry;
}

}  // namespace

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

bool RegisterTokenPolicy(absl::string_view name, TokenPolicyFactory factory) {
  Policies()[std::string(name)] = std::move(factory);
  return true;
}

bool RegisterTokenPolicyWrapper(absl::string_view name, TokenPolicyWrapperFactory factory) {
  Wrappers()[std::string(name)] = std::move(factory);
  return true;
}

absl::StatusOr<std::unique_ptr<TokenPolicy>> CreateTokenPolicy(absl::string_view spec,
                                                               const TokenPolicyOptions& options) {
  const size_t plus = spec.find('+');
  const std::string head(spec.substr(0, plus));
  if (auto it = Wrappers().find(head); it != Wrappers().end()) {
    const bool alone = plus == absl::string_view::npos;
    if (!alone && plus + 1 == spec.size()) {
      return absl::InvalidArgumentError(absl::StrCat("token policy '", spec, "': nothing after '+' (wrappers ",
                                                     "combine as wrapper+policy, e.g. kivi4+h2o)"));
    }
    const absl::string_view inner_spec = alone ? "full" : spec.substr(plus + 1);
    auto inner = CreateTokenPolicy(inner_spec, options);
    if (!inner.ok()) return inner.status();
    std::unique_ptr<TokenPolicy> policy = it->second(options, std::move(*inner));
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
  auto it = Policies().find(head);
  if (it == Policies().end() || plus != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("unknown token policy '", spec,
                                                   "'; known: ", absl::StrJoin(TokenPolicyNames(), ", "),
                                                   " (wrappers combine as wrapper+policy)"));
  }
  return it->second(options);
}

std::vector<std::string> TokenPolicyNames() {
  std::vector<std::string> names;
  for (const auto& entry : Policies()) names.push_back(entry.first);
  for (const auto& entry : Wrappers()) names.push_back(entry.first);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace kvsim
