#include "kernels/device.h"

#include <cstring>
#include <random>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

TEST(DeviceTest, WithoutAGpuEverythingIsUnavailable) {
  if (CudaDeviceAvailable()) GTEST_SKIP() << "a GPU is available";
  EXPECT_EQ(QueryDevice(0).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(DeviceCopyRoundTrip(std::vector<uint8_t>(64, 1)).status().code(), absl::StatusCode::kUnavailable);
}

// The copy kernel against the host copy, on random bytes into a poisoned buffer; sizes that leave a
// partial last block of threads and that need several grid-stride rounds.
TEST(DeviceTest, CopyKernelMatchesHostCopy) {
  if (!CudaDeviceAvailable()) GTEST_SKIP() << "no GPU";
  std::mt19937_64 rng(7);
  for (size_t size : {size_t{16}, size_t{16 * 1000}, size_t{64} << 20}) {
    std::vector<uint8_t> input(size);
    for (uint8_t& b : input) b = static_cast<uint8_t>(rng());
    absl::StatusOr<std::vector<uint8_t>> output = DeviceCopyRoundTrip(input);
    ASSERT_TRUE(output.ok()) << output.status();
    ASSERT_EQ(output->size(), size);
    EXPECT_EQ(std::memcmp(output->data(), input.data(), size), 0) << "size " << size;
  }
}

TEST(DeviceTest, PropertiesAreSane) {
  if (!CudaDeviceAvailable()) GTEST_SKIP() << "no GPU";
  absl::StatusOr<DeviceProperties> props = QueryDevice(0);
  ASSERT_TRUE(props.ok()) << props.status();
  EXPECT_FALSE(props->name.empty());
  EXPECT_GT(props->num_sms, 0);
  EXPECT_GT(props->memory_bytes, int64_t{1} << 30);
}

}  // namespace
}  // namespace kvsim
