#include "sim/select/candidates.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "policies/token/token_policy.h"
#include "util/status_macros.h"
#include "util/text_proto.h"

namespace kvsim {
namespace {

// Generated from default_candidates.textproto by the BUILD's genrule.
constexpr char kDefaultText[] =
#include "sim/select/default_candidates.inc"
    ;

absl::Status CheckCandidate(const proto::SelectCandidate& c) {
  if (c.name().empty()) return absl::InvalidArgumentError("name is empty");
  if (c.name().find_first_of(",\"\r\n") != std::string::npos) {
    return absl::InvalidArgumentError("name must not hold commas, quotes or line breaks (it is a CSV cell)");
  }
  if (c.kv_dtype() != proto::DTYPE_UNSPECIFIED && c.kv_dtype() != proto::DTYPE_FP16 &&
      c.kv_dtype() != proto::DTYPE_BF16) {
    return absl::InvalidArgumentError("kv_dtype must be DTYPE_FP16 or DTYPE_BF16 (use quant for fewer bits)");
  }
  if (c.has_quant()) {
    const proto::KvQuantSpec& q = c.quant();
    if (q.method() == proto::KV_QUANT_METHOD_UNSPECIFIED) {
      return absl::InvalidArgumentError("quant.method is required (KV_QUANT_METHOD_KVQUANT or _KIVI)");
    }
    if (q.bits() != 2 && q.bits() != 3 && q.bits() != 4 && q.bits() != 8) {
      return absl::InvalidArgumentError(absl::StrCat("quant.bits=", q.bits(), ": must be 2, 3, 4 or 8"));
    }
    if (q.group_size() < 0) return absl::InvalidArgumentError("quant.group_size must be >= 0");
    if (!(q.outlier_fraction() >= 0 && q.outlier_fraction() <= 0.1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("quant.outlier_fraction=", q.outlier_fraction(), ": must be in [0, 0.1]"));
    }
    if (q.outlier_fraction() > 0 && q.method() != proto::KV_QUANT_METHOD_KVQUANT) {
      return absl::InvalidArgumentError("quant.outlier_fraction applies to KV_QUANT_METHOD_KVQUANT only");
    }
  }
  if (c.has_token()) {
    const proto::TokenBudgetSpec& t = c.token();
    absl::StatusOr<std::unique_ptr<TokenPolicy>> policy = CreateTokenPolicy(t.policy());
    if (!policy.ok()) return absl::InvalidArgumentError(absl::StrCat("token.policy: ", policy.status().message()));
    if ((*policy)->kind() == TokenPolicy::Kind::kQuantize) {
      return absl::InvalidArgumentError(absl::StrCat("token.policy '", t.policy(),
                                                     "' quantises: give quantisation as quant { method: "
                                                     "KV_QUANT_METHOD_KIVI bits: N } and the token policy alone"));
    }
    const bool by_tokens = t.budget_tokens() != 0, by_ratio = t.budget_ratio() != 0;
    if (by_tokens == by_ratio) {
      return absl::InvalidArgumentError("token needs exactly one of budget_tokens or budget_ratio");
    }
    if (by_tokens && t.budget_tokens() < 1) return absl::InvalidArgumentError("token.budget_tokens must be >= 1");
    if (by_ratio && !(t.budget_ratio() > 0 && t.budget_ratio() <= 1)) {
      return absl::InvalidArgumentError(absl::StrCat("token.budget_ratio=", t.budget_ratio(), ": must be in (0, 1]"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view DefaultSelectCandidatesText() { return kDefaultText; }

absl::Status ValidateSelectCandidates(const proto::SelectCandidateSet& set, absl::string_view source) {
  if (set.candidate_size() == 0) return absl::InvalidArgumentError(absl::StrCat(source, ": no candidate"));
  absl::flat_hash_set<std::string> names;
  for (int i = 0; i < set.candidate_size(); ++i) {
    const proto::SelectCandidate& c = set.candidate(i);
    absl::Status status = CheckCandidate(c);
    if (status.ok() && !names.insert(c.name()).second) status = absl::InvalidArgumentError("duplicate name");
    if (!status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": candidate ", i + 1, " '", c.name(), "': ", status.message()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<proto::SelectCandidateSet> LoadSelectCandidates(const std::string& path) {
  proto::SelectCandidateSet set;
  if (path.empty()) {
    KVSIM_RETURN_IF_ERROR(ParseTextProto(DefaultSelectCandidatesText(), kDefaultSelectCandidatesSource, &set));
    KVSIM_RETURN_IF_ERROR(ValidateSelectCandidates(set, kDefaultSelectCandidatesSource));
  } else {
    KVSIM_RETURN_IF_ERROR(ParseTextProtoFile(path, &set));
    KVSIM_RETURN_IF_ERROR(ValidateSelectCandidates(set, path));
  }
  return set;
}

int CandidateIndex(const proto::SelectCandidateSet& set, absl::string_view name) {
  for (int i = 0; i < set.candidate_size(); ++i) {
    if (set.candidate(i).name() == name) return i;
  }
  return -1;
}

int64_t CandidateBudgetTokens(const proto::SelectCandidate& candidate, int64_t input_tokens) {
  if (!candidate.has_token()) return -1;
  if (candidate.token().budget_tokens() > 0) return candidate.token().budget_tokens();
  const double tokens = std::ceil(candidate.token().budget_ratio() * static_cast<double>(input_tokens) - 1e-9);
  return std::max<int64_t>(1, static_cast<int64_t>(tokens));
}

}  // namespace kvsim
