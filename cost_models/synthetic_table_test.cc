#include "cost_models/synthetic_table.h"

#include <string>

#include "config/experiment_config.h"
#include "cost_models/calibration_table.h"
#include "cost_models/kernel_roofline.h"
#include "gtest/gtest.h"
#include "util/file.h"

namespace kvsim {
namespace {

proto::ExperimentConfig Config(const std::string& device) {
  proto::ExperimentConfig config;
  config.set_device_preset(device);
  absl::StatusOr<proto::ExperimentConfig> resolved = ResolveExperimentConfig(config, "test");
  EXPECT_TRUE(resolved.ok()) << resolved.status();
  return *resolved;
}

TEST(SyntheticTableTest, LabelledSyntheticAndRooflinePlusLaunch) {
  absl::StatusOr<proto::CalibrationTable> table = SynthesizeTable(Config("h200"), SynthOptions());
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_TRUE(table->header().synthetic_from_datasheet());
  EXPECT_EQ(table->header().gpu_name(), "H200-SXM");
  EXPECT_TRUE(table->header().date().empty());  // no date: the output depends only on the inputs
  // 4 KV formats x 9 batches x 14 contexts (16 ... 128K) + 10 chunks x 9 prefixes + 9 x 5 merges
  // + 6 GEMMs x 15 row counts + 10 copies (no all-reduce at TP 1).
  EXPECT_EQ(table->points_size(), 504 + 90 + 45 + 90 + 10);
  // A decode point by hand: batch 1, context 1024, bf16: reads (1024 + 1) x 2048 elements x 2 bytes,
  // writes 2048 x 2, Q and O 16,384 bytes: 4,218,880 bytes at 3.84e12 B/s = 1098.7 ns; one sequence x
  // 8 KV heads = 8 work items, split to fill the 132 SMs: 8 x 17 = 136 items = 2 waves, efficiency
  // 136 / 264; plus the 2000 ns launch floor.
  const double expected = 4218880 / 3.84e12 * 1e9 * 264 / 136 + 2000;
  bool found = false;
  for (const proto::CalibrationPoint& p : table->points()) {
    if (p.kind() == proto::KERNEL_KIND_DECODE_ATTENTION && p.dtype() == "bf16" && p.shape().batch() == 1 &&
        p.shape().context_tokens() == 1024) {
      found = true;
      EXPECT_NEAR(p.median_ns(), expected, 1e-6);
    }
  }
  EXPECT_TRUE(found);
}

TEST(SyntheticTableTest, BundledTablesAreWhatSynthProducesToday) {
  for (const std::string device : {"h200", "h100-sxm", "a100-80gb", "b200", "l40s"}) {
    const std::string path = "cost_models/tables/" + device + "_llama-3.1-8b.csv";
    absl::StatusOr<std::string> bundled = ReadFile(path);
    ASSERT_TRUE(bundled.ok()) << bundled.status();
    absl::StatusOr<proto::CalibrationTable> fresh = SynthesizeTable(Config(device), SynthOptions());
    ASSERT_TRUE(fresh.ok());
    EXPECT_EQ(*bundled, CalibrationTableToCsv(*fresh))
        << path << " is stale: regenerate it with kvsim costmodel synth " << path << " --costmodel_device=" << device;
    absl::StatusOr<proto::CalibrationTable> parsed = ReadCalibrationTable(path);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_TRUE(parsed->header().synthetic_from_datasheet()) << path;
  }
}

}  // namespace
}  // namespace kvsim
