#include "sim/config.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "presets/presets.h"
#include "util/status_macros.h"
#include "util/text_proto.h"

namespace kvsim {
namespace {

constexpr char kDefaultModelPreset[] = "llama-3.1-8b";
constexpr char kDefaultDevicePreset[] = "h200";
constexpr int64_t kGiB = int64_t{1} << 30;
// Upper limits of sizes given directly: far beyond any deployment, low enough that products of them
// (tokens = blocks x block size, per-replica state) stay within int64 and memory.
constexpr double kMaxBlockTokens = 1 << 20;
constexpr double kMaxCapacityBlocks = static_cast<double>(int64_t{1} << 40);
constexpr double kMaxReplicas = 4096;

absl::Status FieldError(absl::string_view source, absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": field ", field, ": ", what));
}

absl::Status RequirePositive(absl::string_view source, absl::string_view field, double value) {
  if (!(value > 0) || !std::isfinite(value)) {
    return FieldError(source, field, absl::StrCat("must be > 0, got ", value));
  }
  return absl::OkStatus();
}

absl::Status RequireNonNegative(absl::string_view source, absl::string_view field, double value) {
  if (!(value >= 0) || !std::isfinite(value)) {
    return FieldError(source, field, absl::StrCat("must be >= 0, got ", value));
  }
  return absl::OkStatus();
}

// value in [low, high]: the limits keep derived quantities (tokens, nanoseconds) within int64.
absl::Status RequireRange(absl::string_view source, absl::string_view field, double value, double low, double high) {
  if (!(value >= low && value <= high)) {
    return FieldError(source, field, absl::StrFormat("must be in [%.15g, %.15g], got %.15g", low, high, value));
  }
  return absl::OkStatus();
}

absl::Status RequireFraction(absl::string_view source, absl::string_view field, double value) {
  if (!(value > 0 && value <= 1)) {
    return FieldError(source, field, absl::StrCat("must be in (0, 1], got ", value));
  }
  return absl::OkStatus();
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

absl::Status ResolveTiers(const proto::DeviceSpec& device, absl::string_view source,
                          proto::CacheConfig* cache) {
  for (int i = 0; i < cache->lower_tiers_size(); ++i) {
    proto::TierConfig* tier = cache->mutable_lower_tiers(i);
    const std::string field = absl::StrCat("cache.lower_tiers[", i, "]");
    if (tier->kind() == proto::TIER_KIND_UNSPECIFIED) {
      return FieldError(source, field + ".kind", "must be TIER_KIND_HOST or TIER_KIND_REMOTE");
    }
    KVSIM_RETURN_IF_ERROR(RequirePositive(source, field + ".capacity_bytes", tier->capacity_bytes()));
    if (tier->bandwidth_bytes_per_s() == 0) {
      tier->set_bandwidth_bytes_per_s(device.pcie_bandwidth_bytes_per_s());
    }
    KVSIM_RETURN_IF_ERROR(
        RequirePositive(source, field + ".bandwidth_bytes_per_s", tier->bandwidth_bytes_per_s()));
    KVSIM_RETURN_IF_ERROR(RequireNonNegative(source, field + ".latency_ns", tier->latency_ns()));
    const bool last = i + 1 == cache->lower_tiers_size();
    if (tier->evict_action() == proto::EVICT_ACTION_UNSPECIFIED) {
      tier->set_evict_action(last ? proto::EVICT_ACTION_DROP : proto::EVICT_ACTION_DEMOTE);
    } else if (last && tier->evict_action() == proto::EVICT_ACTION_DEMOTE) {
      return FieldError(source, field + ".evict_action", "the lowest tier cannot demote");
    }
  }
  const bool has_lower = cache->lower_tiers_size() > 0;
  if (cache->gpu_evict_action() == proto::EVICT_ACTION_UNSPECIFIED) {
    cache->set_gpu_evict_action(has_lower ? proto::EVICT_ACTION_DEMOTE : proto::EVICT_ACTION_DROP);
  } else if (!has_lower && cache->gpu_evict_action() == proto::EVICT_ACTION_DEMOTE) {
    return FieldError(source, "cache.gpu_evict_action", "EVICT_ACTION_DEMOTE needs a lower tier");
  }
  return absl::OkStatus();
}

absl::Status ResolveCache(const proto::DeviceSpec& device, absl::string_view source,
                          proto::CacheConfig* cache) {
  if (cache->block_tokens() == 0) cache->set_block_tokens(16);
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "cache.block_tokens", cache->block_tokens(), 1, kMaxBlockTokens));
  if (!proto::ReuseMode_IsValid(cache->reuse_mode())) {
    return FieldError(source, "cache.reuse_mode", absl::StrCat("unknown value ", cache->reuse_mode()));
  }
  if (cache->reuse_mode() == proto::REUSE_MODE_UNSPECIFIED) {
    cache->set_reuse_mode(proto::REUSE_MODE_PREFIX);
  }
  if (cache->gpu_memory_utilization() == 0) cache->set_gpu_memory_utilization(0.9);
  KVSIM_RETURN_IF_ERROR(
      RequireFraction(source, "cache.gpu_memory_utilization", cache->gpu_memory_utilization()));
  if (cache->activation_reserve_bytes() == 0) {
    cache->set_activation_reserve_bytes(kGiB + device.memory_bytes() / 50);
  }
  KVSIM_RETURN_IF_ERROR(
      RequireNonNegative(source, "cache.activation_reserve_bytes", cache->activation_reserve_bytes()));
  KVSIM_RETURN_IF_ERROR(
      RequireRange(source, "cache.gpu_capacity_blocks", cache->gpu_capacity_blocks(), 0, kMaxCapacityBlocks));
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "cache.gpu_capacity_tokens", cache->gpu_capacity_tokens(), 0,
                                     kMaxCapacityBlocks * static_cast<double>(cache->block_tokens())));
  if (cache->gpu_capacity_blocks() > 0 && cache->gpu_capacity_tokens() > 0) {
    return FieldError(source, "cache.gpu_capacity_tokens",
                      "set at most one of gpu_capacity_blocks and gpu_capacity_tokens");
  }
  if (cache->restore_rule() == proto::RESTORE_RULE_UNSPECIFIED) {
    cache->set_restore_rule(proto::RESTORE_RULE_CHEAPER);
  }
  return ResolveTiers(device, source, cache);
}

absl::Status ResolveScheduler(absl::string_view source, proto::SchedulerConfig* s) {
  if (s->max_num_batched_tokens() == 0) s->set_max_num_batched_tokens(8192);
  if (s->max_num_seqs() == 0) s->set_max_num_seqs(256);
  KVSIM_RETURN_IF_ERROR(
      RequirePositive(source, "scheduler.max_num_batched_tokens", s->max_num_batched_tokens()));
  KVSIM_RETURN_IF_ERROR(RequirePositive(source, "scheduler.max_num_seqs", s->max_num_seqs()));
  if (s->chunking() == proto::CHUNKING_MODE_UNSPECIFIED) s->set_chunking(proto::CHUNKING_MODE_FIXED);
  if (s->chunk_tokens() == 0) s->set_chunk_tokens(s->max_num_batched_tokens());
  KVSIM_RETURN_IF_ERROR(RequirePositive(source, "scheduler.chunk_tokens", s->chunk_tokens()));
  if (s->chunk_tokens() > s->max_num_batched_tokens()) {
    return FieldError(source, "scheduler.chunk_tokens",
                      absl::StrCat("must be <= max_num_batched_tokens (", s->max_num_batched_tokens(),
                                   "), got ", s->chunk_tokens()));
  }
  if (s->target_iteration_ns() == 0) s->set_target_iteration_ns(50'000'000);
  KVSIM_RETURN_IF_ERROR(
      RequirePositive(source, "scheduler.target_iteration_ns", s->target_iteration_ns()));
  if (s->preemption() == proto::PREEMPTION_MODE_UNSPECIFIED) {
    s->set_preemption(proto::PREEMPTION_MODE_RECOMPUTE);
  }
  return absl::OkStatus();
}

}  // namespace

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
  const int64_t head_dim = m.head_dim() > 0 ? m.head_dim()
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

absl::Status ValidateModelSpec(const proto::ModelSpec& m, absl::string_view source) {
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "model.num_layers", m.num_layers(), 1, 1e4));
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "model.hidden_size", m.hidden_size(), 1, 1 << 20));
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "model.num_attention_heads", m.num_attention_heads(), 1, 1 << 16));
  KVSIM_RETURN_IF_ERROR(RequirePositive(source, "model.num_kv_heads", m.num_kv_heads()));
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "model.head_dim", m.head_dim(), 1, 1 << 16));
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "model.intermediate_size", m.intermediate_size(), 1, 1 << 24));
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "model.vocab_size", m.vocab_size(), 1, 1 << 24));
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "model.num_params", m.num_params(), 1, 1e15));
  KVSIM_RETURN_IF_ERROR(
      RequireRange(source, "model.tensor_parallel_size", m.tensor_parallel_size(), 1, 4096));
  if (m.num_attention_heads() % m.num_kv_heads() != 0) {
    return FieldError(source, "model.num_kv_heads",
                      absl::StrCat(m.num_kv_heads(), " does not divide num_attention_heads (",
                                   m.num_attention_heads(), ")"));
  }
  if (m.num_attention_heads() % m.tensor_parallel_size() != 0) {
    return FieldError(source, "model.tensor_parallel_size",
                      absl::StrCat(m.tensor_parallel_size(), " does not divide num_attention_heads (",
                                   m.num_attention_heads(), ")"));
  }
  if (DTypeBits(m.weight_dtype()) == 0) {
    return FieldError(source, "model.weight_dtype", "must be a known DType");
  }
  if (DTypeBits(m.kv_dtype()) == 0) return FieldError(source, "model.kv_dtype", "must be a known DType");
  return absl::OkStatus();
}

absl::Status ValidateDeviceSpec(const proto::DeviceSpec& d, absl::string_view source) {
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "device.peak_bf16_flops", d.peak_bf16_flops(), 1e9, 1e18));
  KVSIM_RETURN_IF_ERROR(RequireNonNegative(source, "device.peak_fp32_flops", d.peak_fp32_flops()));
  KVSIM_RETURN_IF_ERROR(RequireNonNegative(source, "device.peak_fp8_flops", d.peak_fp8_flops()));
  KVSIM_RETURN_IF_ERROR(RequireNonNegative(source, "device.peak_int8_ops", d.peak_int8_ops()));
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "device.memory_bandwidth_bytes_per_s",
                                     d.memory_bandwidth_bytes_per_s(), 1e6, 1e16));
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "device.memory_bytes", d.memory_bytes(), 1 << 20, 1e15));
  KVSIM_RETURN_IF_ERROR(RequireNonNegative(source, "device.l2_cache_bytes", d.l2_cache_bytes()));
  KVSIM_RETURN_IF_ERROR(RequireNonNegative(source, "device.num_sms", d.num_sms()));
  KVSIM_RETURN_IF_ERROR(RequireNonNegative(source, "device.interconnect_bandwidth_bytes_per_s",
                                           d.interconnect_bandwidth_bytes_per_s()));
  KVSIM_RETURN_IF_ERROR(
      RequireRange(source, "device.pcie_bandwidth_bytes_per_s", d.pcie_bandwidth_bytes_per_s(), 1e6, 1e15));
  KVSIM_RETURN_IF_ERROR(RequireFraction(source, "device.compute_efficiency", d.compute_efficiency()));
  KVSIM_RETURN_IF_ERROR(RequireFraction(source, "device.memory_efficiency", d.memory_efficiency()));
  KVSIM_RETURN_IF_ERROR(
      RequireFraction(source, "device.interconnect_efficiency", d.interconnect_efficiency()));
  KVSIM_RETURN_IF_ERROR(
      RequireNonNegative(source, "device.interconnect_latency_ns", d.interconnect_latency_ns()));
  return absl::OkStatus();
}

int64_t KvBytesPerToken(const proto::ModelSpec& m) {
  const int64_t bits = 2 * int64_t{m.num_layers()} * m.num_kv_heads() * m.head_dim() *
                       DTypeBits(m.kv_dtype());
  // KV heads are split across the tensor-parallel group; when TP exceeds the KV heads, each GPU keeps
  // one replicated head (as vLLM does).
  const int64_t tp = m.tensor_parallel_size() > 0 ? m.tensor_parallel_size() : 1;
  const int64_t divisor = tp <= m.num_kv_heads() ? tp : m.num_kv_heads();
  return bits / 8 / divisor;
}

int64_t WeightBytesPerGpu(const proto::ModelSpec& m) {
  const int64_t tp = m.tensor_parallel_size() > 0 ? m.tensor_parallel_size() : 1;
  return m.num_params() * DTypeBits(m.weight_dtype()) / 8 / tp;
}

absl::StatusOr<int64_t> GpuCapacityBlocks(const proto::ExperimentConfig& config, int block_tokens) {
  if (block_tokens <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("block_tokens must be > 0, got ", block_tokens));
  }
  const proto::CacheConfig& cache = config.cache();
  if (cache.gpu_capacity_blocks() > 0) return cache.gpu_capacity_blocks();
  if (cache.gpu_capacity_tokens() > 0) return cache.gpu_capacity_tokens() / block_tokens;
  const double usable = static_cast<double>(config.device().memory_bytes()) *
                        cache.gpu_memory_utilization();
  const double free_bytes = usable - static_cast<double>(WeightBytesPerGpu(config.model())) -
                            static_cast<double>(cache.activation_reserve_bytes());
  const int64_t block_bytes = KvBytesPerToken(config.model()) * block_tokens;
  const int64_t blocks = free_bytes > 0 ? static_cast<int64_t>(free_bytes / block_bytes) : 0;
  if (blocks <= 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no GPU memory left for the KV cache: ", config.device().name(), " has ",
        config.device().memory_bytes(), " bytes x utilization ", cache.gpu_memory_utilization(),
        ", weights take ", WeightBytesPerGpu(config.model()), " bytes per GPU and the activation reserve ",
        cache.activation_reserve_bytes(), " bytes; raise tensor_parallel_size or use a larger device"));
  }
  return blocks;
}

absl::StatusOr<proto::ExperimentConfig> ResolveExperimentConfig(proto::ExperimentConfig config,
                                                                absl::string_view source) {
  const std::string model_preset =
      config.model_preset().empty() ? kDefaultModelPreset : config.model_preset();
  KVSIM_ASSIGN_OR_RETURN(proto::ModelSpec model, LoadModelPreset(model_preset));
  model.MergeFrom(config.model());
  FillModelDefaults(&model);
  KVSIM_RETURN_IF_ERROR(ValidateModelSpec(model, source));
  config.set_model_preset(model_preset);
  *config.mutable_model() = model;

  const std::string device_preset =
      config.device_preset().empty() ? kDefaultDevicePreset : config.device_preset();
  KVSIM_ASSIGN_OR_RETURN(proto::DeviceSpec device, LoadDevicePreset(device_preset));
  // A config's fitted cost-model parameters replace the preset's whole (merging would append their
  // repeated fields, and a resolved config would not reload unchanged).
  if (config.device().has_fitted()) device.clear_fitted();
  device.MergeFrom(config.device());
  FillDeviceDefaults(&device);
  KVSIM_RETURN_IF_ERROR(ValidateDeviceSpec(device, source));
  config.set_device_preset(device_preset);
  *config.mutable_device() = device;

  KVSIM_RETURN_IF_ERROR(ResolveCache(device, source, config.mutable_cache()));
  KVSIM_RETURN_IF_ERROR(ResolveScheduler(source, config.mutable_scheduler()));
  if (config.eviction().name().empty()) config.mutable_eviction()->set_name("lru");
  proto::CostModelConfig* cost = config.mutable_cost_model();
  if (cost->kind() == proto::COST_MODEL_KIND_UNSPECIFIED) cost->set_kind(proto::COST_MODEL_KIND_ROOFLINE);
  if (cost->kind() == proto::COST_MODEL_KIND_TABLE && cost->table_path().empty()) {
    return FieldError(source, "cost_model.table_path", "required for COST_MODEL_KIND_TABLE");
  }
  KVSIM_RETURN_IF_ERROR(
      RequireNonNegative(source, "cost_model.iteration_overhead_ns", cost->iteration_overhead_ns()));
  proto::WorkloadConfig* workload = config.mutable_workload();
  if (workload->time_scale() == 0) workload->set_time_scale(1.0);
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "workload.time_scale", workload->time_scale(), 1e-6, 1e6));
  KVSIM_RETURN_IF_ERROR(RequireNonNegative(source, "workload.max_requests", workload->max_requests()));
  proto::ClusterConfig* cluster = config.mutable_cluster();
  if (cluster->num_replicas() == 0) cluster->set_num_replicas(1);
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "cluster.num_replicas", cluster->num_replicas(), 1, kMaxReplicas));
  if (!proto::RouterKind_IsValid(cluster->router())) {
    return FieldError(source, "cluster.router", absl::StrCat("unknown value ", cluster->router()));
  }
  if (cluster->router() == proto::ROUTER_KIND_UNSPECIFIED) {
    cluster->set_router(proto::ROUTER_KIND_ROUND_ROBIN);
  }
  if (cluster->load_cap() == 0) cluster->set_load_cap(2.0);
  if (!(cluster->load_cap() >= 1.0)) {
    return FieldError(source, "cluster.load_cap", absl::StrCat("must be >= 1, got ", cluster->load_cap()));
  }
  KVSIM_RETURN_IF_ERROR(RequireNonNegative(source, "slo.ttft_ms", config.slo().ttft_ms()));
  KVSIM_RETURN_IF_ERROR(RequireNonNegative(source, "slo.tpot_ms", config.slo().tpot_ms()));
  if (config.name().empty()) config.set_name(std::string(source));
  return config;
}

absl::StatusOr<proto::ExperimentConfig> LoadExperimentConfig(const std::string& path) {
  proto::ExperimentConfig config;
  if (!path.empty()) KVSIM_RETURN_IF_ERROR(ParseTextProtoFile(path, &config));
  return ResolveExperimentConfig(std::move(config), path.empty() ? "default" : path);
}

}  // namespace kvsim
