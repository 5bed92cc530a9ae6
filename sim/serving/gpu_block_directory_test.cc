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

// Registers block `hash` for `replica` (entry 0: unused here) and adds it to the replica's GPU.
void Hold(GpuBlockDirectory* directory, uint64_t hash, int32_t replica) {
  directory->Register(hash, replica, /*entry=*/0, /*on_gpu=*/false);
  directory->Add(hash, replica);
}

TEST(GpuBlockDirectoryTest, HandWorkedPrefixes) {
  GpuBlockDirectory directory(4);
  for (uint64_t h : {1, 2, 3}) Hold(&directory, h, 0);  // replica 0: 1 2 3
  for (uint64_t h : {1, 2}) Hold(&directory, h, 1);     // replica 1: 1 2
  for (uint64_t h : {2, 3}) Hold(&directory, h, 2);     // replica 2: 2 3 (not block 1)
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
  EXPECT_EQ(directory.num_blocks(), 3);  // still registered (in a lower tier, say)
  directory.Unregister(1, 0);
  directory.Unregister(1, 1);
  EXPECT_EQ(directory.num_blocks(), 2);  // block 1 is forgotten when no replica has an entry
  EXPECT_EQ(directory.LongestPrefixReplicas(request, 0b1111), 0b1111u);
  EXPECT_EQ(directory.LongestPrefixReplicas(WithBlocks({}), 0b0110), 0b0110u);  // no blocks: all tie
}

TEST(GpuBlockDirectoryTest, FirstRegistrantOwnsTheEntry) {
  GpuBlockDirectory directory(3);
  EXPECT_EQ(directory.Entry(5, 0), GpuBlockDirectory::kNoEntry);
  EXPECT_TRUE(directory.Register(5, 1, /*entry=*/40, /*on_gpu=*/true));    // replica 1 owns block 5
  EXPECT_FALSE(directory.Register(5, 0, /*entry=*/7, /*on_gpu=*/false));   // replica 0 keeps its own
  EXPECT_EQ(directory.Entry(5, 1), 40);
  EXPECT_EQ(directory.Entry(5, 0), GpuBlockDirectory::kElsewhere);
  EXPECT_EQ(directory.Entry(5, 2), GpuBlockDirectory::kNoEntry);
  EXPECT_EQ(directory.Holders(5), 0b010u);  // only replica 1 registered it on its GPU
  directory.Remove(5, 1);
  EXPECT_TRUE(directory.Unregister(5, 1));   // the owner leaves: no owner now
  EXPECT_EQ(directory.Entry(5, 0), GpuBlockDirectory::kElsewhere);  // replica 0 still keeps its entry
  EXPECT_TRUE(directory.Register(5, 2, /*entry=*/3, /*on_gpu=*/false));  // the next registrant owns it
  EXPECT_EQ(directory.Entry(5, 2), 3);
  std::vector<uint64_t> owned;
  directory.ForEachOwned([&](uint64_t hash, int32_t owner, int32_t entry) {
    owned.push_back(hash * 1000 + owner * 100 + entry);
  });
  EXPECT_EQ(owned, std::vector<uint64_t>{5203});  // block 5, owner 2, entry 3
  EXPECT_FALSE(directory.Unregister(5, 0));  // not the owner's: the caller's own map held it
  EXPECT_TRUE(directory.Unregister(5, 2));
  EXPECT_EQ(directory.num_blocks(), 0);
}

// Against a brute force over each replica's own set (and the first-registrant owner rule), with random
// registrations, GPU adds and removals, and requests.
TEST(GpuBlockDirectoryTest, MatchesPerReplicaProbing) {
  constexpr int32_t kReplicas = 7;
  GpuBlockDirectory directory(kReplicas);
  std::vector<std::set<uint64_t>> held(kReplicas);        // on the GPU
  std::vector<std::set<uint64_t>> registered(kReplicas);  // with an entry (entry = hash * 10 + replica)
  std::vector<int32_t> owner(12, -1);
  std::mt19937_64 rng(11);
  for (int step = 0; step < 20000; ++step) {
    const int32_t r = static_cast<int32_t>(rng() % kReplicas);
    const uint64_t h = rng() % 12;
    const int32_t entry = static_cast<int32_t>(h * 10 + r);
    if (held[r].count(h) != 0) {
      directory.Remove(h, r);
      held[r].erase(h);
    } else if (registered[r].count(h) != 0) {
      if (rng() % 2 == 0) {
        directory.Add(h, r);
        held[r].insert(h);
      } else {
        ASSERT_EQ(directory.Unregister(h, r), owner[h] == r) << "step " << step;
        if (owner[h] == r) owner[h] = -1;
        registered[r].erase(h);
      }
    } else {
      const bool on_gpu = rng() % 2 == 0;
      ASSERT_EQ(directory.Register(h, r, entry, on_gpu), owner[h] < 0) << "step " << step;
      if (owner[h] < 0) owner[h] = r;
      registered[r].insert(h);
      if (on_gpu) held[r].insert(h);
    }
    for (int32_t q = 0; q < kReplicas; ++q) {
      const int32_t expected = registered[q].count(h) == 0 ? GpuBlockDirectory::kNoEntry
                               : owner[h] == q            ? static_cast<int32_t>(h * 10 + q)
                                                          : GpuBlockDirectory::kElsewhere;
      ASSERT_EQ(directory.Entry(h, q), expected) << "step " << step << " replica " << q;
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
