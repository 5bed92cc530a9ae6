#include "sim/serving/request_kv.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

Request Prompt(int64_t input_tokens, std::vector<uint64_t> hashes) {
  Request r;
  r.request_id = 1;
  r.input_tokens = input_tokens;
  r.block_tokens = 16;
  r.block_hashes = std::move(hashes);
  return r;
}

TEST(RequestKvTest, DefaultIsTheIdentity) {
  const RequestKv kv;
  for (int64_t c : {1, 40, 41, 1000}) {
    EXPECT_EQ(ResidentKvTokens(kv, 40, c), c);
    EXPECT_EQ(ReadKvTokens(kv, 40, c), c);
    EXPECT_EQ(GrowKvTokens(kv, 40, c), c);
  }
  EXPECT_EQ(KeptPromptTokens(kv, 40), 40);
}

TEST(RequestKvTest, EvictionBudgetHoldsTheBudget) {
  RequestKv h2o;
  h2o.prompt_keep_tokens = h2o.hold_cap_tokens = 40;
  // Prompt of 100: 40 kept, generated tokens evict, so 40 resident and read, no generated block.
  EXPECT_EQ(KeptPromptTokens(h2o, 100), 40);
  EXPECT_EQ(ResidentKvTokens(h2o, 100, 100), 40);
  EXPECT_EQ(ResidentKvTokens(h2o, 100, 150), 40);
  EXPECT_EQ(ReadKvTokens(h2o, 100, 150), 40);
  EXPECT_EQ(GrowKvTokens(h2o, 100, 150), 100);
  // Prompt of 30 under a budget of 40: grows to 40 (10 generated tokens), then stays.
  EXPECT_EQ(ResidentKvTokens(h2o, 30, 35), 35);
  EXPECT_EQ(ResidentKvTokens(h2o, 30, 60), 40);
  EXPECT_EQ(GrowKvTokens(h2o, 30, 35), 35);
  EXPECT_EQ(GrowKvTokens(h2o, 30, 60), 40);
}

TEST(RequestKvTest, RocketKvKeepsFourTimesTheBudgetAndReadsTheBudget) {
  RequestKv rocket;
  rocket.prompt_keep_tokens = 400;
  rocket.read_cap_tokens = 100;
  // Prompt of 1000: 400 kept, 10 generated on top; reads 100.
  EXPECT_EQ(ResidentKvTokens(rocket, 1000, 1010), 410);
  EXPECT_EQ(ReadKvTokens(rocket, 1000, 1010), 100);
  EXPECT_EQ(GrowKvTokens(rocket, 1000, 1010), 1010);
  // Prompt of 50: all kept, reads 50 + generated up to 100.
  EXPECT_EQ(ReadKvTokens(rocket, 50, 60), 60);
  EXPECT_EQ(ReadKvTokens(rocket, 50, 200), 100);
}

TEST(RequestKvTest, RegroupMakesBlocksOfWholeTraceBlocks) {
  // 70 tokens in blocks of 16: 16, 16, 16, 16, 6 -> pairs: 32, 32, 6, named by their last block's hash.
  Request r = Prompt(70, {11, 12, 13, 14, 15});
  RegroupBlocks(2, 0, 16, &r);
  EXPECT_EQ(r.block_hashes, (std::vector<uint64_t>{12, 14, 15}));
  EXPECT_EQ(r.block_token_counts, (std::vector<int32_t>{32, 32, 6}));
  EXPECT_TRUE(CheckBlockTokenCounts(r).ok());
  // Variable blocks add their own counts.
  Request v = Prompt(10, {1, 2, 3});
  v.block_token_counts = {5, 2, 3};
  RegroupBlocks(4, 0, 16, &v);
  EXPECT_EQ(v.block_hashes, (std::vector<uint64_t>{3}));
  EXPECT_EQ(v.block_token_counts, (std::vector<int32_t>{10}));
}

TEST(RequestKvTest, SaltSeparatesFormatsAndKeepsEqualPrefixesEqual) {
  Request a = Prompt(48, {1, 2, 3}), b = Prompt(48, {1, 2, 9}), c = Prompt(48, {1, 2, 3});
  RegroupBlocks(1, 77, 16, &a);
  RegroupBlocks(1, 77, 16, &b);
  RegroupBlocks(1, 78, 16, &c);
  EXPECT_TRUE(a.block_token_counts.empty());  // still uniform blocks
  EXPECT_EQ(a.block_hashes[0], b.block_hashes[0]);
  EXPECT_EQ(a.block_hashes[1], b.block_hashes[1]);
  EXPECT_NE(a.block_hashes[2], b.block_hashes[2]);
  for (int k = 0; k < 3; ++k) {
    EXPECT_NE(a.block_hashes[k], c.block_hashes[k]);
    EXPECT_NE(a.block_hashes[k], uint64_t(k + 1));
  }
}

}  // namespace
}  // namespace kvsim
