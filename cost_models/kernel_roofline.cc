#include "cost_models/kernel_roofline.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "cost_models/calibration_table.h"

namespace kvsim {
namespace {

constexpr double kActivationBytes = 2;  // bf16
constexpr double kGemmTile = 128;       // output tile edge of the GEMMs the wave model assumes
constexpr double kQueryTile = 128;      // query rows per prefill-attention CTA

}  // namespace

DeviceRates MakeDeviceRates(const proto::DeviceSpec& d) {
  DeviceRates r;
  const double ce = d.compute_efficiency();
  r.bf16_flops_per_s = d.peak_bf16_flops() * ce;
  r.fp8_flops_per_s = (d.peak_fp8_flops() > 0 ? d.peak_fp8_flops() : d.peak_bf16_flops()) * ce;
  r.int8_ops_per_s = (d.peak_int8_ops() > 0 ? d.peak_int8_ops() : d.peak_bf16_flops()) * ce;
  r.fp32_flops_per_s = (d.peak_fp32_flops() > 0 ? d.peak_fp32_flops() : d.peak_bf16_flops() / 16) * ce;
  r.alu_ops_per_s = r.fp32_flops_per_s;
  r.memory_bytes_per_s = d.memory_bandwidth_bytes_per_s() * d.memory_efficiency();
  const double link = d.interconnect_bandwidth_bytes_per_s() > 0 ? d.interconnect_bandwidth_bytes_per_s()
                                                                 : d.pcie_bandwidth_bytes_per_s();
  r.link_bytes_per_s = link * d.interconnect_efficiency();
  r.link_step_s = d.interconnect_latency_ns() * 1e-9;
  r.pcie_bytes_per_s = d.pcie_bandwidth_bytes_per_s();
  r.num_sms = d.num_sms();
  r.l2_cache_bytes = d.l2_cache_bytes();
  return r;
}

double GemmFlopsPerSecond(const DeviceRates& rates, int bits, bool is_fp8) {
  if (bits >= 32) return rates.fp32_flops_per_s;
  if (bits == 8) return is_fp8 ? rates.fp8_flops_per_s : rates.int8_ops_per_s;
  return rates.bf16_flops_per_s;
}

double WaveEfficiency(double work_items, int32_t num_sms) {
  if (num_sms <= 0 || work_items <= 0) return 1;
  const double waves = std::ceil(work_items / num_sms);
  return work_items / (waves * num_sms);
}

double GemmSeconds(const DeviceRates& rates, double flops_per_s, double weight_bytes_per_element, int64_t tokens,
                   int64_t out_features, int64_t in_features, bool wave_quantisation) {
  if (tokens <= 0) return 0;
  const double m = tokens, n = out_features, k = in_features;
  double compute = 2 * m * n * k / flops_per_s;
  if (wave_quantisation) {
    compute /= WaveEfficiency(std::ceil(m / kGemmTile) * std::ceil(n / kGemmTile), rates.num_sms);
  }
  const double bytes = n * k * weight_bytes_per_element + m * (n + k) * kActivationBytes;
  return std::max(compute, bytes / rates.memory_bytes_per_s);
}

AttentionKernel::AttentionKernel(const DeviceRates& rates, const KvFormat& kv, int64_t heads, int64_t kv_heads,
                                 int64_t head_dim)
    : heads(heads),
      head_dim(head_dim),
      kv_elements_per_token(2.0 * kv_heads * head_dim),
      bytes_per_element(kv.BytesPerElement()),
      dequant_ops_per_element(kv.DequantOpsPerElement()),
      tensor_flops_per_s(kv.is_fp8 ? rates.fp8_flops_per_s : rates.bf16_flops_per_s),
      alu_ops_per_s(rates.alu_ops_per_s),
      memory_bytes_per_s(rates.memory_bytes_per_s) {}

double AttentionSeconds(const DeviceRates& rates, const KvFormat& kv, int64_t heads, int64_t kv_heads, int64_t head_dim,
                        int64_t context_tokens, int64_t new_tokens, int64_t l2_resident_tokens) {
  return AttentionKernel(rates, kv, heads, kv_heads, head_dim).Seconds(context_tokens, new_tokens, l2_resident_tokens);
}

double AllReduceSeconds(const DeviceRates& rates, double bytes, int64_t gpus) {
  if (gpus <= 1 || bytes <= 0) return 0;
  const double g = gpus;
  return 2 * (g - 1) * rates.link_step_s + 2 * (g - 1) / g * bytes / rates.link_bytes_per_s;
}

double SegmentMergeSeconds(const DeviceRates& rates, int64_t batch, int64_t heads, int64_t head_dim, int64_t segments) {
  const double bytes =
      static_cast<double>(batch) * heads * (segments * (head_dim * 4.0 + 4.0) + head_dim * kActivationBytes);
  return bytes / rates.memory_bytes_per_s;
}

KvFormat FormatFromCalibrationDType(const std::string& dtype, int group_size, int head_dim) {
  KvFormat f;
  f.bits = CalibrationDTypeBits(dtype);
  f.is_fp8 = dtype == "fp8";
  f.is_integer = absl::string_view(dtype).substr(0, 3) == "int";
  if (f.is_integer || (f.is_fp8 && group_size > 0)) {
    f.group_size = group_size > 0 ? group_size : std::max(head_dim, 1);
    f.scale_bytes_per_group = 4;
  }
  return f;
}

KernelQuery KernelQueryFromPoint(const proto::CalibrationPoint& p) {
  const proto::KernelShape& s = p.shape();
  KernelQuery q;
  q.kind = p.kind();
  q.format = FormatFromCalibrationDType(p.dtype().empty() ? "bf16" : p.dtype(), p.group_size(), s.head_dim());
  q.batch = std::max<int64_t>(1, s.batch());
  q.query_tokens = std::max<int64_t>(1, s.query_tokens());
  q.context_tokens = s.context_tokens();
  q.num_segments = std::max<int32_t>(1, s.num_segments());
  q.num_heads = s.num_heads();
  q.num_kv_heads = s.num_kv_heads();
  q.head_dim = s.head_dim();
  q.page_size = s.page_size();
  q.in_features = s.in_features();
  q.out_features = s.out_features();
  q.bytes = s.bytes();
  q.num_gpus = s.num_gpus();
  return q;
}

double KernelRooflineSeconds(const KernelQuery& q, const DeviceRates& rates, bool wave_quantisation) {
  switch (q.kind) {
    case proto::KERNEL_KIND_DECODE_ATTENTION:
    case proto::KERNEL_KIND_PREFILL_ATTENTION: {
      double seconds = q.batch * AttentionSeconds(rates, q.format, q.num_heads, q.num_kv_heads, q.head_dim,
                                                  q.context_tokens, q.query_tokens);
      if (wave_quantisation) {
        // Work items: one per (sequence, KV head, query tile). Split-KV kernels split the context when
        // there are fewer items than SMs, so the work is spread over ceil(S / W) x W items.
        double items = q.batch * q.num_kv_heads * std::ceil(q.query_tokens / kQueryTile);
        if (rates.num_sms > 0 && items < rates.num_sms) items *= std::ceil(rates.num_sms / items);
        seconds /= WaveEfficiency(items, rates.num_sms);
      }
      return seconds;
    }
    case proto::KERNEL_KIND_SEGMENT_MERGE:
      return SegmentMergeSeconds(rates, q.batch, q.num_heads, q.head_dim, q.num_segments);
    case proto::KERNEL_KIND_KV_PROJECTION:
    case proto::KERNEL_KIND_MLP_GEMM:
    case proto::KERNEL_KIND_LINEAR_GEMM:
      // No wave term for library GEMMs: cuBLASLt's split-K and stream-K kernels on Hopper largely hide
      // partial waves, and a 128 x 128 tile model would put steps into the prior that the measured
      // times do not have.
      return GemmSeconds(rates, GemmFlopsPerSecond(rates, q.format.bits, q.format.is_fp8), q.format.bits / 8.0,
                         q.query_tokens * q.batch, q.out_features, q.in_features,
                         /*wave_quantisation=*/false);
    case proto::KERNEL_KIND_ALL_REDUCE:
      return AllReduceSeconds(rates, static_cast<double>(q.bytes), q.num_gpus);
    case proto::KERNEL_KIND_HOST_DEVICE_COPY:
      return static_cast<double>(q.bytes) / rates.pcie_bytes_per_s;
    default:
      return 0;
  }
}

}  // namespace kvsim
