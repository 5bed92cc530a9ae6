// File: cost_models/kernel_roofline.h
//
// Roofline times of single kernels (one layer, one GPU): the building blocks of RooflineCostModel and the
// prior of TableCostModel outside its measured range. Each kernel costs max(compute time, memory time)
// (see roofline.h for the formulas). KernelQuery is the plain-struct form of a calibration point's kind,
// dtype and shape, so hot paths never touch protos.
//
// Wave quantisation (used by the table model's prior only, so the analytic model stays the textbook
// roofline): a kernel of W equal work items on S SMs runs ceil(W / S) waves, so its time is divided by
// W / (ceil(W / S) x S). KernelRooflineSeconds applies it to attention (one item per sequence, KV head
// and query tile, split-KV filling the SMs for small batches), not to library GEMMs, whose split-K and
// stream-K kernels largely hide partial waves; GemmSeconds offers it for custom GEMMs.
//
// Stateless functions over immutable values; thread-safe.
//
// Example:
//   DeviceRates rates = MakeDeviceRates(config.device());
//   KernelQuery q = KernelQueryFromPoint(point);
//   double seconds = KernelRooflineSeconds(q, rates, /*wave_quantisation=*/true);
#ifndef KVSIM_COST_MODELS_KERNEL_ROOFLINE_H_
#define KVSIM_COST_MODELS_KERNEL_ROOFLINE_H_

#include <cstdint>

#include "config/kv_format.h"
#include "proto/calibration.pb.h"
#include "proto/spec.pb.h"

namespace kvsim {

// Reachable rates of one GPU: peaks x the spec's efficiencies.
struct DeviceRates {
  double bf16_flops_per_s = 0;  // tensor cores, bf16/fp16
  double fp8_flops_per_s = 0;   // tensor cores, fp8 (bf16 if the device has none)
  double int8_ops_per_s = 0;    // tensor cores, int8 (bf16 if the device has none)
  double fp32_flops_per_s = 0;  // CUDA cores, fp32 tensor-less (bf16 / 16 if not given)
  double alu_ops_per_s = 0;     // CUDA-core ops (= fp32_flops_per_s)
  double memory_bytes_per_s = 0;
  double link_bytes_per_s = 0;  // NVLink, or PCIe without it, x interconnect efficiency
  double link_step_s = 0;       // latency per ring step
  double pcie_bytes_per_s = 0;  // host <-> device, as given (no efficiency)
  int32_t num_sms = 0;          // 0 = no wave quantisation
  int64_t l2_cache_bytes = 0;
};

DeviceRates MakeDeviceRates(const proto::DeviceSpec& device);

// The tensor-core (or CUDA-core for fp32) peak for GEMMs with weights of `bits` bits: 16 -> bf16,
// 8 and fp8 -> fp8, 8 and integer -> int8, 4 or fewer -> bf16 (weights dequantised, W4A16), 32 -> fp32.
double GemmFlopsPerSecond(const DeviceRates& rates, int bits, bool is_fp8);

// GEMM of `tokens` rows, in_features -> out_features: FLOPs 2 M N K; bytes N K x weight bytes +
// M (N + K) x 2 (bf16 activations).
double GemmSeconds(const DeviceRates& rates, double flops_per_s, double weight_bytes_per_element, int64_t tokens,
                   int64_t out_features, int64_t in_features, bool wave_quantisation);

// Attention of one sequence piece (context c, new n) with `heads` query heads and `kv_heads` KV heads;
// `l2_resident_tokens` of the context are read from the L2 cache (no HBM bytes).
// AttentionKernel holds the per-model constants so that hot loops (one call per batch piece) skip
// recomputing them; Seconds() is the formula itself and AttentionSeconds() calls it, so both give the
// same double bit for bit.
struct AttentionKernel {
  AttentionKernel() = default;
  AttentionKernel(const DeviceRates& rates, const KvFormat& kv, int64_t heads, int64_t kv_heads, int64_t head_dim);

  double Seconds(int64_t context_tokens, int64_t new_tokens, int64_t l2_resident_tokens) const {
    constexpr double kActivationBytes = 2;  // bf16
    const double c = context_tokens, n = new_tokens;
    const double pairs = n * c + n * (n + 1) / 2;
    const double kv_read = (c + n) * kv_elements_per_token;
    const double hbm_read = kv_read - static_cast<double>(l2_resident_tokens) * kv_elements_per_token;
    const double bytes =
        (hbm_read + n * kv_elements_per_token) * bytes_per_element + 2 * n * heads * head_dim * kActivationBytes;
    const double dot_flops = 4.0 * heads * head_dim * pairs;
    double tensor_flops = dot_flops, alu_ops = kv_read * dequant_ops_per_element;
    if (new_tokens == 1) {  // decode: dot products on CUDA cores
      tensor_flops = 0;
      alu_ops += dot_flops;
    }
    const double compute = tensor_flops / tensor_flops_per_s + alu_ops / alu_ops_per_s;
    const double memory = bytes / memory_bytes_per_s;
    return compute < memory ? memory : compute;  // std::max(compute, memory)
  }

  int64_t heads = 0;
  int64_t head_dim = 0;
  double kv_elements_per_token = 0;    // 2 x kv_heads x head_dim
  double bytes_per_element = 0;        // KvFormat::BytesPerElement()
  double dequant_ops_per_element = 0;  // KvFormat::DequantOpsPerElement()
  double tensor_flops_per_s = 0;       // fp8 or bf16 tensor-core rate
  double alu_ops_per_s = 0;
  double memory_bytes_per_s = 0;
};

double AttentionSeconds(const DeviceRates& rates, const KvFormat& kv, int64_t heads, int64_t kv_heads, int64_t head_dim,
                        int64_t context_tokens, int64_t new_tokens, int64_t l2_resident_tokens = 0);

// Ring all-reduce of `bytes` over `gpus` GPUs: 2 (g - 1) steps of latency + 2 (g - 1) / g x bytes / link.
double AllReduceSeconds(const DeviceRates& rates, double bytes, int64_t gpus);

// Merge of `segments` partial states (fp32 o and lse) per sequence and head into one bf16 output:
// memory-bound, bytes = batch x heads x (segments x (head_dim x 4 + 4) + head_dim x 2).
double SegmentMergeSeconds(const DeviceRates& rates, int64_t batch, int64_t heads, int64_t head_dim, int64_t segments);

// W / (ceil(W / S) x S); 1 when S == 0 or W == 0.
double WaveEfficiency(double work_items, int32_t num_sms);

// A kernel's kind, format and shape (see proto/calibration.proto for the meaning of each field).
struct KernelQuery {
  proto::KernelKind kind = proto::KERNEL_KIND_UNSPECIFIED;
  KvFormat format;  // element format (bits, fp8, integer, scale groups)
  int64_t batch = 1;
  int64_t query_tokens = 1;
  int64_t context_tokens = 0;
  int64_t num_segments = 1;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t page_size = 0;
  int64_t in_features = 0;
  int64_t out_features = 0;
  int64_t bytes = 0;
  int64_t num_gpus = 0;
};

// The element format a calibration dtype name and group size stand for. REQUIRES: a known dtype.
KvFormat FormatFromCalibrationDType(const std::string& dtype, int group_size, int head_dim);
KernelQuery KernelQueryFromPoint(const proto::CalibrationPoint& point);

// Roofline seconds of the kernel `q` describes (the whole batch).
double KernelRooflineSeconds(const KernelQuery& q, const DeviceRates& rates, bool wave_quantisation);

}  // namespace kvsim

#endif  // KVSIM_COST_MODELS_KERNEL_ROOFLINE_H_
