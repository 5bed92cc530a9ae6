#include "tools/cache_flags.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

// Llama-3.1-8B at bf16: 131,072 bytes per token (config/kv_format.h); a Mooncake block of 512 tokens is 64 MiB.
constexpr double kLlama8bBlockBytes = 131072.0 * 512;

std::vector<int64_t> Resolve(const std::string& values, int64_t distinct_blocks = 0) {
  auto entries = ParseCapacityList(values, "--capacity");
  EXPECT_TRUE(entries.ok()) << entries.status();
  if (!entries.ok()) return {};
  auto blocks = ResolveCapacities(*entries, {kLlama8bBlockBytes, distinct_blocks}, "--capacity");
  EXPECT_TRUE(blocks.ok()) << blocks.status();
  return blocks.ok() ? *blocks : std::vector<int64_t>{};
}

std::string ParseError(const std::string& values) {
  auto entries = ParseCapacityList(values, "--capacity");
  return entries.ok() ? "" : std::string(entries.status().message());
}

TEST(CapacityListTest, BlockCountsAndRanges) {
  EXPECT_EQ(Resolve("8000"), (std::vector<int64_t>{8000}));
  EXPECT_EQ(Resolve("1000:8000:x2,3"), (std::vector<int64_t>{1000, 2000, 4000, 8000, 3}));
}

TEST(CapacityListTest, BytesRoundDownToWholeBlocks) {
  // 40 GiB / 64 MiB = 640 exactly; 1 GB = 10^9 / 67,108,864 = 14.9 -> 14; 1.5 TB -> 22,351.7 -> 22,351.
  EXPECT_EQ(Resolve("40GiB"), (std::vector<int64_t>{640}));
  EXPECT_EQ(Resolve("1GB"), (std::vector<int64_t>{14}));
  EXPECT_EQ(Resolve("1.5TB"), (std::vector<int64_t>{22351}));
  EXPECT_EQ(Resolve("64MiB,67108864B,128mib"), (std::vector<int64_t>{1, 1, 2}));  // units in any case
  EXPECT_EQ(Resolve("1TiB"), (std::vector<int64_t>{16384}));
}

TEST(CapacityListTest, PercentOfDistinctBlocksRoundsDownToAtLeastOne) {
  EXPECT_EQ(Resolve("10%", 1234), (std::vector<int64_t>{123}));
  EXPECT_EQ(Resolve("10%,50%,100%", 1000), (std::vector<int64_t>{100, 500, 1000}));
  EXPECT_EQ(Resolve("0.01%", 50), (std::vector<int64_t>{1}));
  EXPECT_EQ(Resolve("33.3%", 7), (std::vector<int64_t>{2}));  // 2.331
}

TEST(CapacityListTest, KnowsWhichBasisItNeeds) {
  auto blocks = ParseCapacityList("8000,1:4:x2", "--capacity");
  ASSERT_TRUE(blocks.ok());
  EXPECT_FALSE(NeedsBytesPerBlock(*blocks));
  EXPECT_FALSE(NeedsDistinctBlocks(*blocks));
  auto mixed = ParseCapacityList("8000,2GiB,5%", "--capacity");
  ASSERT_TRUE(mixed.ok());
  EXPECT_TRUE(NeedsBytesPerBlock(*mixed));
  EXPECT_TRUE(NeedsDistinctBlocks(*mixed));
}

TEST(CapacityListTest, RefusalsNameTheFlagAndTheEntry) {
  EXPECT_EQ(ParseError("-5"), "--capacity: '-5': a capacity must be at least 1 block");
  EXPECT_EQ(ParseError("100,0"), "--capacity: '0': a capacity must be at least 1 block");
  EXPECT_EQ(ParseError("-1GiB"), "--capacity: '-1GiB': a capacity in bytes must be positive");
  EXPECT_EQ(ParseError("0GB"), "--capacity: '0GB': a capacity in bytes must be positive");
  EXPECT_EQ(ParseError("101%"), "--capacity: '101%': a share must be in (0%, 100%]");
  EXPECT_EQ(ParseError("0%"), "--capacity: '0%': a share must be in (0%, 100%]");
  EXPECT_EQ(ParseError("-3%"), "--capacity: '-3%': a share must be in (0%, 100%]");
  for (const std::string bad : {"40XB", "40GiBs", "4 GiB"}) {
    EXPECT_NE(ParseError(bad).find(std::string("--capacity: '") + bad + "': unknown unit"), std::string::npos)
        << ParseError(bad);
  }
  for (const std::string bad : {"lots", "10%%", "GiB", "nan%", "inf%", "1.2.3GB"}) {
    EXPECT_NE(ParseError(bad).find(std::string("--capacity: '") + bad + "': expected a block count"), std::string::npos)
        << bad << ": " << ParseError(bad);
  }
  EXPECT_NE(ParseError("1,,2").find("empty entry"), std::string::npos);
  EXPECT_NE(ParseError("8:1:x2").find("--capacity"), std::string::npos);
}

TEST(CapacityListTest, BytesBelowOneBlockAreRefused) {
  auto entries = ParseCapacityList("10MB", "--sizes");
  ASSERT_TRUE(entries.ok());
  auto blocks = ResolveCapacities(*entries, {kLlama8bBlockBytes, 0}, "--sizes");
  ASSERT_FALSE(blocks.ok());
  EXPECT_EQ(blocks.status().message(), "--sizes: '10MB' is 10000000 bytes, less than one KV block of 67108864 bytes");
}

}  // namespace
}  // namespace kvsim
