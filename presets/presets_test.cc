#include "presets/presets.h"

#include <string>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

TEST(PresetsTest, EveryPresetParses) {
  EXPECT_GE(ModelPresetNames().size(), 6u);
  EXPECT_GE(DevicePresetNames().size(), 5u);
  for (const std::string& name : ModelPresetNames()) {
    absl::StatusOr<proto::ModelSpec> spec = LoadModelPreset(name);
    ASSERT_TRUE(spec.ok()) << name << ": " << spec.status();
    EXPECT_FALSE(spec->source().empty()) << name;
  }
  for (const std::string& name : DevicePresetNames()) {
    absl::StatusOr<proto::DeviceSpec> spec = LoadDevicePreset(name);
    ASSERT_TRUE(spec.ok()) << name << ": " << spec.status();
    EXPECT_FALSE(spec->source().empty()) << name;
  }
}

// Figures checked against the model cards' config.json and the datasheets.
TEST(PresetsTest, Llama8bAndH200MatchTheirSources) {
  absl::StatusOr<proto::ModelSpec> llama = LoadModelPreset("llama-3.1-8b");
  ASSERT_TRUE(llama.ok()) << llama.status();
  EXPECT_EQ(llama->num_layers(), 32);
  EXPECT_EQ(llama->num_kv_heads(), 8);
  EXPECT_EQ(llama->head_dim(), 128);
  absl::StatusOr<proto::DeviceSpec> h200 = LoadDevicePreset("h200");
  ASSERT_TRUE(h200.ok()) << h200.status();
  EXPECT_DOUBLE_EQ(h200->memory_bandwidth_bytes_per_s(), 4.8e12);
  EXPECT_EQ(h200->num_sms(), 132);
}

TEST(PresetsTest, UnknownNameListsTheKnownOnes) {
  absl::StatusOr<proto::DeviceSpec> spec = LoadDevicePreset("h300");
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(spec.status().message().find("h300"), absl::string_view::npos);
  EXPECT_NE(spec.status().message().find("h100-sxm"), absl::string_view::npos);
}

TEST(PresetsTest, PathsAreReadAsFiles) {
  absl::StatusOr<proto::ModelSpec> spec = LoadModelPreset("/no/such/model.textproto");
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace kvsim
