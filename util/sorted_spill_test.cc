#include "util/sorted_spill.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace kvsim {
namespace {

std::vector<double> Visited(SortedSpill* spill) {
  std::vector<double> out;
  const absl::Status status = spill->Visit([&out](double v) { out.push_back(v); });
  EXPECT_TRUE(status.ok()) << status;
  return out;
}

// Every run size, from one value per run to all in memory, gives std::sort's sequence (the brute-force
// reference), duplicates and negative values included.
TEST(SortedSpillTest, VisitsTheSortedSequenceForEveryRunSize) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> small(-50, 50);
  std::lognormal_distribution<double> wide(0, 3);
  for (int64_t n : {0, 1, 2, 17, 1000, 20000}) {
    std::vector<double> values;
    for (int64_t i = 0; i < n; ++i) values.push_back(i % 3 == 0 ? small(rng) : wide(rng) - 1);
    std::vector<double> reference = values;
    std::sort(reference.begin(), reference.end());
    for (int64_t run : {1, 2, 7, 1000, 8192, 8193, 100000}) {
      SortedSpill spill(run);
      for (double v : values) spill.Add(v);
      EXPECT_EQ(spill.size(), n);
      EXPECT_EQ(spill.spilled_runs(), n / run) << "n " << n << " run " << run;
      EXPECT_EQ(Visited(&spill), reference) << "n " << n << " run " << run;
    }
  }
}

// Runs longer than the read buffer are read back in several pieces; a second Visit after more values
// sees all of them.
TEST(SortedSpillTest, LongRunsAndRepeatedVisits) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0, 1);
  const int64_t run = 3 * SortedSpill::kReadValues + 5;
  SortedSpill spill(run);
  std::vector<double> reference;
  for (int64_t i = 0; i < 2 * run + 100; ++i) {
    reference.push_back(u(rng));
    spill.Add(reference.back());
  }
  std::sort(reference.begin(), reference.end());
  EXPECT_EQ(spill.spilled_runs(), 2);
  EXPECT_EQ(Visited(&spill), reference);
  for (int64_t i = 0; i < run; ++i) {
    reference.push_back(u(rng) - 0.5);
    spill.Add(reference.back());
  }
  std::sort(reference.begin(), reference.end());
  EXPECT_EQ(spill.spilled_runs(), 3);
  EXPECT_EQ(Visited(&spill), reference);
}

// More runs than kMergeValues / kReadValues: each is read in smaller pieces (the buffers together stay
// within kMergeValues), several pieces per run, the sequence unchanged.
TEST(SortedSpillTest, ManyRunsReadInSmallerPieces) {
  std::mt19937_64 rng(12);
  std::uniform_real_distribution<double> u(-1, 1);
  const int64_t runs = 2 * SortedSpill::kMergeValues / SortedSpill::kReadValues;  // 256
  const int64_t run = 3 * (SortedSpill::kMergeValues / runs) + 7;                // > 3 pieces each
  SortedSpill spill(run);
  std::vector<double> reference;
  for (int64_t i = 0; i < runs * run + 11; ++i) {
    reference.push_back(u(rng));
    spill.Add(reference.back());
  }
  std::sort(reference.begin(), reference.end());
  EXPECT_EQ(spill.spilled_runs(), runs);
  EXPECT_EQ(Visited(&spill), reference);
}

// Records: a struct ordered by (key, index), many equal keys, visited in std::sort's order for every run
// size; held() never passes the run.
struct KeyIndex {
  int32_t key;
  int32_t index;
  bool operator<(const KeyIndex& o) const { return key != o.key ? key < o.key : index < o.index; }
  bool operator==(const KeyIndex& o) const { return key == o.key && index == o.index; }
};

TEST(SortedRecordSpillTest, VisitsRecordsInOrderForEveryRunSize) {
  std::mt19937_64 rng(5);
  std::vector<KeyIndex> records;
  for (int32_t i = 0; i < 5000; ++i) records.push_back(KeyIndex{static_cast<int32_t>(rng() % 40) - 20, i});
  std::vector<KeyIndex> reference = records;
  std::sort(reference.begin(), reference.end());
  for (int64_t run : {int64_t{1}, int64_t{3}, int64_t{64}, int64_t{4999}, int64_t{1} << 20}) {
    SortedRecordSpill<KeyIndex> spill(run);
    int64_t most_held = 0;
    for (const KeyIndex& r : records) {
      spill.Add(r);
      most_held = std::max(most_held, spill.held());
    }
    EXPECT_LT(most_held, std::max<int64_t>(run, 2)) << run;
    std::vector<KeyIndex> visited;
    ASSERT_TRUE(spill.Visit([&visited](const KeyIndex& r) { visited.push_back(r); }).ok());
    EXPECT_EQ(visited, reference) << "run " << run;
  }
}

}  // namespace
}  // namespace kvsim
