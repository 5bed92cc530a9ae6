#include "util/spilled_id_map.h"

#include <cstdint>
#include <random>
#include <unordered_map>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

struct Pair {
  int32_t turns;
  int64_t last;
};

TEST(SpilledIdMapTest, FindsTheLatestSetAsAHashMapDoes) {
  // Sets and finds interleaved over a small id range (ids are set again after they spilled, so the newest
  // run must win) plus the extreme ids; every Find is checked against an unbounded map.
  for (int64_t memory_entries : {16, 250, 1000, 1 << 20}) {  // 1000: runs of 4 index blocks
    std::mt19937_64 rng(11);
    SpilledIdMap<Pair> map(memory_entries);
    std::unordered_map<uint64_t, Pair> reference;
    for (int i = 0; i < 6000; ++i) {
      uint64_t id = rng() % 2000 * 0x9E3779B97F4A7C15ULL;
      if (i % 97 == 0) id = (i / 97) % 2 == 0 ? 0 : ~uint64_t{0};
      if (rng() % 2 == 0) {
        const Pair value{static_cast<int32_t>(i), static_cast<int64_t>(rng())};
        ASSERT_TRUE(map.Set(id, value).ok());
        reference[id] = value;
      } else {
        Pair found{};
        absl::StatusOr<bool> hit = map.Find(id, &found);
        ASSERT_TRUE(hit.ok()) << hit.status();
        auto it = reference.find(id);
        ASSERT_EQ(*hit, it != reference.end()) << "entries " << memory_entries << " op " << i;
        if (*hit) {
          EXPECT_EQ(found.turns, it->second.turns);
          EXPECT_EQ(found.last, it->second.last);
        }
      }
    }
    EXPECT_LE(map.held_entries(), memory_entries);
    if (memory_entries <= 1000) {
      EXPECT_GT(map.spilled_runs(), 0);
    }
  }
}

}  // namespace
}  // namespace kvsim
