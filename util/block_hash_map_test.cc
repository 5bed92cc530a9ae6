#include "util/block_hash_map.h"

#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

using Index = BlockHashMap<int32_t, -1>;

// The map's whole contents, through ForEach.
std::map<uint64_t, int32_t> Contents(const Index& index) {
  std::map<uint64_t, int32_t> out;
  index.ForEach([&](uint64_t key, int32_t value) { EXPECT_TRUE(out.emplace(key, value).second) << key; });
  return out;
}

TEST(BlockHashMapTest, HandWorkedOperations) {
  Index index;
  EXPECT_TRUE(index.empty());
  EXPECT_EQ(index.Find(5), nullptr);
  auto [value, inserted] = index.FindOrInsert(5, 50);
  EXPECT_TRUE(inserted);
  EXPECT_EQ(*value, 50);
  auto [again, inserted_again] = index.FindOrInsert(5, 51);  // present: the stored value is kept
  EXPECT_FALSE(inserted_again);
  EXPECT_EQ(*again, 50);
  *again = 52;
  ASSERT_NE(index.Find(5), nullptr);
  EXPECT_EQ(*index.Find(5), 52);
  EXPECT_TRUE(index.FindOrInsert(0, 0).second);  // key 0 and value 0 are ordinary
  EXPECT_EQ(index.size(), 2);
  EXPECT_FALSE(index.Erase(6));
  EXPECT_TRUE(index.Erase(5));
  EXPECT_FALSE(index.Contains(5));
  EXPECT_TRUE(index.Contains(0));
  EXPECT_EQ(index.size(), 1);
}

// Random inserts, lookups and erases against std::map, on key sets that make long probe runs (few
// distinct keys, so runs wrap and erases shift entries back across the array's end) and on wide keys.
void CheckAgainstMap(uint64_t key_range, int operations, uint32_t seed) {
  std::mt19937_64 rng(seed);
  Index index;
  std::map<uint64_t, int32_t> reference;
  for (int i = 0; i < operations; ++i) {
    const uint64_t key = key_range == 0 ? rng() : rng() % key_range;
    const int op = static_cast<int>(rng() % 3);
    if (op == 0) {
      const int32_t value = static_cast<int32_t>(rng() % 1000);
      auto [stored, inserted] = index.FindOrInsert(key, value);
      auto [it, ref_inserted] = reference.emplace(key, value);
      ASSERT_EQ(inserted, ref_inserted) << "operation " << i;
      ASSERT_EQ(*stored, it->second) << "operation " << i;
    } else if (op == 1) {
      ASSERT_EQ(index.Erase(key), reference.erase(key) == 1) << "operation " << i;
    } else {
      const int32_t* found = index.Find(key);
      auto it = reference.find(key);
      ASSERT_EQ(found != nullptr, it != reference.end()) << "operation " << i;
      if (found != nullptr) {
        ASSERT_EQ(*found, it->second);
      }
    }
    ASSERT_EQ(index.size(), static_cast<int64_t>(reference.size()));
    if (i % 1000 == 0) {  // every stored key is still reachable, none lost or duplicated
      ASSERT_EQ(Contents(index), reference) << "operation " << i;
      for (const auto& [k, v] : reference) ASSERT_NE(index.Find(k), nullptr) << k;
    }
  }
  EXPECT_EQ(Contents(index), reference);
}

TEST(BlockHashMapTest, RandomOperationsMatchMapOnFewKeys) { CheckAgainstMap(40, 20000, 1); }
TEST(BlockHashMapTest, RandomOperationsMatchMapOnSequentialIds) { CheckAgainstMap(5000, 40000, 2); }
TEST(BlockHashMapTest, RandomOperationsMatchMapOnWideKeys) { CheckAgainstMap(0, 20000, 3); }

TEST(BlockHashMapTest, ChurnAtAFixedSizeKeepsEveryKey) {
  // A sliding window of live keys, as a full cache evicts and inserts: the size stays put and every
  // live key is found after many shifts.
  Index index;
  constexpr uint64_t kWindow = 3000;
  for (uint64_t k = 0; k < 200000; ++k) {
    ASSERT_TRUE(index.FindOrInsert(k * 0x9e3779b97f4a7c15ULL, static_cast<int32_t>(k % 1000)).second);
    if (k >= kWindow) {
      ASSERT_TRUE(index.Erase((k - kWindow) * 0x9e3779b97f4a7c15ULL));
    }
  }
  EXPECT_EQ(index.size(), static_cast<int64_t>(kWindow));
  for (uint64_t k = 200000 - kWindow; k < 200000; ++k) {
    const int32_t* found = index.Find(k * 0x9e3779b97f4a7c15ULL);
    ASSERT_NE(found, nullptr) << k;
    EXPECT_EQ(*found, static_cast<int32_t>(k % 1000));
  }
}

TEST(BlockHashMapTest, StoringTheEmptyValueDies) {
  Index index;
  EXPECT_DEATH(index.FindOrInsert(1, -1), "empty value");
}

}  // namespace
}  // namespace kvsim
