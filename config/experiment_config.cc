#include "config/experiment_config.h"

#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "config/field_checks.h"
#include "config/kv_format.h"
#include "config/model_spec.h"
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

absl::Status ResolveTiers(const proto::DeviceSpec& device, absl::string_view source, proto::CacheConfig* cache) {
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
    KVSIM_RETURN_IF_ERROR(RequireRange(source, field + ".bandwidth_bytes_per_s", tier->bandwidth_bytes_per_s(),
                                       kMinBytesPerS, kMaxBytesPerS));
    KVSIM_RETURN_IF_ERROR(RequireRange(source, field + ".latency_ns", tier->latency_ns(), 0, kMaxDurationNs));
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

absl::Status ResolveCache(const proto::DeviceSpec& device, absl::string_view source, proto::CacheConfig* cache) {
  if (cache->block_tokens() == 0) cache->set_block_tokens(16);
  KVSIM_RETURN_IF_ERROR(RequireRange(source, "cache.block_tokens", cache->block_tokens(), 1, kMaxBlockTokens));
  if (!proto::ReuseMode_IsValid(cache->reuse_mode())) {
    return FieldError(source, "cache.reuse_mode", absl::StrCat("unknown value ", cache->reuse_mode()));
  }
  if (cache->reuse_mode() == proto::REUSE_MODE_UNSPECIFIED) {
    cache->set_reuse_mode(proto::REUSE_MODE_PREFIX);
  }
  if (cache->gpu_memory_utilization() == 0) cache->set_gpu_memory_utilization(0.9);
  KVSIM_RETURN_IF_ERROR(RequireFraction(source, "cache.gpu_memory_utilization", cache->gpu_memory_utilization()));
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
  KVSIM_RETURN_IF_ERROR(RequirePositive(source, "scheduler.max_num_batched_tokens", s->max_num_batched_tokens()));
  KVSIM_RETURN_IF_ERROR(RequirePositive(source, "scheduler.max_num_seqs", s->max_num_seqs()));
  if (s->chunking() == proto::CHUNKING_MODE_UNSPECIFIED) s->set_chunking(proto::CHUNKING_MODE_FIXED);
  if (s->chunk_tokens() == 0) s->set_chunk_tokens(s->max_num_batched_tokens());
  KVSIM_RETURN_IF_ERROR(RequirePositive(source, "scheduler.chunk_tokens", s->chunk_tokens()));
  if (s->chunk_tokens() > s->max_num_batched_tokens()) {
    return FieldError(
        source, "scheduler.chunk_tokens",
        absl::StrCat("must be <= max_num_batched_tokens (", s->max_num_batched_tokens(), "), got ", s->chunk_tokens()));
  }
  if (s->target_iteration_ns() == 0) s->set_target_iteration_ns(50'000'000);
  KVSIM_RETURN_IF_ERROR(
      RequireRange(source, "scheduler.target_iteration_ns", s->target_iteration_ns(), 1, kMaxDurationNs));
  if (s->preemption() == proto::PREEMPTION_MODE_UNSPECIFIED) {
    s->set_preemption(proto::PREEMPTION_MODE_RECOMPUTE);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<double> KvBytesPerBlock(const proto::ExperimentConfig& config, int block_tokens) {
  if (block_tokens <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("block_tokens must be > 0, got ", block_tokens));
  }
  KVSIM_ASSIGN_OR_RETURN(KvFormat kv, ResolveKvFormat(config.model(), config.cost_model()));
  return KvBytesPerToken(config.model(), kv) * block_tokens;
}

absl::StatusOr<int64_t> GpuCapacityBlocks(const proto::ExperimentConfig& config, int block_tokens) {
  if (block_tokens <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("block_tokens must be > 0, got ", block_tokens));
  }
  const proto::CacheConfig& cache = config.cache();
  if (cache.gpu_capacity_blocks() > 0) return cache.gpu_capacity_blocks();
  if (cache.gpu_capacity_tokens() > 0) return cache.gpu_capacity_tokens() / block_tokens;
  KVSIM_ASSIGN_OR_RETURN(const double block_bytes, KvBytesPerBlock(config, block_tokens));
  const double usable = static_cast<double>(config.device().memory_bytes()) * cache.gpu_memory_utilization();
  const double free_bytes = usable - static_cast<double>(WeightBytesPerGpu(config.model())) -
                            static_cast<double>(cache.activation_reserve_bytes());
  const int64_t blocks = free_bytes > 0 ? static_cast<int64_t>(free_bytes / block_bytes) : 0;
  if (blocks <= 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("no GPU memory left for the KV cache: ", config.device().name(), " has ",
                     config.device().memory_bytes(), " bytes x utilization ", cache.gpu_memory_utilization(),
                     ", weights take ", WeightBytesPerGpu(config.model()), " bytes per GPU and the activation reserve ",
                     cache.activation_reserve_bytes(), " bytes; raise tensor_parallel_size or use a larger device"));
  }
  return blocks;
}

absl::StatusOr<int64_t> GpuCapacityTokens(const proto::ExperimentConfig& config) {
  const int block_tokens = config.cache().block_tokens();
  KVSIM_ASSIGN_OR_RETURN(int64_t blocks, GpuCapacityBlocks(config, block_tokens));
  return blocks * block_tokens;
}

namespace {

// A preset's refusal (NotFound for an unknown name, or the preset file's own error) in FieldError's form for
// the field that names the preset, its code kept, so that it is named with the line that sets the field.
absl::Status PresetError(absl::string_view source, absl::string_view field, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(source, ": field ", field, ": ", status.message()));
}

// The stack preset under `config`: the preset's fields, then every field `config` sets over them (a set
// eviction name or tier list replaces the preset's whole message or list).
absl::Status ApplyStackPreset(absl::string_view source, proto::ExperimentConfig* config) {
  absl::StatusOr<proto::ExperimentConfig> preset = LoadStackPreset(config->stack_preset());
  if (!preset.ok()) return PresetError(source, "stack_preset", preset.status());
  proto::ExperimentConfig merged = *std::move(preset);
  if (!merged.stack_preset().empty()) {
    return FieldError(source, "stack_preset",
                      absl::StrCat("'", config->stack_preset(), "' sets stack_preset itself; a stack preset cannot nest"));
  }
  if (!config->eviction().name().empty()) merged.clear_eviction();
  if (config->cache().lower_tiers_size() > 0) merged.mutable_cache()->clear_lower_tiers();
  merged.MergeFrom(*config);
  *config = std::move(merged);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<proto::ExperimentConfig> ResolveExperimentConfig(proto::ExperimentConfig config,
                                                                absl::string_view source) {
  if (!config.stack_preset().empty()) KVSIM_RETURN_IF_ERROR(ApplyStackPreset(source, &config));
  KVSIM_RETURN_IF_ERROR(CheckDefinedEnums(config, source));
  const std::string model_preset = config.model_preset().empty() ? kDefaultModelPreset : config.model_preset();
  absl::StatusOr<proto::ModelSpec> model_or = LoadModelPreset(model_preset);
  if (!model_or.ok()) return PresetError(source, "model_preset", model_or.status());
  proto::ModelSpec model = *std::move(model_or);
  model.MergeFrom(config.model());
  FillModelDefaults(&model);
  KVSIM_RETURN_IF_ERROR(ValidateModelSpec(model, source));
  config.set_model_preset(model_preset);
  *config.mutable_model() = model;

  const std::string device_preset = config.device_preset().empty() ? kDefaultDevicePreset : config.device_preset();
  absl::StatusOr<proto::DeviceSpec> device_or = LoadDevicePreset(device_preset);
  if (!device_or.ok()) return PresetError(source, "device_preset", device_or.status());
  proto::DeviceSpec device = *std::move(device_or);
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
  // Policy names are registered in lower case and accepted in any case; the resolved config says the registered one.
  config.mutable_eviction()->set_name(
      config.eviction().name().empty() ? "lru" : absl::AsciiStrToLower(config.eviction().name()));
  proto::CostModelConfig* cost = config.mutable_cost_model();
  if (cost->kind() == proto::COST_MODEL_KIND_UNSPECIFIED) cost->set_kind(DefaultCostModelKind(device));
  if (cost->kind() == proto::COST_MODEL_KIND_TABLE && cost->table_path().empty()) {
    return FieldError(source, "cost_model.table_path", "required for COST_MODEL_KIND_TABLE");
  }
  KVSIM_RETURN_IF_ERROR(
      RequireRange(source, "cost_model.iteration_overhead_ns", cost->iteration_overhead_ns(), 0, kMaxDurationNs));
  // The KV format sizes the cache: an undescribable one is refused here, not at the first capacity query
  // ("SOURCE: field FIELD: ...", as FieldError).
  if (absl::Status kv = ResolveKvFormat(config.model(), *cost).status(); !kv.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", kv.message()));
  }
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

absl::StatusOr<proto::ExperimentConfig> LoadExperimentConfig(const std::string& path,
                                                             proto::CostModelKind unset_cost_model_kind) {
  proto::ExperimentConfig config;
  if (!path.empty()) KVSIM_RETURN_IF_ERROR(ParseTextProtoFile(path, &config));
  if (config.cost_model().kind() == proto::COST_MODEL_KIND_UNSPECIFIED) {
    config.mutable_cost_model()->set_kind(unset_cost_model_kind);
  }
  absl::StatusOr<proto::ExperimentConfig> resolved =
      ResolveExperimentConfig(std::move(config), path.empty() ? "default" : path);
  // A refused field the file sets is named with its line and column (the file is read again for them).
  if (!resolved.ok() && !path.empty()) {
    return WithFieldPositionFromFile(resolved.status(), proto::ExperimentConfig::default_instance());
  }
  return resolved;
}

}  // namespace kvsim
