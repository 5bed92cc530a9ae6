#include "cost_models/peak_memory.h"

#include "config/experiment_config.h"
#include "gtest/gtest.h"

namespace kvsim {
namespace {

proto::ExperimentConfig Config() {
  absl::StatusOr<proto::ExperimentConfig> config = ResolveExperimentConfig(proto::ExperimentConfig(), "test");
  EXPECT_TRUE(config.ok()) << config.status();
  return *config;
}

TEST(PeakMemoryTest, Llama8bOnH200ByHand) {
  absl::StatusOr<PeakMemory> peak = EstimatePeakMemory(Config(), 100000);
  ASSERT_TRUE(peak.ok()) << peak.status();
  EXPECT_EQ(peak->weights_bytes, 8030261248LL * 2);
  EXPECT_EQ(peak->kv_bytes, 100000LL * 131072);  // 2 x 32 x 8 x 128 x 2 bytes per token
  // T = 8192: residual 2 x 4096 + max(QKV 6144 + attention out 4096, MLP 3 x 14336 = 43008) = 51,200
  // elements per token, 2 bytes each.
  EXPECT_EQ(peak->activation_bytes, 2LL * 8192 * 51200);
  // Logits 256 x 128256 x 4 + partials 256 x 32 heads x 16 splits x (128 x 4 + 4) + 256 MiB.
  EXPECT_EQ(peak->workspace_bytes, 256LL * 128256 * 4 + 256LL * 32 * 16 * 516 + (256LL << 20));
  EXPECT_EQ(peak->total_bytes, peak->weights_bytes + peak->kv_bytes + peak->activation_bytes + peak->workspace_bytes);
}

TEST(PeakMemoryTest, CompressedKvCountsItsScales) {
  proto::ExperimentConfig config = Config();
  config.mutable_cost_model()->set_kv_quant_bits(4);
  absl::StatusOr<PeakMemory> peak = EstimatePeakMemory(config, 100000);
  ASSERT_TRUE(peak.ok());
  // 2 x 32 x 8 x 128 elements x (0.5 + 4 / 128) bytes = 34,816 bytes per token.
  EXPECT_EQ(peak->kv_bytes, 100000LL * 34816);
  EXPECT_EQ(peak->kv_format, "int4-g128");
  // More tokens fit than with bf16, by 131072 / 34816 = 3.76x of the free memory.
  const int64_t int4 = *GpuCapacityTokens(config);
  const int64_t bf16 = *GpuCapacityTokens(Config());
  EXPECT_NEAR(static_cast<double>(int4) / bf16, 131072.0 / 34816, 0.001);
}

TEST(PeakMemoryTest, RejectsNegativeTokens) {
  EXPECT_EQ(EstimatePeakMemory(Config(), -1).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kvsim
