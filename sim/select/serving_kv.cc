#include "sim/select/serving_kv.h"

#include <cmath>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "sim/select/candidates.h"
#include "traces/text/csv_reader.h"
#include "util/status_macros.h"

namespace kvsim {
namespace {

bool SameFormat(const KvFormat& a, const KvFormat& b) {
  return a.bits == b.bits && a.is_fp8 == b.is_fp8 && a.is_integer == b.is_integer && a.group_size == b.group_size &&
         a.scale_bytes_per_group == b.scale_bytes_per_group;
}

// The format's fields in one non-zero word: equal formats, equal salts.
uint64_t FormatSalt(const KvFormat& kv) {
  return 1 + (static_cast<uint64_t>(kv.bits) | static_cast<uint64_t>(kv.is_fp8) << 8 |
              static_cast<uint64_t>(kv.is_integer) << 9 | static_cast<uint64_t>(kv.group_size & 0xffffff) << 16 |
              static_cast<uint64_t>(kv.scale_bytes_per_group & 0xffffff) << 40);
}

}  // namespace

absl::Status CandidateKvAssigner::Init(const proto::ExperimentConfig& config, const proto::SelectCandidateSet& set) {
  const proto::CostModelKind kind = config.cost_model().kind();
  if (kind != proto::COST_MODEL_KIND_UNSPECIFIED && kind != proto::COST_MODEL_KIND_ROOFLINE) {
    return absl::InvalidArgumentError(
        "cost_model.kind: per-request KV configurations are priced by the roofline cost model only");
  }
  KVSIM_ASSIGN_OR_RETURN(const KvFormat replica, ResolveKvFormat(config.model(), config.cost_model()));
  const double replica_bytes = KvBytesPerToken(config.model(), replica);
  for (const proto::SelectCandidate& candidate : set.candidate()) {
    names_.push_back(candidate.name());
    KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<CandidateCostModel> model, CandidateCostModel::Create(config, candidate));
    const proto::ExperimentConfig own = model->ConfigFor(1);
    KVSIM_ASSIGN_OR_RETURN(const KvFormat format, ResolveKvFormat(own.model(), own.cost_model()));
    const double bytes = KvBytesPerToken(own.model(), format);
    RequestKv kv;
    kv.config = static_cast<int32_t>(base_.size());
    formats_.push_back(std::make_unique<KvFormat>(format));
    std::string refusal;
    if (!SameFormat(format, replica)) {
      kv.format = formats_.back().get();
      kv.hash_salt = FormatSalt(format);
      // Whole trace blocks per pool block; the small tolerance keeps exact ratios exact.
      kv.block_factor = static_cast<int32_t>(std::floor(replica_bytes / bytes + 1e-9));
      if (kv.block_factor < 1) {
        refusal = absl::StrCat("candidate '", candidate.name(), "' stores ", bytes, " KV bytes per token, more than the ",
                               replica_bytes, " of the replica's format ", replica.Name(),
                               ": set model.kv_dtype to the widest format");
        kv.block_factor = 1;
      }
    }
    base_.push_back(kv);
    usable_.push_back(refusal.empty() ? 1 : 0);
    refusal_.push_back(std::move(refusal));
    models_.push_back(std::move(model));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CandidateKvAssigner>> CandidateKvAssigner::ForAll(const proto::ExperimentConfig& config,
                                                                                const proto::SelectCandidateSet& set,
                                                                                absl::string_view name) {
  std::unique_ptr<CandidateKvAssigner> assigner(new CandidateKvAssigner());
  KVSIM_RETURN_IF_ERROR(assigner->Init(config, set));
  const int index = CandidateIndex(set, name);
  if (index < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--kv_config: unknown configuration '", name,
                                                   "' (known: ", absl::StrJoin(assigner->names_, ","), ")"));
  }
  if (!assigner->usable_[index]) return absl::InvalidArgumentError(absl::StrCat("--kv_config: ", assigner->refusal_[index]));
  assigner->static_candidate_ = index;
  return assigner;
}

absl::StatusOr<std::unique_ptr<CandidateKvAssigner>> CandidateKvAssigner::FromSelections(
    const proto::ExperimentConfig& config, const proto::SelectCandidateSet& set, const std::string& path) {
  std::unique_ptr<CandidateKvAssigner> assigner(new CandidateKvAssigner());
  KVSIM_RETURN_IF_ERROR(assigner->Init(config, set));
  assigner->source_ = path;
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<CsvReader> csv, CsvReader::Open(path));
  int id_column = csv->Column("request_id");
  const char* id_name = "request_id";
  if (id_column < 0) {
    id_column = csv->Column("prompt_id");
    id_name = "prompt_id";
  }
  const int config_column = csv->Column("config");
  if (id_column < 0 || config_column < 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":1: missing column '", id_column < 0 ? "request_id" : "config",
                                                   "' (header: ", absl::StrJoin(csv->header(), ","), ")"));
  }
  absl::flat_hash_map<uint64_t, int64_t> first_line;
  std::vector<absl::string_view> fields;
  while (csv->Next(&fields)) {
    const auto where = [&](int column, absl::string_view name) {
      return absl::StrCat(path, ":", csv->line_number(), ":", column + 1, " (", name, ")");
    };
    const absl::string_view id_text = absl::StripAsciiWhitespace(fields[id_column]);
    uint64_t id;
    if (!absl::SimpleAtoi(id_text, &id)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(id_column, id_name), ": '", id_text, "' is not an unsigned integer request id"));
    }
    const absl::string_view name = absl::StripAsciiWhitespace(fields[config_column]);
    const int index = CandidateIndex(set, name);
    if (index < 0) {
      return absl::InvalidArgumentError(absl::StrCat(where(config_column, "config"), ": unknown configuration '", name,
                                                     "' (known: ", absl::StrJoin(assigner->names_, ","), ")"));
    }
    if (!assigner->usable_[index]) {
      return absl::InvalidArgumentError(absl::StrCat(where(config_column, "config"), ": ", assigner->refusal_[index]));
    }
    auto [it, added] = first_line.try_emplace(id, csv->line_number());
    if (!added) {
      return absl::InvalidArgumentError(absl::StrCat(where(id_column, id_name), ": request ", id,
                                                     " repeated (first at line ", it->second, ")"));
    }
    assigner->by_request_[id] = index;
  }
  KVSIM_RETURN_IF_ERROR(csv->status());
  return assigner;
}

absl::StatusOr<RequestKv> CandidateKvAssigner::Assign(const Request& request) const {
  int index = static_candidate_;
  if (index < 0) {
    auto it = by_request_.find(request.request_id);
    if (it == by_request_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("request ", request.request_id, ": no row for it in ", source_, " (--kv_configs)"));
    }
    index = it->second;
  }
  const RequestKv budget = models_[index]->Budget(request.input_tokens);
  RequestKv kv = base_[index];
  kv.prompt_keep_tokens = budget.prompt_keep_tokens;
  kv.hold_cap_tokens = budget.hold_cap_tokens;
  kv.read_cap_tokens = budget.read_cap_tokens;
  return kv;
}

}  // namespace kvsim
