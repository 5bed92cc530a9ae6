#include "cost_models/roofline.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "config/kv_format.h"
#include "config/model_spec.h"
#include "util/status_macros.h"
#include "util/units.h"

// Invariants: p_ and attention_ are fixed at construction. linear_ns_, lm_head_ns_ and allreduce_ns_
// hold, for every token count below kTermTableTokens (512), the term computed by the very expression
// and rounding of the fallback (linear_ns_ includes KvProjectionSeconds(0), as LinearNs does), so a
// table hit and a computed value are the same integer: results never depend on which path answered.
// Order in IterationBreakdown: L2ResidentTokens first (empty when no piece has a prefix_id), then one
// pass that checks each piece (returning ValidateBatch's error for the first bad one) and sums: under
// RECOMPUTE_COST_KV_PROJECTION a recompute piece adds only projection tokens and no attention; only
// pieces that sample a token and are not recomputes pay the LM head. Each term is rounded to ns on its
// own and the total is their sum, so the breakdown adds up exactly; RecomputeTimeNs rounds the same
// three terms the same way as the one-piece batch.
// Why it is fast:
// - An iteration is O(pieces): one inline AttentionKernel::Seconds per piece, its per-model constants
//   precomputed; the token-count terms (GEMMs, LM head, all-reduce) are table lookups below 512 tokens,
//   which covers every decode-only iteration of up to 512 sequences.
// - RecomputeTimeNs, asked per block by the block manager, builds no batch and no vector.

namespace kvsim {
namespace {


}  // namespace

absl::Status ValidateBatch(const BatchShape& batch) {
  if (batch.sequences.empty()) return absl::InvalidArgumentError("cost model: empty batch");
  for (size_t i = 0; i < batch.sequences.size(); ++i) {
    const SequenceWork& s = batch.sequences[i];
    if (s.new_tokens <= 0 || s.context_tokens < 0 || s.num_segments < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cost model: batch piece ", i, " needs new_tokens > 0, context_tokens >= 0 and num_segments >= 1, got ",
          s.new_tokens, ", ", s.context_tokens, " and ", s.num_segments));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<RooflineParams> MakeRooflineParams(const proto::ExperimentConfig& config) {
  const proto::ModelSpec& m = config.model();
  const proto::DeviceSpec& d = config.device();
  KVSIM_RETURN_IF_ERROR(ValidateModelSpec(m, "roofline cost model"));
  KVSIM_RETURN_IF_ERROR(ValidateDeviceSpec(d, "roofline cost model"));
  RooflineParams p;
  p.tp = m.tensor_parallel_size();
  p.num_layers = m.num_layers();
  p.hidden = m.hidden_size();
  p.heads = m.num_attention_heads() / p.tp;
  p.kv_heads = KvHeadsPerGpu(m);
  p.head_dim = m.head_dim();
  p.intermediate = (m.intermediate_size() + p.tp - 1) / p.tp;
  p.vocab = (m.vocab_size() + p.tp - 1) / p.tp;
  p.weight_bytes_per_element = DTypeBits(m.weight_dtype()) / 8.0;
  KVSIM_ASSIGN_OR_RETURN(p.kv, ResolveKvFormat(m, config.cost_model()));
  p.kv_bytes_per_token_per_layer = KvBytesPerTokenPerLayer(p.kv_heads, p.head_dim, p.kv);
  p.rates = MakeDeviceRates(d);
  p.linear_flops_per_s = GemmFlopsPerSecond(p.rates, DTypeBits(m.weight_dtype()), m.weight_dtype() == proto::DTYPE_FP8);
  p.overhead_ns = config.cost_model().iteration_overhead_ns();
  if (p.overhead_ns < 0) {
    return absl::InvalidArgumentError("cost_model.iteration_overhead_ns: must be >= 0");
  }
  p.recompute_cost = config.cost_model().recompute_cost() == proto::RECOMPUTE_COST_KV_PROJECTION
                         ? proto::RECOMPUTE_COST_KV_PROJECTION
                         : proto::RECOMPUTE_COST_FULL_LAYERS;
  return p;
}

namespace {

// The roofline's held-out error against the device's measurements, per kind the fit recorded it for.
proto::CostModelAccuracy MeasuredRooflineError(const proto::ExperimentConfig& config) {
  proto::CostModelAccuracy a;
  const proto::FittedCostParams& f = config.device().fitted();
  if (f.unfitted()) return a;
  auto add = [&a](const char* kind, const proto::FitQuality& q) {
    if (q.heldout_rows() == 0 || q.roofline_heldout_p95_error() <= 0) return;
    proto::KernelKindAccuracy* k = a.add_kinds();
    k->set_kind(kind);
    k->set_fitted(true);
    k->set_heldout_points(q.heldout_rows());
    k->set_heldout_median_error(q.roofline_heldout_median_error());
    k->set_heldout_p95_error(q.roofline_heldout_p95_error());
  };
  add("gemm", f.gemm().quality());
  add("prefill_attention", f.prefill_attention().quality());
  add("decode_attention", f.decode_attention().quality());
  const int32_t tp = config.model().tensor_parallel_size();
  for (const proto::AllReduceFit& ar : f.all_reduce()) {
    if (tp > 1 && ar.num_gpus() == tp) add("all_reduce", ar.quality());
  }
  return a;
}

}  // namespace

absl::StatusOr<std::unique_ptr<RooflineCostModel>> RooflineCostModel::Create(const proto::ExperimentConfig& config) {
  KVSIM_ASSIGN_OR_RETURN(RooflineParams params, MakeRooflineParams(config));
  auto model = std::make_unique<RooflineCostModel>(params);
  model->accuracy_ = MeasuredRooflineError(config);
  return model;
}

RooflineCostModel::RooflineCostModel(const RooflineParams& params)
    : p_(params), attention_(p_.rates, p_.kv, p_.heads, p_.kv_heads, p_.head_dim) {
  linear_ns_.resize(kTermTableTokens);
  lm_head_ns_.resize(kTermTableTokens);
  allreduce_ns_.resize(kTermTableTokens);
  for (int64_t t = 0; t < kTermTableTokens; ++t) {
    const double layers = p_.num_layers;
    linear_ns_[t] = SecondsToNs(layers * (LayerLinearSeconds(t) + KvProjectionSeconds(0)));
    lm_head_ns_[t] = SecondsToNs(LmHeadSeconds(t));
    allreduce_ns_[t] = SecondsToNs(layers * 2 * AllReduceSeconds(t));
  }
}

// Each term: the table's value when it has one (computed by the same expression), else the expression.
int64_t RooflineCostModel::LinearNs(int64_t layer_tokens, int64_t projection_tokens) const {
  if (projection_tokens == 0 && layer_tokens < kTermTableTokens) return linear_ns_[layer_tokens];
  const double layers = p_.num_layers;
  return SecondsToNs(layers * (LayerLinearSeconds(layer_tokens) + KvProjectionSeconds(projection_tokens)));
}

int64_t RooflineCostModel::LmHeadNs(int64_t sampling) const {
  if (sampling < kTermTableTokens) return lm_head_ns_[sampling];
  return SecondsToNs(LmHeadSeconds(sampling));
}

int64_t RooflineCostModel::AllReduceNs(int64_t layer_tokens) const {
  if (layer_tokens < kTermTableTokens) return allreduce_ns_[layer_tokens];
  const double layers = p_.num_layers;
  return SecondsToNs(layers * 2 * AllReduceSeconds(layer_tokens));
}

std::string RooflineCostModel::Describe() const {
  return absl::StrFormat("roofline (KV %s, TP %d, recompute %s)", p_.kv.Name(), p_.tp,
                         p_.recompute_cost == proto::RECOMPUTE_COST_KV_PROJECTION ? "kv-projection" : "full-layers");
}

double RooflineCostModel::GemmSeconds(int64_t tokens, int64_t out_features, int64_t in_features) const {
  return kvsim::GemmSeconds(p_.rates, p_.linear_flops_per_s, p_.weight_bytes_per_element, tokens, out_features,
                            in_features, /*wave_quantisation=*/false);
}

double RooflineCostModel::LayerLinearSeconds(int64_t tokens) const {
  const int64_t q = p_.heads * p_.head_dim, kv = p_.kv_heads * p_.head_dim;
  return GemmSeconds(tokens, q + 2 * kv, p_.hidden) + GemmSeconds(tokens, p_.hidden, q) +
         GemmSeconds(tokens, 2 * p_.intermediate, p_.hidden) + GemmSeconds(tokens, p_.hidden, p_.intermediate);
}

double RooflineCostModel::KvProjectionSeconds(int64_t tokens) const {
  return GemmSeconds(tokens, 2 * p_.kv_heads * p_.head_dim, p_.hidden);
}

double RooflineCostModel::LmHeadSeconds(int64_t tokens) const { return GemmSeconds(tokens, p_.vocab, p_.hidden); }

double RooflineCostModel::AttentionSeconds(const SequenceWork& piece, int64_t l2_resident_tokens) const {
  return attention_.Seconds(piece.context_tokens, piece.new_tokens, l2_resident_tokens);
}

double RooflineCostModel::KvBytesPerTokenPerLayer() const { return p_.kv_bytes_per_token_per_layer; }

double RooflineCostModel::AllReduceSeconds(int64_t tokens) const {
  return kvsim::AllReduceSeconds(p_.rates, static_cast<double>(tokens) * p_.hidden * 2, p_.tp);
}

absl::StatusOr<CostBreakdown> RooflineCostModel::IterationBreakdown(const BatchShape& batch) const {
  if (batch.sequences.empty()) return ValidateBatch(batch);
  const bool kv_projection = p_.recompute_cost == proto::RECOMPUTE_COST_KV_PROJECTION;
  int64_t layer_tokens = 0, projection_tokens = 0, sampling = 0;
  double attention_s = 0;
  const std::vector<int64_t> l2 = L2ResidentTokens(batch, KvBytesPerTokenPerLayer(), p_.rates.l2_cache_bytes);
  // One pass: the checks of ValidateBatch (whose error it returns for a bad piece) and the sums.
  for (size_t i = 0; i < batch.sequences.size(); ++i) {
    const SequenceWork& s = batch.sequences[i];
    if (s.new_tokens <= 0 || s.context_tokens < 0 || s.num_segments < 1) return ValidateBatch(batch);
    if (s.recompute && kv_projection) {
      projection_tokens += s.new_tokens;
      continue;
    }
    layer_tokens += s.new_tokens;
    if (s.samples_token && !s.recompute) ++sampling;
    const int64_t l2_tokens = l2.empty() ? 0 : l2[i];
    if (s.kv_format == nullptr) {
      attention_s += attention_.Seconds(s.context_tokens, s.new_tokens, l2_tokens);
    } else {  // the piece's own KV format (per-request KV configurations)
      const AttentionKernel own(p_.rates, *s.kv_format, p_.heads, p_.kv_heads, p_.head_dim);
      attention_s += own.Seconds(s.context_tokens, s.new_tokens, l2_tokens);
    }
  }
  const double layers = p_.num_layers;
  CostBreakdown b;
  b.linear_ns = LinearNs(layer_tokens, projection_tokens);
  b.lm_head_ns = LmHeadNs(sampling);
  b.attention_ns = SecondsToNs(layers * attention_s);
  b.allreduce_ns = AllReduceNs(layer_tokens);
  b.overhead_ns = p_.overhead_ns;
  b.total_ns = b.linear_ns + b.lm_head_ns + b.attention_ns + b.allreduce_ns + b.overhead_ns;
  return b;
}

absl::StatusOr<int64_t> RooflineCostModel::IterationTimeNs(const BatchShape& batch) const {
  KVSIM_ASSIGN_OR_RETURN(CostBreakdown b, IterationBreakdown(batch));
  return b.total_ns;
}

absl::StatusOr<int64_t> RooflineCostModel::RecomputeTimeNs(int64_t position, int64_t num_tokens) const {
  if (position < 0 || num_tokens <= 0) return CostModel::RecomputeTimeNs(position, num_tokens);
  const double layers = p_.num_layers;
  if (p_.recompute_cost == proto::RECOMPUTE_COST_KV_PROJECTION) {
    return SecondsToNs(layers * KvProjectionSeconds(num_tokens));
  }
  SequenceWork piece;
  piece.context_tokens = position;
  piece.new_tokens = num_tokens;
  // The same terms, rounded the same way, as IterationBreakdown of the one-piece batch.
  return SecondsToNs(layers * LayerLinearSeconds(num_tokens)) + SecondsToNs(layers * AttentionSeconds(piece)) +
         SecondsToNs(layers * 2 * AllReduceSeconds(num_tokens));
}

int64_t RooflineCostModel::TransferTimeNs(int64_t bytes, const proto::TierConfig& tier) const {
  if (bytes <= 0) return 0;
  const double bandwidth = tier.bandwidth_bytes_per_s() > 0 ? tier.bandwidth_bytes_per_s() : p_.rates.pcie_bytes_per_s;
  return tier.latency_ns() + SecondsToNs(static_cast<double>(bytes) / bandwidth);
}

namespace {

absl::StatusOr<std::unique_ptr<CostModel>> CreateRoofline(const proto::ExperimentConfig& config) {
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<RooflineCostModel> model, RooflineCostModel::Create(config));
  return std::unique_ptr<CostModel>(std::move(model));
}

}  // namespace

KVSIM_REGISTER_COST_MODEL("roofline", roofline, CreateRoofline);

}  // namespace kvsim
