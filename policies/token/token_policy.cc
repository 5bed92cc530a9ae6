#include "policies/token/token_policy.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

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
        return absl::InvalidArgumentError(
            absl::StrCat("token policy '", spec, "': parameter '", key, "' is given twice"));
      }
    }
    params.emplace_back(std::move(key), std::string(entry.substr(eq + 1)));
  }
  return params;
}

}  // namespace

Registry<TokenPolicyFactory>& TokenPolicyRegistry() {
  static auto* registry = new Registry<TokenPolicyFactory>("token policy");
  return *registry;
}

Registry<TokenPolicyWrapperFactory>& TokenPolicyWrapperRegistry() {
  static auto* registry = new Registry<TokenPolicyWrapperFactory>("token policy wrapper");
  return *registry;
}

Registry<TokenPolicyParamFactory>& TokenPolicyParamRegistry() {
  static auto* registry = new Registry<TokenPolicyParamFactory>("token policy with parameters");
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
  const size_t colon = spec.find(':');
  size_t plus = spec.find('+');
  // A leaf's parameters may hold '+' (a file name): a ':' before any '+' ends the name.
  if (colon < plus) plus = absl::string_view::npos;
  // Registered names are lower case; a name in any case is accepted (parameters keep theirs: file names).
  const std::string head = absl::AsciiStrToLower(spec.substr(0, std::min(plus, colon)));
  if (colon < plus) {
    if (const TokenPolicyParamFactory* factory = TokenPolicyParamRegistry().Find(head)) {
      KVSIM_ASSIGN_OR_RETURN(TokenPolicyParams params, ParseParams(spec, spec.substr(colon + 1)));
      return (*factory)(options, params);
    }
    if (TokenPolicyRegistry().Find(head) != nullptr || TokenPolicyWrapperRegistry().Find(head) != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("token policy '", head, "' takes no parameters (got '", spec, "')"));
    }
  }
  if (const TokenPolicyParamFactory* factory = TokenPolicyParamRegistry().Find(head);
      factory != nullptr && plus == absl::string_view::npos) {
    return (*factory)(options, {});
  }
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
  for (const std::string& name : TokenPolicyParamRegistry().Names()) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace kvsim
