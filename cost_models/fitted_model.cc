#include "cost_models/fitted_model.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "config/experiment_config.h"
#include "config/model_spec.h"
#include "util/status_macros.h"
#include "util/units.h"

namespace kvsim {
namespace {


constexpr const char* kKindNames[] = {"gemm", "prefill_attention", "decode_attention", "elementwise", "all_reduce"};

}  // namespace

absl::StatusOr<std::unique_ptr<FittedCostModel>> FittedCostModel::Create(const proto::ExperimentConfig& config) {
  const proto::DeviceSpec& d = config.device();
  if (!HasFittedCostParams(d)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "fitted cost model: device '", d.name(), "' (preset '", config.device_preset(),
        "') has no fitted parameters (datasheet figures only); fit them with `kvsim costmodel fit` or use the "
        "roofline or table cost model"));
  }
  KVSIM_ASSIGN_OR_RETURN(RooflineParams params, MakeRooflineParams(config));
  return std::unique_ptr<FittedCostModel>(new FittedCostModel(params, d));
}

FittedCostModel::FittedCostModel(const RooflineParams& params, const proto::DeviceSpec& device)
    : p_(params), fit_(device.fitted()), peaks_(MakeDevicePeaks(device)), device_name_(device.name()) {
  const double bits = p_.weight_bytes_per_element * 8;
  gemm_peak_flops_per_s_ = peaks_.bf16_flops_per_s;
  if (bits == 8) gemm_peak_flops_per_s_ = std::max(peaks_.fp8_flops_per_s, peaks_.int8_ops_per_s);
  gemm_format_fitted_ = bits == 16;
  gemm_range_ = FitRange(fit_.gemm().quality());
  prefill_range_ = FitRange(fit_.prefill_attention().quality());
  decode_range_ = FitRange(fit_.decode_attention().quality());
  elementwise_range_ = FitRange(fit_.elementwise().quality());
  if (p_.tp > 1) all_reduce_fit_ = FindAllReduceFit(fit_, static_cast<int32_t>(p_.tp), &all_reduce_exact_);
  if (all_reduce_fit_ != nullptr) all_reduce_range_ = FitRange(all_reduce_fit_->quality());
  for (auto& t : time_ns_) t.store(0);
  for (auto& t : extrapolated_ns_) t.store(0);
  const int64_t q = p_.heads * p_.head_dim, kv = p_.kv_heads * p_.head_dim, h = p_.hidden;
  gemm_features_[kQkv] = {q + 2 * kv, h};
  gemm_features_[kOutput] = {h, q};
  gemm_features_[kGateUp] = {2 * p_.intermediate, h};
  gemm_features_[kDown] = {h, p_.intermediate};
  gemm_features_[kKvProjection] = {2 * kv, h};
  gemm_features_[kLmHead] = {p_.vocab, h};
  gemm_memo_.reset(new std::atomic<double>[kNumGemmShapes * kGemmMemoTokens]);
  for (int64_t i = 0; i < kNumGemmShapes * kGemmMemoTokens; ++i) gemm_memo_[i].store(-1, std::memory_order_relaxed);
}

std::string FittedCostModel::Describe() const {
  return absl::StrFormat("fitted (%s, KV %s, TP %d; %s)", device_name_, p_.kv.Name(), p_.tp, fit_.source());
}

double FittedCostModel::Count(Kind kind, double seconds, bool inside, double times, Tally* tally) {
  const int64_t ns = SecondsToNs(seconds * times);
  tally->time_ns[kind] += ns;
  ++tally->predictions;
  if (!inside) {
    tally->extrapolated_ns[kind] += ns;
    ++tally->extrapolated;
  }
  return seconds;
}

void FittedCostModel::Commit(const Tally& tally) const {
  for (int k = 0; k < kNumKinds; ++k) {
    if (tally.time_ns[k] != 0) time_ns_[k].fetch_add(tally.time_ns[k], std::memory_order_relaxed);
    if (tally.extrapolated_ns[k] != 0) extrapolated_ns_[k].fetch_add(tally.extrapolated_ns[k], std::memory_order_relaxed);
  }
  if (tally.predictions != 0) predictions_.fetch_add(tally.predictions, std::memory_order_relaxed);
  if (tally.extrapolated != 0) extrapolated_.fetch_add(tally.extrapolated, std::memory_order_relaxed);
}

double FittedCostModel::GemmSeconds(GemmShape shape, int64_t tokens) const {
  auto compute = [&] {
    return FittedGemmSeconds(fit_.gemm(), peaks_, gemm_peak_flops_per_s_, p_.weight_bytes_per_element, tokens,
                             gemm_features_[shape][0], gemm_features_[shape][1]);
  };
  if (tokens >= kGemmMemoTokens) return compute();
  std::atomic<double>& memo = gemm_memo_[shape * kGemmMemoTokens + tokens];
  double seconds = memo.load(std::memory_order_relaxed);
  if (seconds < 0) {
    seconds = compute();
    memo.store(seconds, std::memory_order_relaxed);
  }
  return seconds;
}

double FittedCostModel::Gemm(GemmShape shape, int64_t tokens, Tally* tally) const {
  if (tokens <= 0) return 0;
  const double features[] = {static_cast<double>(tokens)};
  const bool inside = gemm_format_fitted_ && gemm_range_.Inside(features, 1);
  return CountPerLayer(kGemm, GemmSeconds(shape, tokens), inside, tally);
}

FittedDecodeTerms FittedCostModel::DecodeTerms(int64_t batch) const {
  return MakeFittedDecodeTerms(fit_.decode_attention(), peaks_, batch, p_.kv_heads, p_.kv_bytes_per_token_per_layer);
}

double FittedCostModel::Decode(const FittedDecodeTerms& terms, int64_t batch, int64_t total_context,
                               int64_t max_context, Tally* tally) const {
  const double seconds = terms.Seconds(static_cast<double>(total_context), static_cast<double>(max_context));
  const double features[] = {static_cast<double>(batch), static_cast<double>(max_context)};
  const bool inside = decode_range_.Inside(features, 2);
  return CountPerLayer(kDecode, seconds, inside, tally);
}

absl::StatusOr<CostBreakdown> FittedCostModel::IterationBreakdown(const BatchShape& batch) const {
  Tally tally;
  absl::StatusOr<CostBreakdown> b = Breakdown(batch, &tally);
  if (b.ok()) Commit(tally);
  return b;
}

absl::StatusOr<CostBreakdown> FittedCostModel::EstimateBreakdown(const BatchShape& batch) const {
  Tally uncounted;
  return Breakdown(batch, &uncounted);
}

FittedCostModel::BatchSums FittedCostModel::Sum(const BatchShape& batch, Tally* tally) const {
  const bool kv_projection = p_.recompute_cost == proto::RECOMPUTE_COST_KV_PROJECTION;
  const std::vector<int64_t> l2 = L2ResidentTokens(batch, p_.kv_bytes_per_token_per_layer, p_.rates.l2_cache_bytes);
  BatchSums sums;
  // The prefill chunks run as one kernel (FittedPrefillKernelSeconds), their segment merges after it.
  FittedPrefillTerms prefill;
  double merge_s = 0;
  bool prefill_inside = fit_.prefill_attention().quality().fitted();
  for (size_t i = 0; i < batch.sequences.size(); ++i) {
    const SequenceWork& s = batch.sequences[i];
    if (s.recompute && kv_projection) {
      sums.projection_tokens += s.new_tokens;
      continue;
    }
    sums.layer_tokens += s.new_tokens;
    if (s.samples_token && !s.recompute) ++sums.sampling;
    if (s.new_tokens == 1) {
      ++sums.decodes;
      sums.decode_context += s.context_tokens - (l2.empty() ? 0 : l2[i]);
      sums.max_context = std::max(sums.max_context, s.context_tokens);
      if (s.num_segments > 1) {
        ++sums.merge_decodes;
        sums.max_segments = std::max<int64_t>(sums.max_segments, s.num_segments);
      }
    } else {
      prefill.Add(MakeFittedPrefillTerms(fit_.prefill_attention(), peaks_, 1, s.new_tokens, s.context_tokens, p_.heads,
                                         p_.kv_heads, p_.head_dim, p_.kv_bytes_per_token_per_layer));
      if (s.num_segments > 1) {
        merge_s += SegmentMergeSeconds(p_.rates, s.new_tokens, p_.heads, p_.head_dim, s.num_segments);
      }
      const double features[] = {static_cast<double>(s.new_tokens), static_cast<double>(s.context_tokens)};
      prefill_inside = prefill_inside && s.num_segments == 1 && prefill_range_.Inside(features, 2);
    }
  }
  if (prefill.thread_blocks > 0) {
    sums.prefill_s =
        CountPerLayer(kPrefill, FittedPrefillKernelSeconds(fit_.prefill_attention(), peaks_, prefill) + merge_s,
                      prefill_inside, tally);
  }
  return sums;
}

double FittedCostModel::AttentionSeconds(const BatchSums& sums, const FittedDecodeTerms& decode, Tally* tally) const {
  double attention_s = sums.prefill_s;
  if (sums.decodes > 0) attention_s += Decode(decode, sums.decodes, sums.decode_context, sums.max_context, tally);
  if (sums.merge_decodes > 0) {
    attention_s += SegmentMergeSeconds(p_.rates, sums.merge_decodes, p_.heads, p_.head_dim, sums.max_segments);
  }
  return attention_s;
}

CostBreakdown FittedCostModel::OtherTerms(const BatchSums& sums, Tally* tally) const {
  const int64_t h = p_.hidden, layer_tokens = sums.layer_tokens;
  const double linear_s = Gemm(kQkv, layer_tokens, tally) + Gemm(kOutput, layer_tokens, tally) +
                          Gemm(kGateUp, layer_tokens, tally) + Gemm(kDown, layer_tokens, tally) +
                          Gemm(kKvProjection, sums.projection_tokens, tally);
  double elementwise_s = 0;
  if (layer_tokens > 0) {
    const double features[] = {static_cast<double>(layer_tokens)};
    const bool inside = elementwise_range_.Inside(features, 1);
    elementwise_s =
        CountPerLayer(kElementwise, FittedElementwiseSeconds(fit_.elementwise(), layer_tokens, h), inside, tally);
  }
  double allreduce_s = 0;  // both all-reduces of a layer (after attention and after the MLP), charged twice
  if (p_.tp > 1 && layer_tokens > 0) {
    const proto::AllReduceFit* f = all_reduce_fit_;
    const double bytes = static_cast<double>(layer_tokens) * h * 2;
    if (f != nullptr) {
      const double features[] = {bytes};
      const bool inside = all_reduce_exact_ && all_reduce_range_.Inside(features, 1);
      allreduce_s = 2 * Count(kAllReduce, FittedAllReduceSeconds(*f, bytes, p_.tp), inside, 2 * p_.num_layers, tally);
    } else {
      // No all-reduce measured on this GPU: the roofline's ring formula, counted as extrapolated.
      allreduce_s = 2 * Count(kAllReduce, AllReduceSeconds(p_.rates, bytes, p_.tp), false, 2 * p_.num_layers, tally);
    }
  }
  const double layers = p_.num_layers;
  CostBreakdown b;
  b.linear_ns = SecondsToNs(layers * linear_s);
  // The LM head is one GEMM per iteration, not per layer: count it with its own weight.
  double lm_head_s = 0;
  if (sums.sampling > 0) {
    const double features[] = {static_cast<double>(sums.sampling)};
    const bool inside = gemm_format_fitted_ && gemm_range_.Inside(features, 1);
    lm_head_s = Count(kGemm, GemmSeconds(kLmHead, sums.sampling), inside, 1, tally);
  }
  b.lm_head_ns = SecondsToNs(lm_head_s);
  b.allreduce_ns = SecondsToNs(layers * allreduce_s);
  b.other_ns = SecondsToNs(layers * elementwise_s);
  b.overhead_ns = p_.overhead_ns + fit_.iteration_overhead_ns();
  return b;
}

namespace {

void SetAttention(int64_t attention_ns, CostBreakdown* b) {
  b->attention_ns = attention_ns;
  b->total_ns = b->linear_ns + b->lm_head_ns + b->attention_ns + b->allreduce_ns + b->other_ns + b->overhead_ns;
}

}  // namespace

absl::StatusOr<CostBreakdown> FittedCostModel::Breakdown(const BatchShape& batch, Tally* tally) const {
  KVSIM_RETURN_IF_ERROR(ValidateBatch(batch));
  const BatchSums sums = Sum(batch, tally);
  const double attention_s =
      AttentionSeconds(sums, sums.decodes > 0 ? DecodeTerms(sums.decodes) : FittedDecodeTerms(), tally);
  CostBreakdown b = OtherTerms(sums, tally);
  SetAttention(SecondsToNs(p_.num_layers * attention_s), &b);
  return b;
}

// A decode run's batch differs from its first only in decode_context (+ decodes per step) and max_context
// (+ 1 per step), which only the decode attention reads.
class FittedCostModel::DecodeRun final : public DecodeRunPricer {
 public:
  DecodeRun(const FittedCostModel* model, const BatchShape& first) : model_(model) {
    first_ = model->Sum(first, &other_counts_);  // no prefill pieces: counts nothing
    decode_ = model->DecodeTerms(first_.decodes);
    other_ = model->OtherTerms(first_, &other_counts_);
  }
  ~DecodeRun() override {
    counts_.Add(other_counts_, priced_);  // OtherTerms' kernels, once per priced iteration
    model_->Commit(counts_);
  }

  absl::StatusOr<int64_t> IterationTimeNs(int64_t step, const BatchShape& /*batch*/) override {
    BatchSums sums = first_;
    sums.decode_context += step * sums.decodes;
    sums.max_context += step;
    const double attention_s = model_->AttentionSeconds(sums, decode_, &counts_);
    ++priced_;
    CostBreakdown b = other_;
    SetAttention(SecondsToNs(model_->p_.num_layers * attention_s), &b);
    return b.total_ns;
  }

 private:
  const FittedCostModel* const model_;
  BatchSums first_;
  FittedDecodeTerms decode_;  // of the run's batch size
  CostBreakdown other_;       // OtherTerms of every iteration
  Tally other_counts_;        // what OtherTerms counts per iteration
  Tally counts_;              // the priced iterations' decode attention, committed when the run ends
  int64_t priced_ = 0;        // iterations priced
};

std::unique_ptr<DecodeRunPricer> FittedCostModel::StartDecodeRun(const BatchShape& first) const {
  bool decodes_only = ValidateBatch(first).ok();
  for (const SequenceWork& s : first.sequences) {
    decodes_only = decodes_only && s.new_tokens == 1 && !s.recompute && s.prefix_id == 0;
  }
  if (!decodes_only) return CostModel::StartDecodeRun(first);
  return std::make_unique<DecodeRun>(this, first);
}

absl::StatusOr<int64_t> FittedCostModel::IterationTimeNs(const BatchShape& batch) const {
  KVSIM_ASSIGN_OR_RETURN(CostBreakdown b, IterationBreakdown(batch));
  return b.total_ns;
}

int64_t FittedCostModel::TransferTimeNs(int64_t bytes, const proto::TierConfig& tier) const {
  if (bytes <= 0) return 0;
  const double bandwidth = tier.bandwidth_bytes_per_s() > 0 ? tier.bandwidth_bytes_per_s() : p_.rates.pcie_bytes_per_s;
  return tier.latency_ns() + SecondsToNs(static_cast<double>(bytes) / bandwidth);
}

proto::CostModelAccuracy FittedCostModel::Accuracy() const {
  proto::CostModelAccuracy a;
  a.set_calibrated(true);
  a.set_per_kind_only(true);
  a.set_kernel_predictions(predictions_.load(std::memory_order_relaxed));
  a.set_extrapolated_predictions(extrapolated_.load(std::memory_order_relaxed));
  const proto::FitQuality* quality[kNumKinds] = {&fit_.gemm().quality(), &fit_.prefill_attention().quality(),
                                                 &fit_.decode_attention().quality(), &fit_.elementwise().quality(),
                                                 nullptr};
  if (all_reduce_fit_ != nullptr) quality[kAllReduce] = &all_reduce_fit_->quality();
  double total = 0, extrapolated = 0;
  for (int k = 0; k < kNumKinds; ++k) {
    total += time_ns_[k].load(std::memory_order_relaxed);
    extrapolated += extrapolated_ns_[k].load(std::memory_order_relaxed);
  }
  if (total <= 0) return a;
  double median = 0, p95 = 0;
  int64_t points = 0;
  for (int k = 0; k < kNumKinds; ++k) {
    const double t = time_ns_[k].load(std::memory_order_relaxed);
    if (t <= 0) continue;
    proto::KernelKindAccuracy* kind = a.add_kinds();
    kind->set_kind(kKindNames[k]);
    kind->set_time_fraction(t / total);
    const bool fitted = quality[k] != nullptr && quality[k]->fitted() && (k != kAllReduce || all_reduce_exact_);
    kind->set_fitted(fitted);
    if (fitted) {
      kind->set_heldout_points(quality[k]->heldout_rows());
      kind->set_heldout_median_error(quality[k]->heldout_median_error());
      kind->set_heldout_p95_error(quality[k]->heldout_p95_error());
      median += t / total * quality[k]->heldout_median_error();
      p95 += t / total * quality[k]->heldout_p95_error();
      points += quality[k]->heldout_rows();
    }
  }
  a.set_heldout_points(points);
  a.set_time_weighted_median_error(median);
  a.set_time_weighted_p95_error(p95);
  a.set_heldout_median_error(median);
  a.set_heldout_p95_error(p95);
  a.set_extrapolated_time_fraction(extrapolated / total);
  return a;
}

namespace {

absl::StatusOr<std::unique_ptr<CostModel>> CreateFitted(const proto::ExperimentConfig& config) {
  KVSIM_ASSIGN_OR_RETURN(std::unique_ptr<FittedCostModel> model, FittedCostModel::Create(config));
  return std::unique_ptr<CostModel>(std::move(model));
}

}  // namespace

KVSIM_REGISTER_COST_MODEL("fitted", fitted, CreateFitted);

}  // namespace kvsim
