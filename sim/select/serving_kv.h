// File: sim/select/serving_kv.h
//
// CandidateKvAssigner: per-request KV configurations (sim/serving/request_kv.h) for a serving replay from
// per-prompt selection: every trace request runs at the candidate (proto/select.proto) that a selections
// CSV names for it, or all at one candidate (`kvsim replay --kv_configs=FILE` or `--kv_config=NAME`, with
// the candidate set of --configs).
//
// Selections CSV: a header row with a `request_id` column (or `prompt_id`, so that `kvsim select`'s
// selections.csv serves when its prompt ids are the trace's request ids) and a `config` column; other
// columns are ignored. One row per request; ids are unsigned integers. Refused, naming the file, line and
// column: a missing column, an id that is not an unsigned integer, an unknown configuration, a repeated id.
// A trace request without a row is refused by Assign, naming the request and the file.
//
// Per candidate, from its config (CandidateCostModel::ConfigFor, the config sim/select costs it with):
//   format        ResolveKvFormat of that config; nullptr (the replica's own) when it equals the replica's
//   block_factor  floor(KvBytesPerToken(replica's format) / KvBytesPerToken(candidate's)); a candidate that
//                 stores more bytes per token than the replica's format is refused (its blocks would not fit
//                 the pool's; set model.kv_dtype to the widest format)
//   hash_salt     the candidate's format fields packed into 64 bits (0 for the replica's format), so
//                 requests share cached blocks only with requests of the same format
//   budget        CandidateCostModel::Budget(input_tokens) of the request (its token policy's budget)
// Not charged in the replay: the compression overhead that CandidateCostModel adds per prompt (the attention
// pass of h2o-like policies) and decode-time selection scoring.
//
// Checks at Create: the config's cost model is the roofline (the only one that prices per-piece KV formats,
// SequenceWork::kv_format), and the candidates the assigner can hand out are valid for it.
//
// Immutable after Create; thread-safe.
//
// Example:
//   KVSIM_ASSIGN_OR_RETURN(auto kv, CandidateKvAssigner::FromSelections(config, set, "selections.csv"));
//   ReplayOptions options;
//   options.request_kv = kv.get();
#ifndef KVSIM_SIM_SELECT_SERVING_KV_H_
#define KVSIM_SIM_SELECT_SERVING_KV_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "config/kv_format.h"
#include "proto/config.pb.h"
#include "proto/select.pb.h"
#include "sim/select/candidate_cost.h"
#include "sim/serving/request_kv.h"

namespace kvsim {

class CandidateKvAssigner final : public RequestKvAssigner {
 public:
  // Every request at the candidate named `name`. `config` is resolved; `set` valid.
  static absl::StatusOr<std::unique_ptr<CandidateKvAssigner>> ForAll(const proto::ExperimentConfig& config,
                                                                     const proto::SelectCandidateSet& set,
                                                                     absl::string_view name);
  // Each request at the candidate `path` (a selections CSV) names for it.
  static absl::StatusOr<std::unique_ptr<CandidateKvAssigner>> FromSelections(const proto::ExperimentConfig& config,
                                                                             const proto::SelectCandidateSet& set,
                                                                             const std::string& path);

  absl::StatusOr<RequestKv> Assign(const Request& request) const override;
  const std::vector<std::string>& names() const override { return names_; }

  // The configuration of candidate `index` before the request's budget (tests and reports).
  const RequestKv& base(int index) const { return base_[index]; }

 private:
  CandidateKvAssigner() = default;
  absl::Status Init(const proto::ExperimentConfig& config, const proto::SelectCandidateSet& set);

  std::vector<std::string> names_;
  std::vector<std::unique_ptr<CandidateCostModel>> models_;
  std::vector<std::unique_ptr<KvFormat>> formats_;  // per candidate; stable addresses for RequestKv::format
  std::vector<RequestKv> base_;                      // per candidate: format, block factor, salt
  std::vector<uint8_t> usable_;                      // per candidate: checked and allowed
  std::vector<std::string> refusal_;                 // per candidate: why not, when !usable_
  int static_candidate_ = -1;                        // ForAll
  std::string source_;                               // FromSelections: the CSV
  absl::flat_hash_map<uint64_t, int> by_request_;    // FromSelections: request id -> candidate
};

}  // namespace kvsim

#endif  // KVSIM_SIM_SELECT_SERVING_KV_H_
