#include "policies/block_lists.h"

#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

// Every list of `lists`, front to back, as blocks.
std::vector<std::vector<BlockId>> Contents(const BlockLists& lists, int num_lists) {
  std::vector<std::vector<BlockId>> out(num_lists);
  for (int l = 0; l < num_lists; ++l) {
    for (int32_t s = lists.Front(l); s != kNoSlot; s = lists.Next(s)) out[l].push_back(lists.Block(s));
  }
  return out;
}

// The two index layouts (hash map; dense ids that are their own slots, with fewer or more ids than the
// reserved blocks) hold the same lists after the same random pushes, moves and erases over two lists.
TEST(BlockListsTest, DenseAndIdentitySlotsKeepTheSameListsAsTheHashIndex) {
  constexpr int64_t kIds = 64;
  BlockLists hashed(2), dense(2), identity(2), external(2);
  hashed.Reserve(kIds);
  dense.Reserve(kIds / 2);  // more ids than reserved blocks
  dense.UseDenseIds(kIds);
  identity.Reserve(kIds);
  identity.UseDenseIds(kIds);
  // A cache's own 32-byte records with the slots inside them (EvictionPolicy::SetDenseIdStorage): the
  // lists never touch the record's other bytes, and a block's slot zeroed again by the cache while the
  // block is in no list changes nothing.
  struct alignas(32) Record {
    uint64_t before;
    uint64_t after;
    PolicySlot slot;
  };
  std::vector<Record> records(kIds);
  for (int64_t b = 0; b < kIds; ++b) records[b] = Record{~uint64_t{0} - b, uint64_t{0x5a5a} + b, PolicySlot{}};
  external.UseDenseIds(kIds, &records[0].slot, sizeof(Record));
  BlockLists* all[4] = {&hashed, &dense, &identity, &external};
  std::mt19937_64 rng(11);
  for (int step = 0; step < 20000; ++step) {
    const BlockId block = rng() % kIds;
    const int list = static_cast<int>(rng() % 2);
    const int op = static_cast<int>(rng() % 4);
    const bool present = hashed.Contains(block);
    if (!present && op == 3) records[block].slot = PolicySlot{};
    for (BlockLists* lists : all) {
      ASSERT_EQ(lists->Contains(block), present) << "step " << step;
      if (!present) {
        if (op % 2 == 0) {
          lists->PushFront(list, block);
        } else {
          lists->PushBack(list, block);
        }
      } else if (op == 0) {
        lists->Erase(lists->Find(block));
      } else if (op == 1) {
        lists->MoveToFront(lists->Find(block), list);
      } else if (op == 2) {
        lists->MoveToBack(lists->Find(block), list);
      } else {
        ++lists->Mark(lists->Find(block));
      }
    }
    ASSERT_EQ(Contents(dense, 2), Contents(hashed, 2)) << "step " << step;
    ASSERT_EQ(Contents(identity, 2), Contents(hashed, 2)) << "step " << step;
    ASSERT_EQ(Contents(external, 2), Contents(hashed, 2)) << "step " << step;
    for (int l = 0; l < 2; ++l) {
      ASSERT_EQ(external.Size(l), hashed.Size(l));
      ASSERT_EQ(identity.Size(l), hashed.Size(l));
      auto odd = [](BlockId b) { return b % 2 == 1; };
      const int32_t h = hashed.LastMatching(l, odd), i = identity.LastMatching(l, odd);
      ASSERT_EQ(h == kNoSlot, i == kNoSlot);
      if (h != kNoSlot) {
        ASSERT_EQ(hashed.Block(h), identity.Block(i));
        ASSERT_EQ(hashed.Mark(h), identity.Mark(i));
        ASSERT_EQ(hashed.Mark(h), external.Mark(i));
      }
    }
  }
  for (int64_t b = 0; b < kIds; ++b) {
    EXPECT_EQ(records[b].before, ~uint64_t{0} - b) << "block " << b;
    EXPECT_EQ(records[b].after, uint64_t{0x5a5a} + b) << "block " << b;
  }
}

}  // namespace
}  // namespace kvsim
