// File: cost_models/fitted_kernels.h
//
// Kernel times of the fitted cost model: per-op efficiency curves over the device's datasheet peaks, with
// parameters fitted to measured kernel times (cost_models/cost_fit.h) and kept in the device preset
// (proto/spec.proto, FittedCostParams: every formula and unit is documented on its message). One GPU, one
// layer, seconds. Each function takes the curve's parameters explicitly so that the fit can evaluate
// candidate parameters with the same code the cost model runs.
//
// Stateless functions over immutable values; thread-safe.
//
// Example:
//   const DevicePeaks peaks = MakeDevicePeaks(config.device());
//   double s = FittedGemmSeconds(config.device().fitted().gemm(), peaks, peaks.bf16_flops_per_s, 2.0,
//                                /*tokens=*/256, /*out=*/6144, /*in=*/4096);
#ifndef KVSIM_COST_MODELS_FITTED_KERNELS_H_
#define KVSIM_COST_MODELS_FITTED_KERNELS_H_

#include <algorithm>
#include <cstdint>

#include "proto/spec.pb.h"

namespace kvsim {

// Datasheet peaks, without any efficiency factor (the fitted curves carry the efficiencies).
struct DevicePeaks {
  double bf16_flops_per_s = 0;
  double fp8_flops_per_s = 0;  // bf16 when the device has none
  double int8_ops_per_s = 0;   // bf16 when the device has none
  double memory_bytes_per_s = 0;
  int32_t num_sms = 0;  // 0 = no wave quantisation
};

DevicePeaks MakeDevicePeaks(const proto::DeviceSpec& device);

// (a^p + b^p)^(1/p) for a, b >= 0 and p >= 1, computed without overflow.
double SmoothMax(double a, double b, double p);

// GEMM of `tokens` rows, in_features -> out_features, weights of `weight_bytes_per_element`, at the
// tensor-core peak `peak_flops_per_s` (GemmFit in proto/spec.proto). 0 for tokens <= 0.
double FittedGemmSeconds(const proto::GemmFit& fit, const DevicePeaks& peaks, double peak_flops_per_s,
                         double weight_bytes_per_element, double tokens, double out_features, double in_features);

// Query rows (query tokens x the heads sharing a KV head) of one prefill thread block
// (PrefillAttentionFit in proto/spec.proto): FlashInfer's tile for more than 64 packed query rows.
inline constexpr double kPrefillQueryTileRows = 128;

// The terms of prefill chunks that one batched prefill kernel runs together (PrefillAttentionFit in
// proto/spec.proto): FLOP and byte times add up, thread blocks add up, the longest KV bounds the serial pass.
struct FittedPrefillTerms {
  double compute_s = 0;
  double memory_s = 0;
  double thread_blocks = 0;
  double max_kv_tokens = 0;  // c + n of the longest chunk

  // The chunks of `other` join this kernel.
  void Add(const FittedPrefillTerms& other);
};

// `batch` chunks of `new_tokens` after `context_tokens` cached ones each, `heads` query heads and
// `kv_heads` KV heads per GPU; `kv_bytes_per_token` is the KV of one token of one layer on this GPU
// (2 x kv_heads x head_dim x element bytes). No chunks (new_tokens or batch <= 0): all terms 0.
FittedPrefillTerms MakeFittedPrefillTerms(const proto::PrefillAttentionFit& fit, const DevicePeaks& peaks, double batch,
                                          double new_tokens, double context_tokens, double heads, double kv_heads,
                                          double head_dim, double kv_bytes_per_token);

// Seconds of the one kernel that runs `terms`' chunks (0 without chunks): launch, the split-KV merge when
// its blocks leave SMs idle and its longest KV exceeds one split chunk, and the largest of the summed
// compute, the summed memory and the longest block's pass.
double FittedPrefillKernelSeconds(const proto::PrefillAttentionFit& fit, const DevicePeaks& peaks,
                                  const FittedPrefillTerms& terms);

// FittedPrefillKernelSeconds of MakeFittedPrefillTerms: `batch` identical chunks in one kernel.
double FittedPrefillSeconds(const proto::PrefillAttentionFit& fit, const DevicePeaks& peaks, double batch,
                            double new_tokens, double context_tokens, double heads, double kv_heads, double head_dim,
                            double kv_bytes_per_token);

// FlashInfer's smallest split-KV chunk (DecodeAttentionFit in proto/spec.proto): a batch whose longest
// context is at most this many tokens is not split.
inline constexpr double kMinSplitChunkTokens = 128;

// `batch` decodes over `total_context_tokens` cached tokens together, the longest `max_context_tokens`,
// `kv_heads` KV heads per GPU.
double FittedDecodeSeconds(const proto::DecodeAttentionFit& fit, const DevicePeaks& peaks, double batch,
                           double total_context_tokens, double max_context_tokens, double kv_heads,
                           double kv_bytes_per_token);

// FittedDecodeSeconds in two parts: the terms of a batch size, then the time of a total and longest
// context (FittedDecodeSeconds(fit, peaks, batch, total, max, ...) == MakeFittedDecodeTerms(fit, peaks,
// batch, ...).Seconds(total, max), exactly).
struct FittedDecodeTerms {
  double fixed_s = 0;             // launch and per-sequence costs
  double kv_bytes_per_token = 0;  // of one layer on this GPU
  double bytes_per_s = 1;         // memory bandwidth x the fitted efficiency, without split-KV
  double slowdown = 1;            // wave quantisation of the work items, without split-KV
  bool can_split = false;         // the batch leaves thread-block slots free: split-KV past one chunk
  double split_fixed_s = 0;       // fixed_s + split_ns
  double split_bytes_per_s = 1;   // memory bandwidth x the split-KV efficiency
  double Seconds(double total_context_tokens, double max_context_tokens) const {
    if (can_split && max_context_tokens > kMinSplitChunkTokens) {
      return split_fixed_s + total_context_tokens * kv_bytes_per_token / split_bytes_per_s;
    }
    return fixed_s + total_context_tokens * kv_bytes_per_token / bytes_per_s * slowdown;
  }
};
FittedDecodeTerms MakeFittedDecodeTerms(const proto::DecodeAttentionFit& fit, const DevicePeaks& peaks, double batch,
                                        double kv_heads, double kv_bytes_per_token);

// The split-KV memory efficiency of `fit`: split_memory_efficiency, or memory_efficiency where it is 0 (unset).
double SplitMemoryEfficiency(const proto::DecodeAttentionFit& fit);

// The element-wise ops of one layer over `tokens` tokens of hidden size `hidden`.
double FittedElementwiseSeconds(const proto::ElementwiseFit& fit, double tokens, double hidden);

// One all-reduce of `bytes` over `gpus` GPUs with the curve of `fit` (its own num_gpus is not checked).
double FittedAllReduceSeconds(const proto::AllReduceFit& fit, double bytes, double gpus);

// The all-reduce curve for `gpus` GPUs: the one fitted for that count, else the nearest larger count,
// else the largest (`*exact` false then). nullptr when `params` has none.
const proto::AllReduceFit* FindAllReduceFit(const proto::FittedCostParams& params, int32_t gpus, bool* exact);

// Whether a kind's predictions lie inside its measurements: `fitted` of a FitQuality and its feature
// ranges, copied out of the proto once, since the check runs for every kernel priced.
class FitRange {
 public:
  static constexpr int kMaxFeatures = 2;  // the most any kind has (FitQuality)

  FitRange() = default;  // not fitted: nothing is inside
  explicit FitRange(const proto::FitQuality& quality);

  // True when the kind was fitted and each of the first `num_features` features that `quality` has a range
  // for lies in it (features without a range, or beyond kMaxFeatures, are not checked).
  bool Inside(const double* features, int num_features) const {
    if (!fitted_) return false;
    const int n = std::min(num_features, num_ranges_);
    for (int i = 0; i < n; ++i) {
      if (features[i] < min_[i] || features[i] > max_[i]) return false;
    }
    return true;
  }

 private:
  bool fitted_ = false;
  int num_ranges_ = 0;
  double min_[kMaxFeatures] = {};
  double max_[kMaxFeatures] = {};
};

}  // namespace kvsim

#endif  // KVSIM_COST_MODELS_FITTED_KERNELS_H_
