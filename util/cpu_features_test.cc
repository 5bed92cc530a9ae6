#include "util/cpu_features.h"

#include <cstdlib>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

// The decision is taken at the first call: set the variable before it (this test is the process's only
// caller), then the portable path is chosen whatever the CPU has.
TEST(CpuFeaturesTest, EnvironmentForcesPortablePath) {
  ASSERT_EQ(setenv("KVSIM_NO_AVX2", "1", /*overwrite=*/1), 0);
  EXPECT_FALSE(UseAvx2Fma());
  ASSERT_EQ(setenv("KVSIM_NO_AVX2", "0", 1), 0);
  EXPECT_FALSE(UseAvx2Fma()) << "the decision must not change within a process";
  EXPECT_FALSE(UseAvx512()) << "the AVX-512 kernels are variants of the AVX2 ones";
}

}  // namespace
}  // namespace kvsim
