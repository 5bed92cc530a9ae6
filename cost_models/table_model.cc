#include "cost_models/table_model.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "config/experiment_config.h"
#include "cost_models/calibration_table.h"
#include "cost_models/validation.h"
#include "util/status_macros.h"
#include "util/units.h"

namespace kvsim {
namespace {


std::string WeightDTypeName(proto::DType dtype) {
  switch (dtype) {
    case proto::DTYPE_FP32:
      return "fp32";
    case proto::DTYPE_FP16:
      return "fp16";
    case proto::DTYPE_FP8:
      return "fp8";
    case proto::DTYPE_INT8:
      return "int8";
    case proto::DTYPE_INT4:
      return "int4";
    default:
      return "bf16";
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<TableCostModel>> TableCostModel::FromTable(const proto::ExperimentConfig& config,
                                                                          const proto::CalibrationTable& table,
                                                                          const std::string& table_name) {
  KVSIM_ASSIGN_OR_RETURN(RooflineParams params, MakeRooflineParams(config));
  KernelTableOptions options;
  const proto::CostModelConfig& cost = config.cost_model();
  options.anchor_extrapolation = !cost.has_table_anchor_extrapolation() || cost.table_anchor_extrapolation();
  KVSIM_ASSIGN_OR_RETURN(KernelTable kernels, KernelTable::Build(table, params.rates, options));
  const proto::CalibrationHeader& h = table.header();
  std::string description = absl::StrFormat("table %s (%d points, GPU %s%s)", table_name, table.points_size(),
                                            h.gpu_name().empty() ? "unknown" : h.gpu_name(),
                                            h.synthetic_from_datasheet() ? ", synthetic from datasheet" : ", measured");
  auto* model = new TableCostModel(params, std::move(kernels), std::move(description));
  model->weight_dtype_ = WeightDTypeName(config.model().weight_dtype());
  ValidationOptions validation;
  validation.leave_one_out = false;
  validation.wave_quantisation = options.wave_quantisation;
  KVSIM_ASSIGN_OR_RETURN(ValidationReport report, ValidateTable(table, params.rates, validation));
  proto::CostModelAccuracy& a = model->heldout_;
  a.set_calibrated(true);
  a.set_synthetic_table(h.synthetic_from_datasheet());
  for (const ErrorStats& s : report.held_out) {
    if (s.kind != "all") {
      model->heldout_by_kind_[s.kind] = {s.median, s.p95};
      model->heldout_points_by_kind_[s.kind] = s.count;
      continue;
    }
    a.set_heldout_points(s.count);
    a.set_heldout_median_error(s.median);
    a.set_heldout_p95_error(s.p95);
    a.set_heldout_worst_error(s.worst);
  }
  return std::unique_ptr<TableCostModel>(model);
}

absl::StatusOr<std::unique_ptr<TableCostModel>> TableCostModel::Create(const proto::ExperimentConfig& config) {
  const std::string& path = config.cost_model().table_path();
  if (path.empty()) {
    return absl::InvalidArgumentError("field cost_model.table_path: required for the table cost model");
  }
  KVSIM_ASSIGN_OR_RETURN(proto::CalibrationTable table, ReadCalibrationTable(path));
  return FromTable(config, table, path);
}

std::string TableCostModel::Describe() const { return description_; }

proto::CostModelAccuracy TableCostModel::Accuracy() const {
  proto::CostModelAccuracy a = heldout_;
  a.set_kernel_predictions(num_predictions());
  a.set_extrapolated_predictions(num_extrapolated());
  a.set_unmeasured_predictions(num_unmeasured());
  double total = 0, extrapolated = 0;
  for (int k = 0; k < kNumKinds; ++k) {
    total += time_ns_[k].load(std::memory_order_relaxed);
    extrapolated += extrapolated_ns_[k].load(std::memory_order_relaxed);
  }
  if (total <= 0) return a;
  double median = 0, p95 = 0;
  for (int k = 0; k < kNumKinds; ++k) {
    const double t = time_ns_[k].load(std::memory_order_relaxed);
    if (t <= 0) continue;
    const std::string name = KernelKindName(static_cast<proto::KernelKind>(k));
    proto::KernelKindAccuracy* kind = a.add_kinds();
    kind->set_kind(name);
    kind->set_time_fraction(t / total);
    auto it = heldout_by_kind_.find(name);
    kind->set_fitted(it != heldout_by_kind_.end());
    if (it == heldout_by_kind_.end()) continue;
    kind->set_heldout_points(heldout_points_by_kind_.at(name));
    kind->set_heldout_median_error(it->second.first);
    kind->set_heldout_p95_error(it->second.second);
    median += t / total * it->second.first;
    p95 += t / total * it->second.second;
  }
  a.set_time_weighted_median_error(median);
  a.set_time_weighted_p95_error(p95);
  a.set_extrapolated_time_fraction(extrapolated / total);
  return a;
}

double TableCostModel::Kernel(const KernelQuery& q, Tally* tally, double weight) const {
  const KernelTable::Prediction p = table_.Predict(q);
  ++tally->predictions;
  if (p.extrapolated) ++tally->extrapolated_predictions;
  if (!p.measured) ++tally->unmeasured_predictions;
  const int k = static_cast<int>(q.kind);
  if (k >= 0 && k < kNumKinds) {
    tally->seconds[k] += weight * p.seconds;
    if (p.extrapolated || !p.measured) tally->extrapolated[k] += weight * p.seconds;
  }
  return p.seconds;
}

double TableCostModel::Gemm(proto::KernelKind kind, int64_t tokens, int64_t out_features, int64_t in_features,
                            Tally* tally, double weight) const {
  if (tokens <= 0) return 0;
  KernelQuery q;
  q.kind = kind;
  q.format = FormatFromCalibrationDType(weight_dtype_, 0, 0);
  q.query_tokens = tokens;
  q.in_features = in_features;
  q.out_features = out_features;
  return Kernel(q, tally, weight);
}

double TableCostModel::Attention(proto::KernelKind kind, int64_t batch, const SequenceWork& piece, Tally* tally,
                                 double weight) const {
  KernelQuery q;
  q.kind = kind;
  q.format = p_.kv;
  q.batch = batch;
  q.query_tokens = piece.new_tokens;
  q.context_tokens = piece.context_tokens;
  q.num_segments = piece.num_segments;
  q.num_heads = p_.heads;
  q.num_kv_heads = p_.kv_heads;
  q.head_dim = p_.head_dim;
  if (q.num_segments == 1 || table_.HasSeries(q)) return Kernel(q, tally, weight);
  // Measured segment counts around this one (powers of two): interpolate between them in log-log.
  int64_t lower = 0, upper = 0;
  for (int64_t k = 1; k <= 4096; k *= 2) {
    KernelQuery probe = q;
    probe.num_segments = k;
    if (!table_.HasSeries(probe)) continue;
    if (k < q.num_segments) lower = k;
    if (k > q.num_segments && upper == 0) upper = k;
  }
  if (lower > 0 && upper > 0) {
    KernelQuery a = q, b = q;
    a.num_segments = lower;
    b.num_segments = upper;
    const double w =
        std::log(static_cast<double>(q.num_segments) / lower) / std::log(static_cast<double>(upper) / lower);
    return std::exp((1 - w) * std::log(Kernel(a, tally, (1 - w) * weight)) +
                    w * std::log(Kernel(b, tally, w * weight)));
  }
  // No series around it: single-segment attention plus the merge of the partial states.
  KernelQuery merge;
  merge.kind = proto::KERNEL_KIND_SEGMENT_MERGE;
  merge.batch = kind == proto::KERNEL_KIND_DECODE_ATTENTION ? batch : batch * piece.new_tokens;
  merge.num_segments = piece.num_segments;
  merge.num_heads = p_.heads;
  merge.head_dim = p_.head_dim;
  q.num_segments = 1;
  return Kernel(q, tally, weight) + Kernel(merge, tally, weight);
}

double TableCostModel::DecodeAttention(const BatchShape& batch, bool skip_recompute, Tally* tally,
                                       double weight) const {
  int64_t decodes = 0;
  for (const SequenceWork& s : batch.sequences) {
    if (s.new_tokens == 1 && !(s.recompute && skip_recompute)) ++decodes;
  }
  double seconds = 0;
  const std::vector<int64_t> l2 =
      L2ResidentTokens(batch, 2.0 * p_.kv_heads * p_.head_dim * p_.kv.BytesPerElement(), p_.rates.l2_cache_bytes);
  for (size_t i = 0; i < batch.sequences.size(); ++i) {
    SequenceWork s = batch.sequences[i];
    if (s.new_tokens == 1 && !(s.recompute && skip_recompute)) {
      // Decode is memory-bound: KV already in L2 costs what a shorter context would.
      if (!l2.empty()) s.context_tokens -= l2[i];
      seconds += Attention(proto::KERNEL_KIND_DECODE_ATTENTION, decodes, s, tally, weight / decodes) / decodes;
    }
  }
  return seconds;
}

absl::StatusOr<CostBreakdown> TableCostModel::IterationBreakdown(const BatchShape& batch) const {
  Tally tally;
  absl::StatusOr<CostBreakdown> b = Breakdown(batch, &tally);
  if (b.ok()) Commit(tally);
  return b;
}

absl::StatusOr<CostBreakdown> TableCostModel::EstimateBreakdown(const BatchShape& batch) const {
  Tally uncounted;
  return Breakdown(batch, &uncounted);
}

void TableCostModel::Commit(const Tally& tally) const {
  for (int k = 0; k < kNumKinds; ++k) {
    if (tally.seconds[k] > 0) time_ns_[k].fetch_add(SecondsToNs(tally.seconds[k]), std::memory_order_relaxed);
    if (tally.extrapolated[k] > 0) {
      extrapolated_ns_[k].fetch_add(SecondsToNs(tally.extrapolated[k]), std::memory_order_relaxed);
    }
  }
  predictions_.fetch_add(tally.predictions, std::memory_order_relaxed);
  extrapolated_.fetch_add(tally.extrapolated_predictions, std::memory_order_relaxed);
  unmeasured_.fetch_add(tally.unmeasured_predictions, std::memory_order_relaxed);
}

absl::StatusOr<CostBreakdown> TableCostModel::Breakdown(const BatchShape& batch, Tally* tally_out) const {
  KVSIM_RETURN_IF_ERROR(ValidateBatch(batch));
  const bool kv_projection = p_.recompute_cost == proto::RECOMPUTE_COST_KV_PROJECTION;
  const double layers = p_.num_layers;
  Tally& tally = *tally_out;
  int64_t layer_tokens = 0, projection_tokens = 0, sampling = 0;
  double attention_s = DecodeAttention(batch, kv_projection, &tally, layers);
  for (const SequenceWork& s : batch.sequences) {
    if (s.recompute && kv_projection) {
      projection_tokens += s.new_tokens;
      continue;
    }
    layer_tokens += s.new_tokens;
    if (s.samples_token && !s.recompute) ++sampling;
    if (s.new_tokens > 1) attention_s += Attention(proto::KERNEL_KIND_PREFILL_ATTENTION, 1, s, &tally, layers);
  }
  const int64_t q = p_.heads * p_.head_dim, kv = p_.kv_heads * p_.head_dim, h = p_.hidden;
  const double linear_s = Gemm(proto::KERNEL_KIND_LINEAR_GEMM, layer_tokens, q + 2 * kv, h, &tally, layers) +
                          Gemm(proto::KERNEL_KIND_LINEAR_GEMM, layer_tokens, h, q, &tally, layers) +
                          Gemm(proto::KERNEL_KIND_MLP_GEMM, layer_tokens, 2 * p_.intermediate, h, &tally, layers) +
                          Gemm(proto::KERNEL_KIND_MLP_GEMM, layer_tokens, h, p_.intermediate, &tally, layers) +
                          Gemm(proto::KERNEL_KIND_KV_PROJECTION, projection_tokens, 2 * kv, h, &tally, layers);
  double allreduce_s = 0;
  if (p_.tp > 1 && layer_tokens > 0) {
    KernelQuery ar;
    ar.kind = proto::KERNEL_KIND_ALL_REDUCE;
    ar.format = KvFormat();
    ar.bytes = layer_tokens * h * 2;
    ar.num_gpus = p_.tp;
    allreduce_s = 2 * Kernel(ar, &tally, 2 * layers);
  }
  CostBreakdown b;
  b.linear_ns = SecondsToNs(layers * linear_s);
  b.lm_head_ns = SecondsToNs(Gemm(proto::KERNEL_KIND_LINEAR_GEMM, sampling, p_.vocab, h, &tally, 1));
  b.attention_ns = SecondsToNs(layers * attention_s);
  b.allreduce_ns = SecondsToNs(layers * allreduce_s);
  b.overhead_ns = p_.overhead_ns;
  b.total_ns = b.linear_ns + b.lm_head_ns + b.attention_ns + b.allreduce_ns + b.overhead_ns;
  return b;
}

absl::StatusOr<int64_t> TableCostModel::IterationTimeNs(const BatchShape& batch) const {
  KVSIM_ASSIGN_OR_RETURN(CostBreakdown b, IterationBreakdown(batch));
  return b.total_ns;
}

int64_t TableCostModel::Transfer(int64_t bytes, const proto::TierConfig& tier, Tally* tally) const {
  if (bytes <= 0) return 0;
  // Measured host<->device copies, when the table has them, replace bytes / bandwidth.
  KernelQuery copy;
  copy.kind = proto::KERNEL_KIND_HOST_DEVICE_COPY;
  copy.bytes = bytes;
  if (tier.kind() == proto::TIER_KIND_HOST && table_.HasSeries(copy)) {
    // Counted as a prediction; no kernel time (weight 0), as the accuracy weights are the iterations'.
    return tier.latency_ns() + SecondsToNs(Kernel(copy, tally, 0));
  }
  const double bandwidth = tier.bandwidth_bytes_per_s() > 0 ? tier.bandwidth_bytes_per_s() : p_.rates.pcie_bytes_per_s;
  return tier.latency_ns() + SecondsToNs(static_cast<double>(bytes) / bandwidth);
}

int64_t TableCostModel::TransferTimeNs(int64_t bytes, const proto::TierConfig& tier) const {
  Tally tally;
  const int64_t ns = Transfer(bytes, tier, &tally);
  Commit(tally);
  return ns;
}

int64_t TableCostModel::EstimateTransferTimeNs(int64_t bytes, const proto::TierConfig& tier) const {
  Tally uncounted;
  return Transfer(bytes, tier, &uncounted);
}

namespace {

absl::StatusOr<std::unique_ptr<CostModel>> CreateTable(const proto::ExperimentConfig& config) {
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<TableCostModel> model, TableCostModel::Create(config));
  return std::unique_ptr<CostModel>(std::move(model));
}

}  // namespace

KVSIM_REGISTER_COST_MODEL("table", table, CreateTable);

}  // namespace kvsim
