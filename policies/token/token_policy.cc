#include "policies/token/token_policy.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "util/status_macros.h"

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

std::map<std::string, TokenPolicyParamFactory>& ParamPolicies() {
  static auto* registry = new std::map<std::string, TokenPolicyParamFactory>();
  return *registry;
}

// "key=value:key=value" of a spec's leaf (after the name's ':').
absl::StatusOr<TokenPolicyParams> ParseParams(absl::string_view spec, absl::string_view text) {
  TokenPolicyParams params;
  for (absl::string_view entry : absl::StrSplit(text, ':')) {
    const size_t eq = entry.find('=');
    if (eq == absl::string_view::npos || eq == 0) {
      return absl::InvalidArgumentError(absl::StrCat("token policy '", spec, "': parameter '", entry,
                                                     "' is not key=value (write name:key=value[:key=value])"));
    }
    std::string key(entry.substr(0, eq));
    for (const auto& [k, v] : params) {
      if (k == key) {
        return absl::InvalidArgumentError(absl::StrCat("token policy '", spec, "': parameter '", key,
                                                       "' is given twice"));
      }
    }
    params.emplace_back(std::move(key), std::string(entry.substr(eq + 1)));
  }
  return params;
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

bool RegisterTokenPolicyWithParams(absl::string_view name, TokenPolicyParamFactory factory) {
  ParamPolicies()[std::string(name)] = std::move(factory);
  return true;
}

bool RegisterTokenPolicyWrapper(absl::string_view name, TokenPolicyWrapperFactory factory) {
  Wrappers()[std::string(name)] = std::move(factory);
  return true;
}

absl::StatusOr<std::unique_ptr<TokenPolicy>> CreateTokenPolicy(absl::string_view spec,
                                                               const TokenPolicyOptions& options) {
  const size_t colon = spec.find(':');
  size_t plus = spec.find('+');
  // A leaf's parameters may hold '+' (a file name): a ':' before any '+' ends the name.
  if (colon < plus) plus = absl::string_view::npos;
  const std::string head(spec.substr(0, std::min(plus, colon)));
  if (colon < plus) {
    if (auto it = ParamPolicies().find(head); it != ParamPolicies().end()) {
      KVSIM_ASSIGN_OR_RETURN(TokenPolicyParams params, ParseParams(spec, spec.substr(colon + 1)));
      return it->second(options, params);
    }
    if (Policies().count(head) > 0 || Wrappers().count(head) > 0) {
      return absl::InvalidArgumentError(absl::StrCat("token policy '", head, "' takes no parameters (got '",
                                                     spec, "')"));
    }
  }
  if (auto it = ParamPolicies().find(head); it != ParamPolicies().end() && plus == absl::string_view::npos) {
    return it->second(options, {});
  }
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
  for (const auto& entry : ParamPolicies()) names.push_back(entry.first);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace kvsim
