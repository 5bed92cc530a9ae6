#include "util/exact_distinct.h"

#include <cstdint>
#include <random>
#include <set>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

TEST(ExactDistinctCounterTest, EqualsASetWhateverTheSetSize) {
  // Values repeat within and across the set's windows (a small range), so a value is spilled in several
  // runs and must still count once.
  std::mt19937_64 rng(7);
  std::vector<uint64_t> values;
  for (int i = 0; i < 20000; ++i) values.push_back(rng() % 3000 * 0x9E3779B97F4A7C15ULL);
  values.push_back(0);  // zero and the largest value are values like any other
  values.push_back(~uint64_t{0});
  const std::set<uint64_t> reference(values.begin(), values.end());
  for (int64_t set_values : {1, 7, 1000, 1 << 20}) {
    ExactDistinctCounter counter(set_values);
    for (uint64_t v : values) counter.Add(v);
    absl::StatusOr<int64_t> count = counter.Count();
    ASSERT_TRUE(count.ok()) << count.status();
    EXPECT_EQ(*count, static_cast<int64_t>(reference.size())) << "set of " << set_values;
    // Counting again, after more values, counts those too.
    counter.Add(12345);
    EXPECT_EQ(*counter.Count(), static_cast<int64_t>(reference.size() + (reference.count(12345) ? 0 : 1)));
  }
  EXPECT_EQ(*ExactDistinctCounter().Count(), 0);
}

}  // namespace
}  // namespace kvsim
