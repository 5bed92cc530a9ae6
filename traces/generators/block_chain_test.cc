#include "traces/generators/block_chain.h"

#include <cstdint>
#include <unordered_set>
#include <vector>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

std::vector<uint64_t> Ids(const BlockChain& chain) {
  std::vector<uint64_t> ids;
  chain.BlockIds(&ids);
  return ids;
}

constexpr uint64_t kSystem = 1001, kUser1 = 2001, kUser2 = 2002, kResponse = 3001;

// 16-token blocks. A: 40 system + 20 user tokens = 60 tokens = blocks [0,16) [16,32) [32,48) [48,60).
// B: the same system prompt + another 20-token message. Blocks 0 and 1 hold only system tokens (equal);
// block 2 holds 8 system + 8 user tokens (different users, so different); block 3 too.
TEST(BlockChainTest, SharedPrefixGivesEqualIdsOnlyForBlocksInsideIt) {
  BlockChain a(16), b(16);
  a.Append(kSystem, 40);
  a.Append(kUser1, 20);
  b.Append(kSystem, 40);
  b.Append(kUser2, 20);
  const std::vector<uint64_t> ia = Ids(a), ib = Ids(b);
  ASSERT_EQ(ia.size(), 4u);  // ceil(60 / 16)
  ASSERT_EQ(ib.size(), 4u);
  EXPECT_EQ(a.num_tokens(), 60);
  EXPECT_EQ(a.num_full_blocks(), 3);
  EXPECT_EQ(ia[0], ib[0]);
  EXPECT_EQ(ia[1], ib[1]);
  EXPECT_NE(ia[2], ib[2]);
  EXPECT_NE(ia[3], ib[3]);
}

// A 20-token prompt has a full block and a 4-token partial block. After appending the response (10) and
// the next message (20), the prompt has 50 tokens: block 1 now holds 16 tokens, not the same content as
// the 4-token partial block, so its id changes; block 0 keeps its id.
TEST(BlockChainTest, PartialBlockIsNotSharedWithTheGrownPrompt) {
  BlockChain chain(16);
  chain.Append(kUser1, 20);
  const std::vector<uint64_t> turn1 = Ids(chain);
  chain.Append(kResponse, 10);
  chain.Append(kUser2, 20);
  const std::vector<uint64_t> turn2 = Ids(chain);
  ASSERT_EQ(turn1.size(), 2u);
  ASSERT_EQ(turn2.size(), 4u);  // ceil(50 / 16)
  EXPECT_EQ(turn1[0], turn2[0]);
  EXPECT_NE(turn1[1], turn2[1]);
}

TEST(BlockChainTest, IdenticalPromptsIncludingThePartialBlockAreEqual) {
  BlockChain a(16), b(16);
  a.Append(kSystem, 20);
  b.Append(kSystem, 20);
  EXPECT_EQ(Ids(a), Ids(b));
  // Same content but one token shorter: the full block is shared, the partial one is not.
  BlockChain c(16);
  c.Append(kSystem, 19);
  EXPECT_EQ(Ids(c)[0], Ids(a)[0]);
  EXPECT_NE(Ids(c)[1], Ids(a)[1]);
}

TEST(BlockChainTest, ExactMultipleHasNoPartialBlockAndEmptyHasNone) {
  BlockChain chain(16);
  EXPECT_TRUE(Ids(chain).empty());
  chain.Append(kUser1, 0);
  EXPECT_TRUE(Ids(chain).empty());
  chain.Append(kUser1, 32);
  EXPECT_EQ(Ids(chain).size(), 2u);
  EXPECT_EQ(chain.num_full_blocks(), 2);
  chain.Clear();
  EXPECT_EQ(chain.num_tokens(), 0);
  EXPECT_TRUE(Ids(chain).empty());
}

// Equal token content at the same block position but a different prefix before it: different ids
// (prefix chaining), e.g. two 16-token blocks of the same segment offset after different first blocks.
TEST(BlockChainTest, IdsDependOnThePrefix) {
  BlockChain a(16), b(16);
  a.Append(kUser1, 16);
  a.Append(kSystem, 16);
  b.Append(kUser2, 16);
  b.Append(kSystem, 16);
  EXPECT_NE(Ids(a)[1], Ids(b)[1]);
}

TEST(BlockChainTest, DistinctSegmentsGiveDistinctIds) {
  std::unordered_set<uint64_t> seen;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    BlockChain chain(16);
    chain.Append(static_cast<uint64_t>(i), 48);
    for (uint64_t id : Ids(chain)) seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 3u * n);
}

}  // namespace
}  // namespace kvsim
