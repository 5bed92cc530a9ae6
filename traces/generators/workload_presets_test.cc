// Every example spec in presets/workloads/ loads, validates and generates.
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "traces/generators/workload_generator.h"
#include "util/text_proto.h"

namespace kvsim {
namespace {

class WorkloadPresetTest : public ::testing::TestWithParam<std::string> {};

TEST_P(WorkloadPresetTest, LoadsAndGeneratesInArrivalOrder) {
  proto::WorkloadSpec spec;
  const std::string path = "presets/workloads/" + GetParam() + ".textproto";
  const absl::Status parsed = ParseTextProtoFile(path, &spec);
  ASSERT_TRUE(parsed.ok()) << parsed;
  EXPECT_EQ(spec.name(), GetParam());
  absl::StatusOr<std::unique_ptr<WorkloadGenerator>> gen = WorkloadGenerator::Create(spec, spec.seed(), nullptr);
  ASSERT_TRUE(gen.ok()) << gen.status();
  // The first 5,000 requests (the whole trace would make the test slow).
  Request r;
  int64_t n = 0, previous_ns = 0;
  while (n < 5000 && (*gen)->Next(&r)) {
    ASSERT_GE(r.arrival_ns, previous_ns);
    ASSERT_EQ(static_cast<int64_t>(r.block_hashes.size()), NumBlocks(r.input_tokens, r.block_tokens));
    previous_ns = r.arrival_ns;
    ++n;
  }
  EXPECT_TRUE((*gen)->status().ok()) << (*gen)->status();
  EXPECT_EQ(n, 5000);
}

INSTANTIATE_TEST_SUITE_P(Presets, WorkloadPresetTest,
                         ::testing::Values("poisson-fixed", "chat", "agent", "diurnal-mix"));

}  // namespace
}  // namespace kvsim
