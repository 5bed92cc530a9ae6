#include "kernels/decode_plan.h"

#include <map>
#include <random>
#include <set>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

// Every (page, slot) of every segment is covered by exactly one item of its request, in order.
TEST(DecodePlanTest, ItemsCoverEachSegmentTokenExactlyOnce) {
  std::mt19937_64 rng(21);
  for (int trial = 0; trial < 30; ++trial) {
    const int page_size = trial % 2 ? 16 : 64;
    SegmentTable table;
    std::uniform_int_distribution<int> tokens(0, 3000);
    int next_page = 0;
    for (int r = 0; r < 1 + trial % 7; ++r) {
      std::vector<SegmentTable::SegmentSpec> specs(1 + trial % 5);
      for (auto& spec : specs) {
        spec.num_tokens = tokens(rng) * (trial % 3 ? 1 : 0);  // some tables have only empty segments
        for (int i = 0; i < (spec.num_tokens + page_size - 1) / page_size; ++i) spec.pages.push_back(next_page++);
      }
      table.AddRequest(specs);
    }
    const DecodePlan plan = PlanDecode(table, page_size, 8, 132 * 2);
    ASSERT_EQ(plan.item_begin.size(), static_cast<size_t>(table.num_requests() + 1));
    EXPECT_EQ(plan.chunk_tokens % page_size, 0);
    for (int r = 0; r < table.num_requests(); ++r) {
      // Expected (page, slot) multiset of request r, from its segments token by token.
      std::multiset<std::pair<int, int>> expected, got;
      for (int s = table.segment_begin[r]; s < table.segment_begin[r + 1]; ++s) {
        for (int t = 0; t < table.segments[s].num_tokens; ++t) {
          expected.insert({table.page_table[table.segments[s].page_table_offset + t / page_size], t % page_size});
        }
      }
      for (int i = plan.item_begin[r]; i < plan.item_begin[r + 1]; ++i) {
        const DecodeWorkItem& item = plan.items[i];
        EXPECT_EQ(item.request, r);
        EXPECT_GE(item.num_tokens, 1);
        EXPECT_LE(item.num_tokens, plan.chunk_tokens);
        for (int t = 0; t < item.num_tokens; ++t) {
          got.insert({table.page_table[item.page_table_offset + t / page_size], t % page_size});
        }
      }
      EXPECT_EQ(got, expected) << "trial " << trial << " request " << r;
    }
  }
}

// 2 requests of 8192 tokens in one segment each, 8 KV heads: 16 CTAs unsplit. Asking for 264 CTAs halves
// the chunk from 8192 until 2 x (8192 / chunk) x 8 >= 264: chunk 512 gives 256 < 264, chunk 256 gives 512.
TEST(DecodePlanTest, SplitsUntilTheGpuIsFull) {
  SegmentTable table;
  std::vector<int32_t> pages(512);
  for (int i = 0; i < 512; ++i) pages[i] = i;
  table.AddRequest({{pages, 8192}});
  table.AddRequest({{pages, 8192}});
  DecodePlan plan = PlanDecode(table, 16, 8, 264);
  EXPECT_EQ(plan.chunk_tokens, 256);
  EXPECT_EQ(plan.items.size(), 64u);
  EXPECT_FALSE(plan.direct);
  EXPECT_EQ(plan.items[1].page_table_offset, 16);  // the second chunk starts 256 / 16 pages in
  // Already full: one item per request, written directly.
  plan = PlanDecode(table, 16, 8, 16);
  EXPECT_EQ(plan.chunk_tokens, 8192);
  EXPECT_TRUE(plan.direct);
  // Never below 256 tokens even when the GPU cannot be filled.
  plan = PlanDecode(table, 16, 8, 1 << 20);
  EXPECT_EQ(plan.chunk_tokens, 256);
}

TEST(DecodePlanTest, EmptyRequestsHaveNoItems) {
  SegmentTable table;
  table.AddRequest({{{}, 0}});
  table.AddRequest({{{0}, 5}});
  const DecodePlan plan = PlanDecode(table, 16, 8, 1);
  ASSERT_EQ(plan.items.size(), 1u);
  EXPECT_EQ(plan.item_begin, (std::vector<int32_t>{0, 0, 1}));
  EXPECT_FALSE(plan.direct);
}

}  // namespace
}  // namespace kvsim
