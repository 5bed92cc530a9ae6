#include "sim/serving/gpu_block_directory.h"

#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

Request WithBlocks(std::vector<uint64_t> hashes) {
  Request r;
  r.input_tokens = 16 * static_cast<int64_t>(hashes.size());
  r.block_hashes = std::move(hashes);
  return r;
}

TEST(GpuBlockDirectoryTest, HandWorkedPrefixes) {
  GpuBlockDirectory directory(4);
  for (uint64_t h : {1, 2, 3}) directory.Add(h, 0);  // replica 0: 1 2 3
  for (uint64_t h : {1, 2}) directory.Add(h, 1);     // replica 1: 1 2
  for (uint64_t h : {2, 3}) directory.Add(h, 2);     // replica 2: 2 3 (not block 1)
  EXPECT_EQ(directory.Holders(2), 0b0111u);
  EXPECT_EQ(directory.num_blocks(), 3);
  const Request request = WithBlocks({1, 2, 3, 4});
  EXPECT_EQ(directory.LongestPrefixReplicas(request, 0b1111), 0b0001u);  // 0 holds 3 leading blocks
  EXPECT_EQ(directory.LongestPrefixReplicas(request, 0b1110), 0b0010u);  // without 0: 1 holds 2
  EXPECT_EQ(directory.LongestPrefixReplicas(request, 0b1100), 0b1100u);  // 2 and 3 hold none: tie
  directory.Remove(3, 0);
  EXPECT_EQ(directory.LongestPrefixReplicas(request, 0b1111), 0b0011u);  // 0 and 1 tie at 2 blocks
  directory.Remove(1, 0);
  directory.Remove(1, 1);
  EXPECT_EQ(directory.Holders(1), 0u);
  EXPECT_EQ(directory.num_blocks(), 2);  // block 1 is forgotten when no replica holds it
  EXPECT_EQ(directory.LongestPrefixReplicas(request, 0b1111), 0b1111u);
  EXPECT_EQ(directory.LongestPrefixReplicas(WithBlocks({}), 0b0110), 0b0110u);  // no blocks: all tie
}

// Against a brute force over each replica's own set, with random adds, removals and requests.
TEST(GpuBlockDirectoryTest, MatchesPerReplicaProbing) {
  constexpr int32_t kReplicas = 7;
  GpuBlockDirectory directory(kReplicas);
  std::vector<std::set<uint64_t>> held(kReplicas);
  std::mt19937_64 rng(11);
  for (int step = 0; step < 20000; ++step) {
    const int32_t r = static_cast<int32_t>(rng() % kReplicas);
    const uint64_t h = rng() % 12;
    if (held[r].count(h) != 0) {
      directory.Remove(h, r);
      held[r].erase(h);
    } else {
      directory.Add(h, r);
      held[r].insert(h);
    }
    if (step % 4 != 0) continue;
    std::vector<uint64_t> blocks(rng() % 6);
    for (uint64_t& b : blocks) b = rng() % 12;
    const uint64_t candidates = 1 + rng() % ((uint64_t{1} << kReplicas) - 1);
    int64_t longest = -1;
    uint64_t expected = 0;
    for (int32_t q = 0; q < kReplicas; ++q) {
      if ((candidates >> q & 1) == 0) continue;
      int64_t prefix = 0;
      while (prefix < static_cast<int64_t>(blocks.size()) && held[q].count(blocks[prefix]) != 0) ++prefix;
      if (prefix > longest) {
        longest = prefix;
        expected = 0;
      }
      if (prefix == longest) expected |= uint64_t{1} << q;
    }
    ASSERT_EQ(directory.LongestPrefixReplicas(WithBlocks(blocks), candidates), expected) << "step " << step;
  }
}

}  // namespace
}  // namespace kvsim
