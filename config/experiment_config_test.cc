#include "config/experiment_config.h"

#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "config/kv_format.h"
#include "config/model_spec.h"
#include "gtest/gtest.h"
#include "presets/presets.h"
#include "util/file.h"
#include "util/text_proto.h"

namespace kvsim {
namespace {

// Bytes per token at the model's own kv_dtype (no cost-model override).
double KvBytes(const proto::ModelSpec& model) {
  return KvBytesPerToken(model, *ResolveKvFormat(model, proto::CostModelConfig()));
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
  EXPECT_TRUE(WriteFileAtomically(path, text).ok());
  return path;
}

TEST(ConfigTest, DefaultIsLlama8bOnH200WithDocumentedDefaults) {
  absl::StatusOr<proto::ExperimentConfig> config = LoadExperimentConfig("");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->model().name(), "Llama-3.1-8B");
  EXPECT_EQ(config->device().name(), "H200-SXM");
  EXPECT_EQ(config->cache().block_tokens(), 16);
  EXPECT_EQ(config->cache().reuse_mode(), proto::REUSE_MODE_PREFIX);
  EXPECT_DOUBLE_EQ(config->cache().gpu_memory_utilization(), 0.9);
  EXPECT_EQ(config->scheduler().max_num_batched_tokens(), 8192);
  EXPECT_EQ(config->scheduler().chunk_tokens(), 8192);
  EXPECT_EQ(config->eviction().name(), "lru");
  EXPECT_DOUBLE_EQ(config->device().compute_efficiency(), 0.7);
  EXPECT_EQ(config->cluster().num_replicas(), 1);
  EXPECT_EQ(config->cache().gpu_evict_action(), proto::EVICT_ACTION_DROP);
  EXPECT_EQ(config->cost_model().kind(), proto::COST_MODEL_KIND_FITTED);  // the H200 preset carries fitted parameters
}

TEST(ConfigTest, ResolvedConfigReloadsUnchanged) {
  absl::StatusOr<proto::ExperimentConfig> config = LoadExperimentConfig("");
  ASSERT_TRUE(config.ok());
  const std::string path = WriteTemp("resolved.textproto", ToTextProto(*config));
  absl::StatusOr<proto::ExperimentConfig> again = LoadExperimentConfig(path);
  ASSERT_TRUE(again.ok()) << again.status();
  again->set_name(config->name());
  EXPECT_EQ(ToTextProto(*again), ToTextProto(*config));
}

// 2 (K, V) x 32 layers x 8 KV heads x 128 dims x 2 bytes = 131,072 bytes per token.
TEST(ConfigTest, KvBytesPerTokenByHand) {
  absl::StatusOr<proto::ExperimentConfig> config = LoadExperimentConfig("");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(KvBytes(config->model()), 131072);
  // Llama-3.1-70B over 4 GPUs: 2 x 80 x 8 x 128 x 2 / 4 = 81,920 bytes per token per GPU.
  proto::ModelSpec big = *LoadModelPreset("llama-3.1-70b-tp4");
  big.set_kv_dtype(proto::DTYPE_BF16);
  EXPECT_EQ(KvBytes(big), 81920);
  // FP8 KV halves it; TP 16 > 8 KV heads keeps one replicated head per GPU: 2 x 80 x 1 x 128 x 1.
  big.set_kv_dtype(proto::DTYPE_FP8);
  big.set_tensor_parallel_size(16);
  EXPECT_EQ(KvBytes(big), 20480);
}

// Llama-3.1-8B: 32 x (attention 41,943,040 + MLP 176,160,768 + norms 8,192) + embeddings and LM head
// 2 x 128,256 x 4,096 + final norm 4,096 = 8,030,261,248, the parameter count on its model card.
TEST(ConfigTest, EstimatedParamsMatchLlamaModelCard) {
  proto::ModelSpec spec = *LoadModelPreset("llama-3.1-8b");
  EXPECT_EQ(EstimateNumParams(spec), 8030261248);
}

// H200: 150,754,820,096 bytes x 0.9 - weights 16,060,522,496 - reserve (2^30 + 3,015,096,401)
// = 115,529,977,365.4 bytes; / (131,072 x 16 bytes per block) = 55,088.6 -> 55,088 blocks.
TEST(ConfigTest, GpuCapacityFromMemoryByHand) {
  absl::StatusOr<proto::ExperimentConfig> config = LoadExperimentConfig("");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->cache().activation_reserve_bytes(), 4088838225);
  absl::StatusOr<int64_t> blocks = GpuCapacityBlocks(*config, 16);
  ASSERT_TRUE(blocks.ok()) << blocks.status();
  EXPECT_EQ(*blocks, 55088);
  // Mooncake's 512-token blocks: 115,529,977,365.4 / 67,108,864 = 1,721.5 -> 1,721.
  EXPECT_EQ(*GpuCapacityBlocks(*config, 512), 1721);
}

// eviction.name is accepted in any case and resolves to the registered (lower-case) name; empty means lru.
TEST(ConfigTest, EvictionNameResolvesToTheRegisteredName) {
  proto::ExperimentConfig raw;
  raw.mutable_eviction()->set_name("S3FIFO");
  absl::StatusOr<proto::ExperimentConfig> config = ResolveExperimentConfig(raw, "t");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->eviction().name(), "s3fifo");
  config = ResolveExperimentConfig(proto::ExperimentConfig(), "t");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->eviction().name(), "lru");
}

TEST(ConfigTest, CapacityOverridesWin) {
  proto::ExperimentConfig raw;
  raw.mutable_cache()->set_gpu_capacity_tokens(1000);
  absl::StatusOr<proto::ExperimentConfig> config = ResolveExperimentConfig(raw, "t");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(*GpuCapacityBlocks(*config, 16), 62);  // floor(1000 / 16)
  raw.mutable_cache()->set_gpu_capacity_blocks(7);
  EXPECT_EQ(ResolveExperimentConfig(raw, "t").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ConfigTest, ModelTooLargeForDeviceIsFailedPrecondition) {
  proto::ExperimentConfig raw;
  raw.set_model_preset("llama-3.1-70b-tp4");
  raw.mutable_model()->set_tensor_parallel_size(1);  // 141 GB of weights on one L40S
  raw.set_device_preset("l40s");
  absl::StatusOr<proto::ExperimentConfig> config = ResolveExperimentConfig(raw, "t");
  ASSERT_TRUE(config.ok()) << config.status();
  absl::StatusOr<int64_t> blocks = GpuCapacityBlocks(*config, 16);
  EXPECT_EQ(blocks.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(blocks.status().message().find("L40S"), absl::string_view::npos);
}

// The GPU KV capacity follows the configured KV format, scales included. Default config: H200 (141 GB x
// 0.9), Llama-3.1-8B bf16 weights, activation reserve 1 GiB + memory / 50; a 16-token block of 2-bit KV
// with one 4-byte scale and zero point per 32 elements holds 2 x 32 x 8 x 128 x (0.25 + 4/32) x 16 bytes.
TEST(ConfigTest, GpuCapacityFollowsTheQuantisedKvFormat) {
  proto::ExperimentConfig raw;
  raw.mutable_cost_model()->set_kv_quant_bits(2);
  raw.mutable_cost_model()->set_kv_quant_group_size(32);
  absl::StatusOr<proto::ExperimentConfig> config = ResolveExperimentConfig(raw, "t");
  ASSERT_TRUE(config.ok()) << config.status();
  const double memory = static_cast<double>(config->device().memory_bytes());
  const double free_bytes =
      memory * 0.9 - static_cast<double>(config->model().num_params()) * 2 -
      (static_cast<double>(int64_t{1} << 30) + static_cast<double>(config->device().memory_bytes() / 50));
  const double block_bytes = 2.0 * 32 * 8 * 128 * 0.375 * 16;
  absl::StatusOr<int64_t> blocks = GpuCapacityBlocks(*config, 16);
  ASSERT_TRUE(blocks.ok()) << blocks.status();
  EXPECT_EQ(*blocks, static_cast<int64_t>(free_bytes / block_bytes));
  // bf16 blocks are 2 / 0.375 = 5.33x larger.
  absl::StatusOr<proto::ExperimentConfig> bf16 = ResolveExperimentConfig(proto::ExperimentConfig(), "t");
  ASSERT_TRUE(bf16.ok());
  EXPECT_EQ(*GpuCapacityBlocks(*bf16, 16), static_cast<int64_t>(free_bytes / (block_bytes * 2 / 0.375)));
  EXPECT_EQ(*GpuCapacityTokens(*config), *blocks * 16);
}

TEST(ConfigTest, SpecFieldsOverridePresetFields) {
  proto::ExperimentConfig raw;
  raw.mutable_model()->set_kv_dtype(proto::DTYPE_FP8);
  raw.mutable_device()->set_memory_efficiency(0.5);
  absl::StatusOr<proto::ExperimentConfig> config = ResolveExperimentConfig(raw, "t");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->model().num_layers(), 32);  // from the preset
  EXPECT_EQ(KvBytes(config->model()), 65536);
  EXPECT_DOUBLE_EQ(config->device().memory_efficiency(), 0.5);
}

TEST(ConfigTest, ImpossibleValuesNameTheFileAndField) {
  const std::string path = WriteTemp("bad.textproto", "model { num_kv_heads: 5 }\n");
  absl::StatusOr<proto::ExperimentConfig> config = LoadExperimentConfig(path);
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(config.status().message().find("bad.textproto"), absl::string_view::npos);
  EXPECT_NE(config.status().message().find("model.num_kv_heads"), absl::string_view::npos);

  // A field the file sets is named with its line and column; one the file does not set, by name only.
  const std::string lines = WriteTemp("lines.textproto", "name: \"x\"\ncache {\n  block_tokens: 16\n"
                                                         "  gpu_memory_utilization: 1.5\n}\n");
  EXPECT_EQ(LoadExperimentConfig(lines).status().message(),
            lines + ":4:3: field cache.gpu_memory_utilization: must be in (0, 1], got 1.5");
  // The KV format's refusals too (checked by config/kv_format.cc, which knows no file).
  const std::string bits = WriteTemp("bits.textproto", "name: \"x\"\ncost_model {\n    kv_quant_bits: 5\n}\n");
  EXPECT_EQ(LoadExperimentConfig(bits).status().message(),
            bits + ":3:5: field cost_model.kv_quant_bits: must be 0, 2, 3, 4, 8 or 16, got 5");
  const std::string group =
      WriteTemp("group.textproto", "cost_model { kv_quant_bits: 4\n  kv_quant_group_size: -2 }\n");
  EXPECT_EQ(LoadExperimentConfig(group).status().message(),
            group + ":2:3: field cost_model.kv_quant_group_size: must be >= 0, got -2");
  const std::string scale = WriteTemp("scale.textproto", "cost_model { kv_scale_bytes_per_group: -1 }\n");
  EXPECT_EQ(LoadExperimentConfig(scale).status().message(),
            scale + ":1:14: field cost_model.kv_scale_bytes_per_group: must be >= 0, got -1");
  const std::string unset = WriteTemp("unset.textproto", "cache { lower_tiers { kind: TIER_KIND_HOST } }\n");
  EXPECT_EQ(LoadExperimentConfig(unset).status().message(),
            unset + ": field cache.lower_tiers[0].capacity_bytes: must be > 0, got 0");

  proto::ExperimentConfig raw;
  raw.mutable_cache()->set_gpu_memory_utilization(1.5);
  absl::Status status = ResolveExperimentConfig(raw, "x").status();
  EXPECT_NE(status.message().find("cache.gpu_memory_utilization"), absl::string_view::npos);

  raw.Clear();
  raw.mutable_scheduler()->set_chunk_tokens(100000);
  status = ResolveExperimentConfig(raw, "x").status();
  EXPECT_NE(status.message().find("scheduler.chunk_tokens"), absl::string_view::npos);

  raw.Clear();
  raw.mutable_cache()->set_gpu_evict_action(proto::EVICT_ACTION_DEMOTE);
  EXPECT_EQ(ResolveExperimentConfig(raw, "x").status().code(), absl::StatusCode::kInvalidArgument);

  // Sizes whose products would overflow int64 (tokens, nanoseconds) or memory are refused, with limits.
  raw.Clear();
  raw.mutable_cache()->set_gpu_capacity_blocks(int64_t{1} << 60);
  status = ResolveExperimentConfig(raw, "x").status();
  EXPECT_NE(status.message().find("cache.gpu_capacity_blocks: must be in [0, 1099511627776]"), absl::string_view::npos)
      << status;
  raw.Clear();
  raw.mutable_cluster()->set_num_replicas(2000000000);
  status = ResolveExperimentConfig(raw, "x").status();
  EXPECT_NE(status.message().find("cluster.num_replicas: must be in [1, 4096], got 2000000000"),
            absl::string_view::npos)
      << status;
  raw.Clear();
  raw.mutable_model()->set_num_params(9e18);  // weights beyond int64 bytes
  status = ResolveExperimentConfig(raw, "x").status();
  EXPECT_NE(status.message().find("model.num_params: must be in [1, 1e+15], got 9e+18"), absl::string_view::npos)
      << status;
  raw.Clear();
  raw.mutable_device()->set_memory_bandwidth_bytes_per_s(1e-300);  // times beyond int64 ns
  status = ResolveExperimentConfig(raw, "x").status();
  EXPECT_NE(status.message().find("device.memory_bandwidth_bytes_per_s: must be in [1000000, "),
            absl::string_view::npos)
      << status;
  raw.Clear();
  raw.mutable_workload()->set_time_scale(1e300);
  status = ResolveExperimentConfig(raw, "x").status();
  EXPECT_NE(status.message().find("workload.time_scale: must be in [1e-06, 1000000]"), absl::string_view::npos)
      << status;
}

// A config's fitted cost-model parameters: each kind of bad value is refused naming the field and range.
TEST(ConfigTest, FittedParametersOutOfRangeNameTheFieldAndRange) {
  // A valid fit to start from: the a100-80gb preset's (three all-reduce fits).
  absl::StatusOr<proto::DeviceSpec> a100 = LoadDevicePreset("a100-80gb");
  ASSERT_TRUE(a100.ok()) << a100.status();
  ASSERT_EQ(a100->fitted().all_reduce_size(), 3);
  auto resolve = [&](const std::function<void(proto::FittedCostParams*)>& edit) {
    proto::ExperimentConfig raw;
    raw.set_device_preset("a100-80gb");
    *raw.mutable_device()->mutable_fitted() = a100->fitted();
    edit(raw.mutable_device()->mutable_fitted());
    return ResolveExperimentConfig(raw, "cfg.textproto").status();
  };
  EXPECT_TRUE(resolve([](proto::FittedCostParams*) {}).ok());
  absl::Status status =
      resolve([](proto::FittedCostParams* f) { f->mutable_gemm()->set_compute_efficiency(std::nan("")); });
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("cfg.textproto: field device.fitted.gemm.compute_efficiency: must be in (0, 1], "
                                  "got nan"),
            absl::string_view::npos)
      << status;
  status = resolve([](proto::FittedCostParams* f) { f->mutable_elementwise()->set_launch_ns(-5); });
  EXPECT_NE(status.message().find("field device.fitted.elementwise.launch_ns: must be in [0, 1000000000], got -5"),
            absl::string_view::npos)
      << status;
  status = resolve([](proto::FittedCostParams* f) { f->mutable_decode_attention()->set_wave_weight(1.5); });
  EXPECT_NE(status.message().find("field device.fitted.decode_attention.wave_weight: must be in [0, 1], got 1.5"),
            absl::string_view::npos)
      << status;
  status = resolve([](proto::FittedCostParams* f) { f->mutable_prefill_attention()->set_memory_efficiency(0); });
  EXPECT_NE(status.message().find("device.fitted.prefill_attention.memory_efficiency: must be in (0, 1], got 0"),
            absl::string_view::npos)
      << status;
  status = resolve([](proto::FittedCostParams* f) {
    f->mutable_elementwise()->set_ns_per_token_element(std::numeric_limits<double>::infinity());
  });
  EXPECT_NE(status.message().find("device.fitted.elementwise.ns_per_token_element: must be in [0, 1000], got inf"),
            absl::string_view::npos)
      << status;
  status = resolve([](proto::FittedCostParams* f) { f->mutable_prefill_attention()->set_split_chunk_tokens(-512); });
  EXPECT_NE(status.message().find("device.fitted.prefill_attention.split_chunk_tokens: must be in [0, 16777216], "
                                  "got -512"),
            absl::string_view::npos)
      << status;
  status = resolve([](proto::FittedCostParams* f) {
    f->mutable_prefill_attention()->set_serial_ns_per_token(std::numeric_limits<double>::quiet_NaN());
  });
  EXPECT_NE(status.message().find("device.fitted.prefill_attention.serial_ns_per_token: must be in [0, 1000000], "
                                  "got nan"),
            absl::string_view::npos)
      << status;
  status = resolve([](proto::FittedCostParams* f) { f->mutable_gemm()->set_ridge_exponent(0.5); });
  EXPECT_NE(status.message().find("device.fitted.gemm.ridge_exponent: must be in [1, 1000], got 0.5"),
            absl::string_view::npos)
      << status;
  status = resolve([](proto::FittedCostParams* f) { f->set_iteration_overhead_ns(int64_t{2000000000}); });
  EXPECT_NE(status.message().find("device.fitted.iteration_overhead_ns: must be in [0, 1000000000], got 2000000000"),
            absl::string_view::npos)
      << status;
  status = resolve([](proto::FittedCostParams* f) { f->mutable_all_reduce(1)->set_bus_bandwidth_bytes_per_s(-1); });
  EXPECT_NE(status.message().find("device.fitted.all_reduce[1].bus_bandwidth_bytes_per_s: must be in [1000000, "),
            absl::string_view::npos)
      << status;
  status = resolve([](proto::FittedCostParams* f) { *f->add_all_reduce() = f->all_reduce(0); });
  EXPECT_NE(status.message().find("device.fitted.all_reduce[3].num_gpus: 2 is given twice (also all_reduce[0])"),
            absl::string_view::npos)
      << status;
  status = resolve([](proto::FittedCostParams* f) { f->mutable_all_reduce(0)->set_bulk_switch_bytes(1000); });
  EXPECT_NE(status.message().find("device.fitted.all_reduce[0].bulk_switch_bytes: 1000 is below switch_bytes "),
            absl::string_view::npos)
      << status;
  status =
      resolve([](proto::FittedCostParams* f) { f->mutable_all_reduce(1)->set_large_bus_bandwidth_bytes_per_s(0); });
  EXPECT_NE(status.message().find("device.fitted.all_reduce[1].switch_bytes: needs a second protocol"),
            absl::string_view::npos)
      << status;
  status = resolve([](proto::FittedCostParams* f) { f->mutable_elementwise()->set_cache_resident_token_elements(-1); });
  EXPECT_NE(status.message().find("device.fitted.elementwise.cache_resident_token_elements: must be in [0, "),
            absl::string_view::npos)
      << status;
  // Parameters marked unfitted are not read, so not checked.
  EXPECT_TRUE(resolve([](proto::FittedCostParams* f) {
                f->set_unfitted(true);
                f->mutable_gemm()->set_launch_ns(-1);
              }).ok());
}

TEST(ConfigTest, EveryBundledDevicePresetPassesTheDeviceAndFitChecks) {
  for (const std::string& name : DevicePresetNames()) {
    absl::StatusOr<proto::DeviceSpec> device = LoadDevicePreset(name);
    ASSERT_TRUE(device.ok()) << name << ": " << device.status();
    FillDeviceDefaults(&*device);
    EXPECT_TRUE(ValidateDeviceSpec(*device, name).ok()) << ValidateDeviceSpec(*device, name);
    proto::ExperimentConfig raw;
    raw.set_device_preset(name);
    EXPECT_TRUE(ResolveExperimentConfig(raw, name).ok()) << ResolveExperimentConfig(raw, name).status();
  }
}

// The default cost model is the fitted one on the presets that carry fitted parameters, the roofline on the
// datasheet-only ones; a kind the config sets is kept on any device.
TEST(ConfigTest, DefaultCostModelIsFittedWhereThePresetWasFitted) {
  const std::pair<const char*, proto::CostModelKind> expected[] = {
      {"a100-80gb", proto::COST_MODEL_KIND_FITTED}, {"h100-sxm", proto::COST_MODEL_KIND_FITTED},
      {"h200", proto::COST_MODEL_KIND_FITTED},      {"l40s", proto::COST_MODEL_KIND_ROOFLINE},
      {"b200", proto::COST_MODEL_KIND_ROOFLINE}};
  for (const auto& [preset, kind] : expected) {
    SCOPED_TRACE(preset);
    proto::ExperimentConfig raw;
    raw.set_device_preset(preset);
    absl::StatusOr<proto::ExperimentConfig> config = ResolveExperimentConfig(raw, preset);
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(config->cost_model().kind(), kind);
    EXPECT_EQ(HasFittedCostParams(config->device()), kind == proto::COST_MODEL_KIND_FITTED);
    raw.mutable_cost_model()->set_kind(proto::COST_MODEL_KIND_ROOFLINE);
    EXPECT_EQ(ResolveExperimentConfig(raw, preset)->cost_model().kind(), proto::COST_MODEL_KIND_ROOFLINE);
  }
  // A config's own fitted block marked unfitted turns a fitted preset's default back to the roofline.
  proto::ExperimentConfig raw;
  raw.set_device_preset("h200");
  raw.mutable_device()->mutable_fitted()->set_unfitted(true);
  EXPECT_EQ(ResolveExperimentConfig(raw, "unfitted")->cost_model().kind(), proto::COST_MODEL_KIND_ROOFLINE);
}

// The per-request KV-format paths load with an unset kind meaning the roofline; a kind the file sets stays.
TEST(ConfigTest, LoadWithAnUnsetKindOverrideKeepsAKindTheFileSets) {
  EXPECT_EQ(LoadExperimentConfig("")->cost_model().kind(), proto::COST_MODEL_KIND_FITTED);
  EXPECT_EQ(LoadExperimentConfig("", proto::COST_MODEL_KIND_ROOFLINE)->cost_model().kind(),
            proto::COST_MODEL_KIND_ROOFLINE);
  const std::string fitted = WriteTemp("kind.textproto", "cost_model { kind: COST_MODEL_KIND_FITTED }\n");
  EXPECT_EQ(LoadExperimentConfig(fitted, proto::COST_MODEL_KIND_ROOFLINE)->cost_model().kind(),
            proto::COST_MODEL_KIND_FITTED);
}

TEST(ConfigTest, UnknownPresetIsNotFound) {
  proto::ExperimentConfig raw;
  raw.set_model_preset("llama-9");
  EXPECT_EQ(ResolveExperimentConfig(raw, "x").status().code(), absl::StatusCode::kNotFound);
  // Named with the line of the field that names it, its code kept.
  const std::string path = WriteTemp("preset.textproto", "name: \"x\"\n  device_preset: \"h900\"\n");
  const absl::Status status = LoadExperimentConfig(path).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StartsWith(status.message(), path + ":2:3: field device_preset: unknown device preset 'h900';"))
      << status;
}

TEST(ConfigTest, TiersGetDefaultsAndDemoteChain) {
  proto::ExperimentConfig raw;
  proto::TierConfig* host = raw.mutable_cache()->add_lower_tiers();
  host->set_kind(proto::TIER_KIND_HOST);
  host->set_capacity_bytes(int64_t{1} << 36);
  absl::StatusOr<proto::ExperimentConfig> config = ResolveExperimentConfig(raw, "t");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->cache().gpu_evict_action(), proto::EVICT_ACTION_DEMOTE);
  EXPECT_EQ(config->cache().lower_tiers(0).evict_action(), proto::EVICT_ACTION_DROP);
  EXPECT_DOUBLE_EQ(config->cache().lower_tiers(0).bandwidth_bytes_per_s(), 64e9);
  host->set_capacity_bytes(0);
  EXPECT_NE(ResolveExperimentConfig(raw, "t").status().message().find("lower_tiers[0].capacity_bytes"),
            absl::string_view::npos);
}

}  // namespace
}  // namespace kvsim
