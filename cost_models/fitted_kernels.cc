#include "cost_models/fitted_kernels.h"

#include <algorithm>
#include <cmath>

#include "cost_models/kernel_roofline.h"

namespace kvsim {
namespace {

constexpr double kActivationBytes = 2;  // bf16/fp16
constexpr double kGemmTile = 128;       // output tile edge of the wave model
// Width over ln(bytes) of an all-reduce protocol switch (AllReduceFit): a 10% size range.
constexpr double kProtocolSwitchWidth = 0.1;

// Blends the wave efficiency W into a slowdown factor: 1 / (1 - w + w W).
double WaveSlowdown(double wave_weight, double wave_efficiency) {
  const double w = std::clamp(wave_weight, 0.0, 1.0);
  return 1.0 / (1.0 - w + w * wave_efficiency);
}

}  // namespace

DevicePeaks MakeDevicePeaks(const proto::DeviceSpec& d) {
  DevicePeaks p;
  p.bf16_flops_per_s = d.peak_bf16_flops();
  p.fp8_flops_per_s = d.peak_fp8_flops() > 0 ? d.peak_fp8_flops() : d.peak_bf16_flops();
  p.int8_ops_per_s = d.peak_int8_ops() > 0 ? d.peak_int8_ops() : d.peak_bf16_flops();
  p.memory_bytes_per_s = d.memory_bandwidth_bytes_per_s();
  p.num_sms = d.num_sms();
  return p;
}

double SmoothMax(double a, double b, double p) {
  const double hi = std::max(a, b);
  if (hi <= 0) return 0;
  const double lo = std::min(a, b);
  return hi * std::pow(1.0 + std::pow(lo / hi, p), 1.0 / p);
}

double FittedGemmSeconds(const proto::GemmFit& fit, const DevicePeaks& peaks, double peak_flops_per_s,
                         double weight_bytes_per_element, double tokens, double out_features, double in_features) {
  if (tokens <= 0) return 0;
  const double m = tokens, n = out_features, k = in_features;
  const double tiles = std::ceil(m / kGemmTile) * std::ceil(n / kGemmTile);
  const double compute = 2 * m * n * k / (peak_flops_per_s * fit.compute_efficiency()) *
                         WaveSlowdown(fit.wave_weight(), WaveEfficiency(tiles, peaks.num_sms));
  const double bytes = n * k * weight_bytes_per_element + m * (n + k) * kActivationBytes;
  const double memory = bytes / (peaks.memory_bytes_per_s * fit.memory_efficiency());
  return fit.launch_ns() * 1e-9 + SmoothMax(compute, memory, std::max(1.0, fit.ridge_exponent()));
}

void FittedPrefillTerms::Add(const FittedPrefillTerms& other) {
  compute_s += other.compute_s;
  memory_s += other.memory_s;
  thread_blocks += other.thread_blocks;
  max_kv_tokens = std::max(max_kv_tokens, other.max_kv_tokens);
}

FittedPrefillTerms MakeFittedPrefillTerms(const proto::PrefillAttentionFit& fit, const DevicePeaks& peaks, double batch,
                                          double new_tokens, double context_tokens, double heads, double kv_heads,
                                          double head_dim, double kv_bytes_per_token) {
  FittedPrefillTerms t;
  if (new_tokens <= 0 || batch <= 0) return t;
  const double n = new_tokens, c = context_tokens;
  const double pairs = n * c + fit.causal_pair_cost() * n * (n + 1 + fit.causal_extra_tokens()) / 2;
  const double efficiency = fit.compute_efficiency() * n / (n + std::max(0.0, fit.half_efficiency_tokens()));
  t.compute_s = batch * 4 * heads * head_dim * pairs / (peaks.bf16_flops_per_s * efficiency);
  const double bytes = batch * ((c + 2 * n) * kv_bytes_per_token + 2 * n * heads * head_dim * kActivationBytes);
  t.memory_s = bytes / (peaks.memory_bytes_per_s * fit.memory_efficiency());
  const double shared = std::max(1.0, kv_heads);
  t.thread_blocks = batch * std::ceil(n * std::max(1.0, heads / shared) / kPrefillQueryTileRows) * shared;
  t.max_kv_tokens = c + n;
  return t;
}

double FittedPrefillKernelSeconds(const proto::PrefillAttentionFit& fit, const DevicePeaks& peaks,
                                  const FittedPrefillTerms& terms) {
  if (terms.thread_blocks <= 0) return 0;
  const double chunk = fit.split_chunk_tokens();
  const bool split = chunk > 0 && terms.thread_blocks < peaks.num_sms && terms.max_kv_tokens > chunk;
  const double serial = fit.serial_ns_per_token() * 1e-9 * (split ? chunk : terms.max_kv_tokens);
  return (fit.launch_ns() + (split ? fit.split_ns() : 0)) * 1e-9 + std::max({terms.compute_s, terms.memory_s, serial});
}

double FittedPrefillSeconds(const proto::PrefillAttentionFit& fit, const DevicePeaks& peaks, double batch,
                            double new_tokens, double context_tokens, double heads, double kv_heads, double head_dim,
                            double kv_bytes_per_token) {
  return FittedPrefillKernelSeconds(fit, peaks,
                                    MakeFittedPrefillTerms(fit, peaks, batch, new_tokens, context_tokens, heads,
                                                           kv_heads, head_dim, kv_bytes_per_token));
}

FittedDecodeTerms MakeFittedDecodeTerms(const proto::DecodeAttentionFit& fit, const DevicePeaks& peaks, double batch,
                                        double kv_heads, double kv_bytes_per_token) {
  FittedDecodeTerms terms;
  if (batch <= 0) return terms;  // 0 s
  const double items = batch * std::max(1.0, kv_heads);
  const double slots = static_cast<double>(std::max(1, fit.ctas_per_sm())) * peaks.num_sms;  // 0: no waves
  terms.fixed_s = (fit.launch_ns() + batch * fit.per_sequence_ns()) * 1e-9;
  terms.kv_bytes_per_token = kv_bytes_per_token;
  terms.bytes_per_s = peaks.memory_bytes_per_s * fit.memory_efficiency();
  terms.slowdown = WaveSlowdown(fit.wave_weight(), WaveEfficiency(items, static_cast<int32_t>(slots)));
  terms.can_split = items < slots;
  terms.split_fixed_s = terms.fixed_s + fit.split_ns() * 1e-9;
  terms.split_bytes_per_s = peaks.memory_bytes_per_s * SplitMemoryEfficiency(fit);
  return terms;
}

double SplitMemoryEfficiency(const proto::DecodeAttentionFit& fit) {
  return fit.split_memory_efficiency() > 0 ? fit.split_memory_efficiency() : fit.memory_efficiency();
}

double FittedDecodeSeconds(const proto::DecodeAttentionFit& fit, const DevicePeaks& peaks, double batch,
                           double total_context_tokens, double max_context_tokens, double kv_heads,
                           double kv_bytes_per_token) {
  return MakeFittedDecodeTerms(fit, peaks, batch, kv_heads, kv_bytes_per_token)
      .Seconds(total_context_tokens, max_context_tokens);
}

double FittedElementwiseSeconds(const proto::ElementwiseFit& fit, double tokens, double hidden) {
  if (tokens <= 0) return 0;
  const double elements = tokens * hidden;
  if (fit.ns_per_token_element_beyond_cache() <= 0) {
    return (fit.launch_ns() + fit.ns_per_token_element() * elements) * 1e-9;
  }
  const double knee = std::max(0.0, fit.cache_resident_token_elements());
  return (fit.launch_ns() + fit.ns_per_token_element() * std::min(elements, knee) +
          fit.ns_per_token_element_beyond_cache() * std::max(0.0, elements - knee)) *
         1e-9;
}

double FittedAllReduceSeconds(const proto::AllReduceFit& fit, double bytes, double gpus) {
  if (gpus <= 1 || bytes <= 0) return 0;
  const double algorithm_bytes = 2 * (gpus - 1) / gpus * bytes;
  const double small = fit.latency_ns() * 1e-9 + algorithm_bytes / fit.bus_bandwidth_bytes_per_s();
  if (fit.large_bus_bandwidth_bytes_per_s() <= 0) return small;
  const double large = fit.large_latency_ns() * 1e-9 + algorithm_bytes / fit.large_bus_bandwidth_bytes_per_s();
  if (fit.switch_bytes() <= 0) return std::min(small, large);
  // Protocols chosen by size: logistic steps over ln(bytes) (AllReduceFit in proto/spec.proto).
  auto step = [bytes](double switch_bytes) {
    return 1 / (1 + std::exp(-(std::log(bytes) - std::log(switch_bytes)) / kProtocolSwitchWidth));
  };
  double above = large;
  if (fit.bulk_bus_bandwidth_bytes_per_s() > 0 && fit.bulk_switch_bytes() > 0) {
    const double bulk = fit.bulk_latency_ns() * 1e-9 + algorithm_bytes / fit.bulk_bus_bandwidth_bytes_per_s();
    const double s = step(fit.bulk_switch_bytes());
    above = (1 - s) * large + s * bulk;
  }
  const double s = step(fit.switch_bytes());
  return (1 - s) * small + s * above;
}

const proto::AllReduceFit* FindAllReduceFit(const proto::FittedCostParams& params, int32_t gpus, bool* exact) {
  const proto::AllReduceFit* best = nullptr;
  *exact = false;
  for (const proto::AllReduceFit& f : params.all_reduce()) {
    if (f.num_gpus() == gpus) {
      *exact = true;
      return &f;
    }
  }
  // The nearest larger count (a conservative stand-in), else the largest.
  const proto::AllReduceFit* largest = nullptr;
  for (const proto::AllReduceFit& f : params.all_reduce()) {
    if (f.num_gpus() > gpus && (best == nullptr || f.num_gpus() < best->num_gpus())) best = &f;
    if (largest == nullptr || f.num_gpus() > largest->num_gpus()) largest = &f;
  }
  if (best == nullptr) best = largest;
  return best;
}

FitRange::FitRange(const proto::FitQuality& quality) : fitted_(quality.fitted()) {
  num_ranges_ = std::min({kMaxFeatures, quality.feature_min_size(), quality.feature_max_size()});
  for (int i = 0; i < num_ranges_; ++i) {
    min_[i] = quality.feature_min(i);
    max_[i] = quality.feature_max(i);
  }
}

}  // namespace kvsim
