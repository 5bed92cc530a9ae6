#include "util/mix64.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

// splitmix64 from state 0 (Vigna's reference splitmix64.c) returns Mix64(k * golden) as its (k+1)-th output;
// its first four outputs are published with the reference code.
TEST(Mix64Test, MatchesReferenceSplitMix64Sequence) {
  constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;
  EXPECT_EQ(Mix64(0), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(Mix64(kGolden), 0x6e789e6aa1b965f4ULL);
  EXPECT_EQ(Mix64(2 * kGolden), 0x06c45d188009454fULL);
  EXPECT_EQ(Mix64(3 * kGolden), 0xf88bb8a8724c81ecULL);
}

}  // namespace
}  // namespace kvsim
