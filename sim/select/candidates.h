// File: sim/select/candidates.h
//
// The candidate KV-compression configurations of per-prompt selection (proto/select.proto): loading a
// set from a text proto (or the compiled-in default, sim/select/default_candidates.textproto: FP16 plus
// ten KVQuant, H2O and RocketKV configurations) and checking it.
//
// Checks (errors name the source and the candidate): names unique, non-empty, without commas, quotes or
// line breaks (they are CSV cells); kv_dtype FP16/BF16 or unset; quant bits in {2, 3, 4, 8}, group size
// >= 0, outlier_fraction in [0, 0.1] and only for KVQUANT; token policy a registered token policy
// (policies/token/token_policy.h) that does not quantise (KIVI wrappers: use quant) with exactly one
// of budget_tokens >= 1 or budget_ratio in (0, 1].
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(proto::SelectCandidateSet set, LoadSelectCandidates(""));  // the default
//   int fp16 = CandidateIndex(set, "fp16");
//
// Stateless; thread-safe.
#ifndef KVSIM_SIM_SELECT_CANDIDATES_H_
#define KVSIM_SIM_SELECT_CANDIDATES_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/select.pb.h"

namespace kvsim {

// The default set's text and its source name for errors.
absl::string_view DefaultSelectCandidatesText();
inline constexpr absl::string_view kDefaultSelectCandidatesSource = "sim/select/default_candidates.textproto";

// Reads `path` (text proto of SelectCandidateSet), or the default set when `path` is empty, and checks it.
absl::StatusOr<proto::SelectCandidateSet> LoadSelectCandidates(const std::string& path);

// The checks above; InvalidArgument "<source>: candidate <i> '<name>': <what>". An empty set is an error.
absl::Status ValidateSelectCandidates(const proto::SelectCandidateSet& set, absl::string_view source);

// Index of the candidate named `name`, or -1.
int CandidateIndex(const proto::SelectCandidateSet& set, absl::string_view name);

// Tokens per KV head a candidate's token policy may read for a prompt of `input_tokens` (ceil of the
// ratio, at least 1), or -1 when it has no token policy.
int64_t CandidateBudgetTokens(const proto::SelectCandidate& candidate, int64_t input_tokens);

}  // namespace kvsim

#endif  // KVSIM_SIM_SELECT_CANDIDATES_H_
