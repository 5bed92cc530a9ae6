#include "cost_models/kernel_roofline.h"

#include "gtest/gtest.h"
#include "presets/presets.h"

namespace kvsim {
namespace {

DeviceRates H200() {
  proto::DeviceSpec d = *LoadDevicePreset("h200");
  d.set_compute_efficiency(0.7);
  d.set_memory_efficiency(0.8);
  d.set_interconnect_efficiency(0.7);
  return MakeDeviceRates(d);
}

TEST(KernelRooflineTest, WaveEfficiencyByHand) {
  EXPECT_DOUBLE_EQ(WaveEfficiency(132, 132), 1.0);
  // 133 items on 132 SMs: 2 waves, 133 / 264 busy.
  EXPECT_DOUBLE_EQ(WaveEfficiency(133, 132), 133.0 / 264);
  EXPECT_DOUBLE_EQ(WaveEfficiency(66, 132), 0.5);
  EXPECT_DOUBLE_EQ(WaveEfficiency(66, 0), 1.0);
}

TEST(KernelRooflineTest, GemmWaveQuantisationSlowsPartialWaves) {
  const DeviceRates r = H200();
  // 8192 x 8192 x 8192 bf16 GEMM: 64 x 64 = 4096 tiles of 128 x 128 on 132 SMs = 31.03 waves -> 32
  // waves; efficiency 4096 / 4224. Compute 2 x 8192^3 / 692.65e12 = 1.5874 ms.
  const double ideal = 2.0 * 8192 * 8192 * 8192 / (989.5e12 * 0.7);
  EXPECT_NEAR(GemmSeconds(r, r.bf16_flops_per_s, 2, 8192, 8192, 8192, false), ideal, 1e-12);
  EXPECT_NEAR(GemmSeconds(r, r.bf16_flops_per_s, 2, 8192, 8192, 8192, true), ideal * 4224 / 4096, 1e-12);
}

TEST(KernelRooflineTest, MergeAndCopyAndAllReduceByHand) {
  const DeviceRates r = H200();
  // 64 sequences x 32 heads x (4 segments x (128 x 4 + 4) + 128 x 2) bytes = 4,751,360 B at 3.84e12.
  EXPECT_NEAR(SegmentMergeSeconds(r, 64, 32, 128, 4), 4751360 / 3.84e12, 1e-15);
  KernelQuery copy;
  copy.kind = proto::KERNEL_KIND_HOST_DEVICE_COPY;
  copy.bytes = 64'000'000;
  EXPECT_NEAR(KernelRooflineSeconds(copy, r, true), 1e-3, 1e-15);  // 64 MB at 64 GB/s
  // 8-GPU ring: 2 x 7 / 8 x 1 MB / (450e9 x 0.7).
  EXPECT_NEAR(AllReduceSeconds(r, 1e6, 8), 1.75e6 / 315e9, 1e-15);
}

}  // namespace
}  // namespace kvsim
