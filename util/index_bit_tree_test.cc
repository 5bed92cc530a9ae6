#include "util/index_bit_tree.h"

#include <cstdint>
#include <iterator>
#include <random>
#include <set>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

TEST(IndexBitTreeTest, HandComputedCase) {
  IndexBitTree set;
  EXPECT_TRUE(set.empty());
  EXPECT_EQ(set.Max(), -1);
  EXPECT_EQ(set.Prev(10), -1);
  EXPECT_TRUE(set.Insert(5));
  EXPECT_TRUE(set.Insert(700));
  EXPECT_TRUE(set.Insert(64));
  EXPECT_FALSE(set.Insert(64));
  EXPECT_EQ(set.size(), 3);
  EXPECT_EQ(set.Max(), 700);
  EXPECT_EQ(set.Prev(700), 64);
  EXPECT_EQ(set.Prev(64), 5);
  EXPECT_EQ(set.Prev(5), -1);
  EXPECT_EQ(set.Prev(1'000'000), 700);  // beyond the tree's range
  EXPECT_TRUE(set.Erase(700));
  EXPECT_FALSE(set.Erase(700));
  EXPECT_FALSE(set.Erase(123456));
  EXPECT_EQ(set.Max(), 64);
  EXPECT_FALSE(set.Contains(700));
  EXPECT_TRUE(set.Contains(5));
}

// Random inserts and erases over indices up to 2^20 (four levels), checked against std::set after
// every operation: Max, Contains, and Prev of a random index.
TEST(IndexBitTreeTest, MatchesStdSetUnderRandomOperations) {
  for (int64_t range : {int64_t{70}, int64_t{5000}, int64_t{1} << 20}) {
    SCOPED_TRACE(range);
    std::mt19937_64 rng(range);
    std::uniform_int_distribution<int64_t> index(0, range - 1);
    IndexBitTree tree;
    std::set<int64_t> reference;
    for (int op = 0; op < 20000; ++op) {
      const int64_t i = index(rng);
      if (rng() % 3 == 0) {
        EXPECT_EQ(tree.Erase(i), reference.erase(i) == 1);
      } else {
        EXPECT_EQ(tree.Insert(i), reference.insert(i).second);
      }
      ASSERT_EQ(tree.size(), static_cast<int64_t>(reference.size()));
      ASSERT_EQ(tree.Max(), reference.empty() ? -1 : *reference.rbegin());
      const int64_t probe = index(rng);
      ASSERT_EQ(tree.Contains(probe), reference.count(probe) == 1);
      auto it = reference.lower_bound(probe);
      ASSERT_EQ(tree.Prev(probe), it == reference.begin() ? -1 : *std::prev(it)) << "probe " << probe;
    }
    // Walk down from the top: every element, in descending order.
    std::vector<int64_t> walked;
    for (int64_t i = tree.Max(); i >= 0; i = tree.Prev(i)) walked.push_back(i);
    EXPECT_EQ(walked, std::vector<int64_t>(reference.rbegin(), reference.rend()));
  }
}

}  // namespace
}  // namespace kvsim
