#include "config/model_spec.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "config/field_checks.h"
#include "util/status_macros.h"

namespace kvsim {

int DTypeBits(proto::DType dtype) {
  switch (dtype) {
    case proto::DTYPE_FP32:
      return 32;
    case proto::DTYPE_BF16:
    case proto::DTYPE_FP16:
      return 16;
    case proto::DTYPE_FP8:
    case proto::DTYPE_INT8:
      return 8;
    case proto::DTYPE_INT4:
      return 4;
    default:
      return 0;
  }
}

int64_t EstimateNumParams(const proto::ModelSpec& m) {
  const int64_t hidden = m.hidden_size();
  const int64_t head_dim = m.head_dim() > 0              ? m.head_dim()
                           : m.num_attention_heads() > 0 ? hidden / m.num_attention_heads()
                                                         : 0;
  const int64_t q = int64_t{m.num_attention_heads()} * head_dim;
  const int64_t kv = int64_t{m.num_kv_heads()} * head_dim;
  const int64_t attention = hidden * (q + 2 * kv) + q * hidden;
  const int64_t mlp = 3 * hidden * m.intermediate_size();
  const int64_t norms = 2 * hidden;
  const int64_t embeddings = 2 * int64_t{m.vocab_size()} * hidden;  // input embedding and LM head
  return m.num_layers() * (attention + mlp + norms) + embeddings + hidden;
}

int64_t WeightBytesPerGpu(const proto::ModelSpec& m) {
  const int64_t tp = m.tensor_parallel_size() > 0 ? m.tensor_parallel_size() : 1;
  return m.num_params() * DTypeBits(m.weight_dtype()) / 8 / tp;
}

int64_t KvHeadsPerGpu(const proto::ModelSpec& m) {
  const int64_t tp = std::max(1, m.tensor_parallel_size());
  return std::max<int64_t>(1, m.num_kv_heads() / tp);
}

void FillModelDefaults(proto::ModelSpec* m) {
  if (m->head_dim() == 0 && m->num_attention_heads() > 0) {
    m->set_head_dim(m->hidden_size() / m->num_attention_heads());
  }
  if (m->weight_dtype() == proto::DTYPE_UNSPECIFIED) m->set_weight_dtype(proto::DTYPE_BF16);
  if (m->kv_dtype() == proto::DTYPE_UNSPECIFIED) m->set_kv_dtype(m->weight_dtype());
  if (m->tensor_parallel_size() == 0) m->set_tensor_parallel_size(1);
  if (m->num_params() == 0) m->set_num_params(EstimateNumParams(*m));
}

void FillDeviceDefaults(proto::DeviceSpec* d) {
  if (!d->has_compute_efficiency()) d->set_compute_efficiency(0.7);
  if (!d->has_memory_efficiency()) d->set_memory_efficiency(0.8);
  if (!d->has_interconnect_efficiency()) d->set_interconnect_efficiency(0.7);
}

absl::Status ValidateModelSpec(const proto::ModelSpec& m, absl::string_view source) {
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "model.num_layers", m.num_layers(), 1, 1e4));
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "model.hidden_size", m.hidden_size(), 1, 1 << 20));
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "model.num_attention_heads", m.num_attention_heads(), 1, 1 << 16));
  KVSIM_RETURN_IF_ERROR(RequirePositive(source, "model.num_kv_heads", m.num_kv_heads()));
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "model.head_dim", m.head_dim(), 1, 1 << 16));
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "model.intermediate_size", m.intermediate_size(), 1, 1 << 24));
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "model.vocab_size", m.vocab_size(), 1, 1 << 24));
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "model.num_params", m.num_params(), 1, 1e15));
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "model.tensor_parallel_size", m.tensor_parallel_size(), 1, 4096));
  if (m.num_attention_heads() % m.num_kv_heads() != 0) {
    return FieldError(
        source, "model.num_kv_heads",
        absl::StrCat(m.num_kv_heads(), " does not divide num_attention_heads (", m.num_attention_heads(), ")"));
  }
  if (m.num_attention_heads() % m.tensor_parallel_size() != 0) {
    return FieldError(
        source, "model.tensor_parallel_size",
        absl::StrCat(m.tensor_parallel_size(), " does not divide num_attention_heads (", m.num_attention_heads(), ")"));
  }
  if (DTypeBits(m.weight_dtype()) == 0) {
    return FieldError(source, "model.weight_dtype", "must be a known DType");
  }
  if (DTypeBits(m.kv_dtype()) == 0) return FieldError(source, "model.kv_dtype", "must be a known DType");
  return absl::OkStatus();
}

absl::Status ValidateDeviceSpec(const proto::DeviceSpec& d, absl::string_view source) {
  KVSIM_RETURN_IF_ERROR(
      RequireRange(source, "device.peak_bf16_flops", d.peak_bf16_flops(), kMinFlopsPerS, kMaxFlopsPerS));
  KVSIM_RETURN_IF_ERROR(
      RequireZeroOrRange(source, "device.peak_fp32_flops", d.peak_fp32_flops(), kMinFlopsPerS, kMaxFlopsPerS));
  KVSIM_RETURN_IF_ERROR(
      RequireZeroOrRange(source, "device.peak_fp8_flops", d.peak_fp8_flops(), kMinFlopsPerS, kMaxFlopsPerS));
  KVSIM_RETURN_IF_ERROR(
      RequireZeroOrRange(source, "device.peak_int8_ops", d.peak_int8_ops(), kMinFlopsPerS, kMaxFlopsPerS));
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "device.memory_bandwidth_bytes_per_s", d.memory_bandwidth_bytes_per_s(),
                                     kMinBytesPerS, kMaxBytesPerS));
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "device.memory_bytes", d.memory_bytes(), 1 << 20, 1e15));
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "device.l2_cache_bytes", d.l2_cache_bytes(), 0, 1e12));
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "device.num_sms", d.num_sms(), 0, 1e6));
  KVSIM_RETURN_IF_ERROR(RequireZeroOrRange(source, "device.interconnect_bandwidth_bytes_per_s",
                                           d.interconnect_bandwidth_bytes_per_s(), kMinBytesPerS, kMaxBytesPerS));
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "device.pcie_bandwidth_bytes_per_s", d.pcie_bandwidth_bytes_per_s(),
                                     kMinBytesPerS, kMaxBytesPerS));
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "device.compute_efficiency", d.compute_efficiency(), kMinEfficiency, 1));
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "device.memory_efficiency", d.memory_efficiency(), kMinEfficiency, 1));
  KVSIM_RETURN_IF_ERROR(
      RequireRange(source, "device.interconnect_efficiency", d.interconnect_efficiency(), kMinEfficiency, 1));
  KVSIM_RETURN_IF_ERROR(
      RequireRange(source, "device.interconnect_latency_ns", d.interconnect_latency_ns(), 0, kMaxDurationNs));
  if (d.has_fitted() && !d.fitted().unfitted()) KVSIM_RETURN_IF_ERROR(ValidateFittedCostParams(d.fitted(), source));
  return absl::OkStatus();
}

bool HasFittedCostParams(const proto::DeviceSpec& device) {
  return device.has_fitted() && !device.fitted().unfitted() && device.fitted().has_gemm();
}

proto::CostModelKind DefaultCostModelKind(const proto::DeviceSpec& device) {
  return HasFittedCostParams(device) ? proto::COST_MODEL_KIND_FITTED : proto::COST_MODEL_KIND_ROOFLINE;
}

absl::Status ValidateFittedCostParams(const proto::FittedCostParams& f, absl::string_view source,
                                      absl::string_view prefix) {
  constexpr double kMaxFloorNs = 1e9;                 // 1 s: no kernel's or iteration's fixed cost is longer
  constexpr double kMaxSwitchElementsOrBytes = 1e15;  // a size knee or protocol switch beyond any tensor
  auto field = [&](absl::string_view kind, absl::string_view name) { return absl::StrCat(prefix, ".", kind, name); };
  auto floor = [&](absl::string_view kind, absl::string_view name, double ns) {
    return RequireRange(source, field(kind, name), ns, 0, kMaxFloorNs);
  };
  auto fraction = [&](absl::string_view kind, absl::string_view name, double value) {
    return RequireFraction(source, field(kind, name), value);
  };
  auto range = [&](absl::string_view kind, absl::string_view name, double value, double low, double high) {
    return RequireRange(source, field(kind, name), value, low, high);
  };
  if (f.has_gemm()) {
    const proto::GemmFit& g = f.gemm();
    KVSIM_RETURN_IF_ERROR(floor("gemm.", "launch_ns", g.launch_ns()));
    KVSIM_RETURN_IF_ERROR(fraction("gemm.", "compute_efficiency", g.compute_efficiency()));
    KVSIM_RETURN_IF_ERROR(fraction("gemm.", "memory_efficiency", g.memory_efficiency()));
    KVSIM_RETURN_IF_ERROR(range("gemm.", "ridge_exponent", g.ridge_exponent(), 1, 1000));
    KVSIM_RETURN_IF_ERROR(range("gemm.", "wave_weight", g.wave_weight(), 0, 1));
  }
  if (f.has_prefill_attention()) {
    const proto::PrefillAttentionFit& p = f.prefill_attention();
    KVSIM_RETURN_IF_ERROR(floor("prefill_attention.", "launch_ns", p.launch_ns()));
    KVSIM_RETURN_IF_ERROR(fraction("prefill_attention.", "compute_efficiency", p.compute_efficiency()));
    KVSIM_RETURN_IF_ERROR(range("prefill_attention.", "half_efficiency_tokens", p.half_efficiency_tokens(), 0, 1e7));
    KVSIM_RETURN_IF_ERROR(range("prefill_attention.", "causal_pair_cost", p.causal_pair_cost(), 1e-6, 100));
    KVSIM_RETURN_IF_ERROR(fraction("prefill_attention.", "memory_efficiency", p.memory_efficiency()));
    KVSIM_RETURN_IF_ERROR(range("prefill_attention.", "causal_extra_tokens", p.causal_extra_tokens(), 0, 1e7));
    KVSIM_RETURN_IF_ERROR(range("prefill_attention.", "serial_ns_per_token", p.serial_ns_per_token(), 0, 1e6));
    KVSIM_RETURN_IF_ERROR(floor("prefill_attention.", "split_ns", p.split_ns()));
    KVSIM_RETURN_IF_ERROR(range("prefill_attention.", "split_chunk_tokens", p.split_chunk_tokens(), 0, 1 << 24));
  }
  if (f.has_decode_attention()) {
    const proto::DecodeAttentionFit& d = f.decode_attention();
    KVSIM_RETURN_IF_ERROR(floor("decode_attention.", "launch_ns", d.launch_ns()));
    KVSIM_RETURN_IF_ERROR(range("decode_attention.", "per_sequence_ns", d.per_sequence_ns(), 0, 1e6));
    KVSIM_RETURN_IF_ERROR(fraction("decode_attention.", "memory_efficiency", d.memory_efficiency()));
    KVSIM_RETURN_IF_ERROR(range("decode_attention.", "wave_weight", d.wave_weight(), 0, 1));
    KVSIM_RETURN_IF_ERROR(floor("decode_attention.", "split_ns", d.split_ns()));
    KVSIM_RETURN_IF_ERROR(
        range("decode_attention.", "split_memory_efficiency", d.split_memory_efficiency(), 0, 1));  // 0: unset
    KVSIM_RETURN_IF_ERROR(range("decode_attention.", "ctas_per_sm", d.ctas_per_sm(), 0, 64));
  }
  if (f.has_elementwise()) {
    const proto::ElementwiseFit& e = f.elementwise();
    KVSIM_RETURN_IF_ERROR(floor("elementwise.", "launch_ns", e.launch_ns()));
    KVSIM_RETURN_IF_ERROR(range("elementwise.", "ns_per_token_element", e.ns_per_token_element(), 0, 1e3));
    KVSIM_RETURN_IF_ERROR(
        range("elementwise.", "ns_per_token_element_beyond_cache", e.ns_per_token_element_beyond_cache(), 0, 1e3));
    KVSIM_RETURN_IF_ERROR(range("elementwise.", "cache_resident_token_elements", e.cache_resident_token_elements(), 0,
                                kMaxSwitchElementsOrBytes));
  }
  for (int i = 0; i < f.all_reduce_size(); ++i) {
    const proto::AllReduceFit& a = f.all_reduce(i);
    const std::string kind = absl::StrCat("all_reduce[", i, "].");
    KVSIM_RETURN_IF_ERROR(range(kind, "num_gpus", a.num_gpus(), 2, 65536));
    for (int j = 0; j < i; ++j) {
      if (f.all_reduce(j).num_gpus() == a.num_gpus()) {
        return FieldError(source, field(kind, "num_gpus"),
                          absl::StrCat(a.num_gpus(), " is given twice (also all_reduce[", j, "])"));
      }
    }
    KVSIM_RETURN_IF_ERROR(floor(kind, "latency_ns", a.latency_ns()));
    KVSIM_RETURN_IF_ERROR(
        range(kind, "bus_bandwidth_bytes_per_s", a.bus_bandwidth_bytes_per_s(), kMinBytesPerS, kMaxBytesPerS));
    KVSIM_RETURN_IF_ERROR(floor(kind, "large_latency_ns", a.large_latency_ns()));
    KVSIM_RETURN_IF_ERROR(RequireZeroOrRange(source, field(kind, "large_bus_bandwidth_bytes_per_s"),
                                             a.large_bus_bandwidth_bytes_per_s(), kMinBytesPerS, kMaxBytesPerS));
    KVSIM_RETURN_IF_ERROR(range(kind, "switch_bytes", a.switch_bytes(), 0, kMaxSwitchElementsOrBytes));
    KVSIM_RETURN_IF_ERROR(range(kind, "bulk_switch_bytes", a.bulk_switch_bytes(), 0, kMaxSwitchElementsOrBytes));
    KVSIM_RETURN_IF_ERROR(floor(kind, "bulk_latency_ns", a.bulk_latency_ns()));
    KVSIM_RETURN_IF_ERROR(RequireZeroOrRange(source, field(kind, "bulk_bus_bandwidth_bytes_per_s"),
                                             a.bulk_bus_bandwidth_bytes_per_s(), kMinBytesPerS, kMaxBytesPerS));
    if (a.switch_bytes() > 0 && a.large_bus_bandwidth_bytes_per_s() <= 0) {
      return FieldError(source, field(kind, "switch_bytes"),
                        "needs a second protocol (large_bus_bandwidth_bytes_per_s > 0) to switch to");
    }
    if (a.bulk_bus_bandwidth_bytes_per_s() > 0 && a.bulk_switch_bytes() < a.switch_bytes()) {
      return FieldError(source, field(kind, "bulk_switch_bytes"),
                        absl::StrCat(a.bulk_switch_bytes(), " is below switch_bytes ", a.switch_bytes()));
    }
  }
  return RequireRange(source, absl::StrCat(prefix, ".iteration_overhead_ns"), f.iteration_overhead_ns(), 0,
                      kMaxFloorNs);
}

}  // namespace kvsim
